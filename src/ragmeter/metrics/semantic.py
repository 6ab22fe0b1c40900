"""Semantic answer metrics against the reference answer: embedding cosine and BERTScore.

- ``semantic_similarity``: cosine of the answer's and the reference's sentence vectors from the
  embedder named by ``MetricSettings.embedder`` (``minilm`` by default; see
  ``ragmeter.embedders``), clipped at 0 (seed 001's ``max(0, cosine)``): range [0, 1].
- ``bertscore_precision`` / ``bertscore_recall`` / ``bertscore_f1``: greedy matching of
  contextual word-piece vectors (Zhang et al., 2020) from the last layer of the local
  all-MiniLM-L6-v2 ONNX model, whatever the sentence embedder: precision averages, over the
  answer's word pieces, the best cosine with any reference word piece; recall the other way
  round; F1 is their harmonic mean. ``[CLS]``/``[SEP]`` are left out, every word piece weighs
  the same (no idf) and there is no baseline rescaling, so values are relative: compare systems
  on the same cases with them, do not read them as absolute quality.

An empty (blank) answer gets 0.0 on all four metrics, marked ``details={"empty_answer": True}``:
an empty answer to an answerable question carries none of the reference's meaning (bert-score
does the same for an empty candidate).

All embedding work happens in the metrics' ``prepare`` hooks, in batches, before scoring. If
the embedder cannot be built (e.g. the ``semantic`` extra is not installed) the hook raises and
the engine marks every case of these metrics ``failed`` with the message, which names the fix.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ragmeter.embedders.base import FloatArray, build_embedder
from ragmeter.metrics.base import INPUTS, Metric, MetricOutput, MetricSettings
from ragmeter.metrics.family import MetricFamily, setting
from ragmeter.models import Case, Response

NEEDS = ("reference_answer", "answerable")
BERTSCORE_EMBEDDER = "minilm"
PAIRS_PER_CHUNK = 256  # BERTScore token vectors are made and dropped chunk by chunk

Pair = tuple[str, str]  # (answer, reference)
Triple = tuple[float, float, float]
EMPTY = {"empty_answer": True}


def cosine(a: FloatArray, b: FloatArray) -> float:
    """Cosine of two L2-normalised vectors, clipped to [-1, 1] against rounding."""
    return float(np.clip(np.dot(a, b), -1.0, 1.0))


def bertscore(answer_tokens: FloatArray, reference_tokens: FloatArray) -> Triple:
    """(precision, recall, F1) by greedy cosine matching of L2-normalised token vectors.

    With no tokens on either side all three are 0.0.
    """
    if answer_tokens.shape[0] == 0 or reference_tokens.shape[0] == 0:
        return 0.0, 0.0, 0.0
    sims = np.clip(answer_tokens @ reference_tokens.T, -1.0, 1.0)
    precision = float(sims.max(axis=1).mean())
    recall = float(sims.max(axis=0).mean())
    total = precision + recall
    f1 = 2.0 * precision * recall / total if total > 0 else 0.0
    return precision, recall, f1


def _pair(case: Case, response: Response) -> Pair:
    return response.answer, case.reference_answer or ""


def _is_blank(text: str) -> bool:
    return not text.strip()


class SemanticState:
    """Per-run results of the semantic metrics, filled in batches by the prepare hooks."""

    def __init__(self, embedder_spec: str) -> None:
        self.embedder_spec = embedder_spec
        self.similarity: dict[Pair, float] = {}
        self.bertscore: dict[Pair, Triple] = {}

    @staticmethod
    def applicable(pairs: list[tuple[Case, Response]]) -> list[Pair]:
        """Distinct (answer, reference) pairs of the cases these metrics score."""
        keep = (
            _pair(case, response)
            for case, response in pairs
            if all(INPUTS[name][0](case, response) for name in NEEDS)
        )
        return list(dict.fromkeys(keep))

    def add_similarities(self, pairs: list[Pair]) -> None:
        todo = [p for p in dict.fromkeys(pairs) if p not in self.similarity]
        for pair in [p for p in todo if _is_blank(p[0])]:
            self.similarity[pair] = 0.0
        todo = [p for p in todo if not _is_blank(p[0])]
        if not todo:
            return
        embedder = build_embedder(self.embedder_spec)
        texts = list(dict.fromkeys(text for pair in todo for text in pair))
        vectors = embedder.embed(texts)
        row = {text: i for i, text in enumerate(texts)}
        for answer, reference in todo:
            # seed 001's max(0, cosine): an answer pointing away from the reference is as
            # dissimilar as one at right angles to it
            self.similarity[(answer, reference)] = max(
                0.0, cosine(vectors[row[answer]], vectors[row[reference]])
            )

    def add_bertscores(self, pairs: list[Pair]) -> None:
        todo = [p for p in dict.fromkeys(pairs) if p not in self.bertscore]
        for pair in [p for p in todo if _is_blank(p[0])]:
            self.bertscore[pair] = (0.0, 0.0, 0.0)
        todo = [p for p in todo if not _is_blank(p[0])]
        if not todo:
            return
        embedder = build_embedder(BERTSCORE_EMBEDDER)
        for start in range(0, len(todo), PAIRS_PER_CHUNK):
            chunk = todo[start : start + PAIRS_PER_CHUNK]
            texts = list(dict.fromkeys(text for pair in chunk for text in pair))
            tokens = dict(zip(texts, embedder.token_embeddings(texts), strict=True))
            for answer, reference in chunk:
                self.bertscore[(answer, reference)] = bertscore(tokens[answer], tokens[reference])

    def prepare_similarity(self, pairs: list[tuple[Case, Response]]) -> None:
        self.similarity.clear()  # an earlier batch's: scored and stored
        self.add_similarities(self.applicable(pairs))

    def prepare_bertscore(self, pairs: list[tuple[Case, Response]]) -> None:
        self.bertscore.clear()
        self.add_bertscores(self.applicable(pairs))


def _details(answer: str) -> dict[str, Any]:
    return dict(EMPTY) if _is_blank(answer) else {}


def _similarity_fn(state: SemanticState) -> Callable[[Case, Response], MetricOutput]:
    def compute(case: Case, response: Response) -> MetricOutput:
        pair = _pair(case, response)
        if pair not in state.similarity:  # scored without the prepare hook
            state.add_similarities([pair])
        return state.similarity[pair], _details(pair[0])

    return compute


def _bertscore_fn(state: SemanticState, part: int) -> Callable[[Case, Response], MetricOutput]:
    def compute(case: Case, response: Response) -> MetricOutput:
        pair = _pair(case, response)
        if pair not in state.bertscore:  # scored without the prepare hook
            state.add_bertscores([pair])
        return state.bertscore[pair][part], _details(pair[0])

    return compute


def semantic_metrics(settings: MetricSettings) -> list[Metric]:
    state = SemanticState(settings.embedder)
    # one bound-method object per hook: the engine prepares metrics sharing it once
    prepare_similarity = state.prepare_similarity
    prepare_bertscore = state.prepare_bertscore
    relative = "no idf, no baseline rescaling: relative values"
    return [
        Metric(
            "semantic_similarity",
            "semantic",
            _similarity_fn(state),
            NEEDS,
            description=(
                f"cosine of answer and reference sentence embeddings ({settings.embedder})"
            ),
            prepare=prepare_similarity,
            kind="score",
        ),
        Metric(
            "bertscore_precision",
            "semantic",
            _bertscore_fn(state, 0),
            NEEDS,
            description=f"BERTScore precision on all-MiniLM-L6-v2 token vectors ({relative})",
            prepare=prepare_bertscore,
            kind="score",
        ),
        Metric(
            "bertscore_recall",
            "semantic",
            _bertscore_fn(state, 1),
            NEEDS,
            description=f"BERTScore recall on all-MiniLM-L6-v2 token vectors ({relative})",
            prepare=prepare_bertscore,
            kind="score",
        ),
        Metric(
            "bertscore_f1",
            "semantic",
            _bertscore_fn(state, 2),
            NEEDS,
            description=f"BERTScore F1 on all-MiniLM-L6-v2 token vectors ({relative})",
            prepare=prepare_bertscore,
            kind="score",
        ),
    ]


semantic_family = MetricFamily(
    semantic_metrics,
    params=(
        setting("embedder", "the embedder: minilm, openai:MODEL or http://HOST:PORT/v1#MODEL"),
    ),
    description="embedding similarity and BERTScore of answer and reference",
)

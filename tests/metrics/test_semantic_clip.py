"""Seed 001's semantic similarity is ``max(0, cosine)``: the audit's case (answer "The",
reference "tax refund policy") has a cosine just under 0 and scores 0.0, not a negative value."""

from __future__ import annotations

from ragmeter.embedders import build_embedder
from ragmeter.metrics.base import MetricSettings, score_case
from ragmeter.metrics.semantic import cosine, semantic_metrics
from ragmeter.models import Case, CaseResult, Response


def test_a_cosine_below_zero_scores_zero() -> None:
    vectors = build_embedder("minilm").embed(["The", "tax refund policy"])
    assert cosine(vectors[0], vectors[1]) < 0  # the audit measured -0.0125
    (similarity,) = [
        m for m in semantic_metrics(MetricSettings()) if m.name == "semantic_similarity"
    ]
    case = Case(case_id="neg", question="Q?", reference_answer="tax refund policy")
    result = CaseResult(case_id="neg", status="ok", response=Response(answer="The"))
    score = score_case(similarity, case, result)
    assert score.status == "ok" and score.value == 0.0

"""trec_eval measures as run metrics (``ragmeter.metrics.ir.case_metrics``): a case is one query,
matched as the retrieval family matches it, and the values are the TREC engine's."""

from __future__ import annotations

import pytest

from ragmeter.metrics import MetricSettings, score_case
from ragmeter.metrics.ir import expand_measures, query_measures
from ragmeter.metrics.ir.case_metrics import CASE_MEASURES, trec_metrics
from ragmeter.metrics.retrieval import judge_case
from ragmeter.models import Case, CaseResult, Response


def scores(case: Case, response: Response) -> dict[str, tuple[str, float | None]]:
    result = CaseResult(case_id=case.case_id, status="ok", response=response)
    found = {}
    for metric in trec_metrics(MetricSettings()):
        score = score_case(metric, case, result)
        found[metric.name] = (score.status, score.value)
    return found


def test_incomplete_judgments() -> None:
    """Gold passages a (2), b (1) and a judged non-relevant n (0); x, y were never judged.
    bpref ignores x and y: a is above n (no penalty), b is below n (penalty n/min(1, 2))."""
    case = Case(
        case_id="c",
        question="q",
        gold_passages=[
            {"chunk_id": "a", "grade": 2},
            {"chunk_id": "b", "grade": 1},
            {"chunk_id": "n", "grade": 0},
        ],
    )
    ranked = ["x", "a", "n", "y", "b"]
    response = Response(
        retrieved=[{"rank": i, "id": c, "text": ""} for i, c in enumerate(ranked, 1)]
    )
    values = scores(case, response)
    assert values["bpref"] == ("ok", pytest.approx((1 + (1 - 1 / 1)) / 2))
    judged = judge_case(case, response)
    expected = query_measures(
        judged.ranked, judged.qrel, expand_measures(["bpref", "infAP", "ndcg", "rbp"])
    )
    names = {"bpref": "bpref", "inf_ap": "infAP", "ndcg": "ndcg", "rbp": "rbp"}
    wanted = {name: expected[label] for name, label in names.items()}
    assert {name: v for name, (_, v) in values.items()} == pytest.approx(wanted)


def test_every_case_metric_is_a_proportion_with_a_description() -> None:
    metrics = trec_metrics(MetricSettings())
    assert [m.name for m in metrics] == [name for name, _, _ in CASE_MEASURES]
    assert all(m.kind == "proportion" and m.description for m in metrics)

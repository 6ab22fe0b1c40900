"""Retrieval metrics on ragmeter cases: matching levels, anchors, multi-hop, scope, attribution."""

from __future__ import annotations

import math

import pytest

from ragmeter.metrics import MetricSettings, resolve_metrics, score_case
from ragmeter.metrics.retrieval import judge_case
from ragmeter.models import Case, CaseResult, Response


def metrics(**settings: object) -> dict[str, object]:
    return {m.name: m for m in resolve_metrics(["retrieval"], MetricSettings(**settings))}  # type: ignore[arg-type]


def value(
    name: str, case: Case, response: Response, **settings: object
) -> tuple[str, float | None]:
    metric = metrics(**settings)[name]
    score = score_case(
        metric, case, CaseResult(case_id=case.case_id, status="ok", response=response)
    )  # type: ignore[arg-type]
    return score.status, score.value


def chunk(rank: int, **fields: object) -> dict[str, object]:
    return {"rank": rank, "text": fields.pop("text", ""), **fields}


def test_graded_chunk_level_by_hand() -> None:
    case = Case(
        case_id="c",
        question="q",
        gold_passages=[
            {"chunk_id": "a", "grade": 3},
            {"chunk_id": "b", "grade": 2},
            {"chunk_id": "c", "grade": 1},
        ],
    )
    response = Response(
        retrieved=[chunk(1, id="x"), chunk(2, id="b"), chunk(3, id="a"), chunk(4, id="y")]
    )
    log = math.log2
    dcg3 = 2 / log(3) + 3 / log(4)
    idcg3 = 3 + 2 / log(3) + 1 / log(4)
    assert value("ndcg_at_3", case, response) == ("ok", pytest.approx(dcg3 / idcg3))
    assert value("f1_at_3", case, response)[1] == pytest.approx(2 * (2 / 3) * (2 / 3) / (4 / 3))
    assert value("map", case, response)[1] == pytest.approx((1 / 2 + 2 / 3) / 3)
    assert value("r_precision", case, response)[1] == pytest.approx(2 / 3)
    assert value("mrr_at_1", case, response)[1] == 0.0
    assert value("mrr", case, response)[1] == 0.5
    # exponential gain: 2^g - 1
    dcg3_exp = 3 / log(3) + 7 / log(4)
    idcg3_exp = 7 + 3 / log(3) + 1 / log(4)
    assert value("ndcg_at_3", case, response, ndcg_gain="exponential")[1] == pytest.approx(
        dcg3_exp / idcg3_exp
    )
    # relevance level 2: c (grade 1) is no longer relevant for binary measures
    assert value("recall_at_3", case, response, relevance_level=2)[1] == 1.0
    assert value("recall_at_3", case, response)[1] == pytest.approx(2 / 3)


def test_duplicate_chunk_counts_once() -> None:
    case = Case(case_id="c", question="q", gold_passages=[{"chunk_id": "a"}])
    response = Response(retrieved=[chunk(1, id="a"), chunk(2, id="a")])
    assert value("precision_at_3", case, response)[1] == pytest.approx(1 / 3)


def test_anchor_matching_normalises_headings_and_can_require_snippets() -> None:
    case = Case(
        case_id="a",
        question="q",
        gold_passages=[
            {
                "rel_path": "hr/leave.md",
                "heading_path": ["Leave ", "Vacation"],
                "grade": 3,
                "snippets": ["15  days"],
            }
        ],
    )
    response = Response(
        retrieved=[
            chunk(1, rel_path="hr/leave.md", heading_path="Leave>Sick", text="15 days"),
            chunk(
                2,
                rel_path="hr/leave.md",
                heading_path="Leave >  Vacation > Accrual",
                text="accrues monthly",
            ),
            chunk(
                3, rel_path="hr/leave.md", heading_path="Leave > Vacation", text="You get 15 days."
            ),
            chunk(4, rel_path="other.md", heading_path="Leave > Vacation", text="15 days"),
        ]
    )
    judged = judge_case(case, response)
    assert judged.level == "anchor"
    assert judged.ranked[1] == "hr/leave.md#Leave > Vacation"
    assert judged.ranked[2].startswith("~")  # the passage was already matched at rank 2
    assert value("mrr", case, response) == ("ok", 0.5)
    assert value("mrr", case, response, require_snippet=True) == ("ok", pytest.approx(1 / 3))


def test_doc_level_fallback_is_reported() -> None:
    case = Case(case_id="d", question="q", gold_passages=[{"doc_id": "d1", "grade": 2}])
    response = Response(
        retrieved=[
            chunk(1, id="1", doc_id="d0"),
            chunk(2, id="2", doc_id="d1"),
            chunk(3, id="3", doc_id="d1"),
        ]
    )
    metric = metrics()["recall_at_1"]
    score = score_case(metric, case, CaseResult(case_id="d", status="ok", response=response))  # type: ignore[arg-type]
    assert (score.value, score.details) == (0.0, {"level": "doc"})
    assert value("recall_at_3", case, response)[1] == 1.0
    assert value("precision_at_3", case, response)[1] == pytest.approx(1 / 3)


MULTI_HOP = Case(
    case_id="m",
    question="q",
    required_support_groups=[
        {"name": "policy", "passages": [{"chunk_id": "p1"}, {"chunk_id": "p2"}]},
        {"name": "memo", "passages": [{"chunk_id": "m1"}]},
    ],
)


@pytest.mark.parametrize(
    ("retrieved", "k", "any_", "all_"),
    [
        (["p2", "x", "m1"], 3, 1.0, 1.0),
        (["p2", "x", "m1"], 2, 1.0, 0.0),
        (["x", "y", "z"], 3, 0.0, 0.0),
        (["m1"], 1, 1.0, 0.0),
    ],
)
def test_recall_any_and_all_over_support_groups(
    retrieved: list[str], k: int, any_: float, all_: float
) -> None:
    response = Response(retrieved=[chunk(i + 1, id=c) for i, c in enumerate(retrieved)])
    ks = (1, 2, 3)
    assert value(f"recall_any_at_{k}", MULTI_HOP, response, ks=ks)[1] == any_
    assert value(f"recall_all_at_{k}", MULTI_HOP, response, ks=ks)[1] == all_


def test_recall_all_skips_single_hop_cases() -> None:
    case = Case(case_id="s", question="q", gold_passages=[{"chunk_id": "a"}])
    assert value("recall_all_at_5", case, Response(retrieved=[]))[0] == "skipped"


def test_scope_miss() -> None:
    case = Case(
        case_id="s",
        question="q",
        gold_passages=[
            {"chunk_id": "a", "rel_path": "hr/leave.md"},
            {"chunk_id": "b", "rel_path": "hr/pay.md"},
        ],
    )
    assert value("scope_miss_rate", case, Response(scope=["finance"]))[1] == 1.0
    assert value("scope_miss_rate", case, Response(scope=["hr/"]))[1] == 0.0
    assert value("scope_miss_rate", case, Response(scope=["hr/pay.md"]))[1] == 0.0
    assert value("scope_miss_rate", case, Response(scope=["h"]))[1] == 1.0
    assert value("scope_miss_rate", case, Response())[0] == "skipped"


def test_attribution_hit() -> None:
    case = Case(
        case_id="a", question="q", gold_passages=[{"chunk_id": "c1", "doc_id": "d1", "grade": 3}]
    )
    assert value("attribution_hit_rate", case, Response(citations=[{"chunk_id": "c1"}]))[1] == 1.0
    assert value("attribution_hit_rate", case, Response(citations=[{"doc_id": "d1"}]))[1] == 1.0
    assert value("attribution_hit_rate", case, Response(citations=[{"chunk_id": "c9"}]))[1] == 0.0
    assert value("attribution_hit_rate", case, Response(citations=[]))[1] == 0.0
    assert value("attribution_hit_rate", case, Response(answer="x"))[0] == "skipped"
    unanswerable = Case(
        case_id="u", question="q", answerable=False, gold_passages=[{"chunk_id": "c1"}]
    )
    assert value("attribution_hit_rate", unanswerable, Response(citations=[]))[0] == "skipped"

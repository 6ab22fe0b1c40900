from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.metrics import MetricSettings, resolve_metrics, score_case
from ragmeter.metrics.abstention import detect_abstention
from ragmeter.metrics.lexical import exact_match, normalize_answer, token_f1
from ragmeter.metrics.retrieval import judge_case
from ragmeter.models import Case, CaseResult, Response
from ragmeter.registry import UnknownNameError

SETTINGS = MetricSettings(ks=(1, 3, 5))
METRICS = {
    m.name: m
    for m in resolve_metrics(["retrieval", "lexical", "abstention", "performance"], SETTINGS)
}


def chunk(cid: str, doc: str, rank: int, **extra: object) -> dict[str, object]:
    return {"id": cid, "doc_id": doc, "rank": rank, "text": "", **extra}


def score(
    metric: str, case: Case, response: Response | None, **result: object
) -> tuple[object, ...]:
    outcome = CaseResult(
        case_id=case.case_id, status="ok" if response else "error", response=response, **result
    )  # type: ignore[arg-type]
    s = score_case(METRICS[metric], case, outcome)
    return s.status, s.value, s.reason


CHUNK_CASE = Case(
    case_id="c",
    question="q",
    reference_answer="The Eiffel Tower",
    gold_passages=[
        {"chunk_id": "d1#a", "grade": 3},
        {"chunk_id": "d2#b", "grade": 1},
        {"chunk_id": "d3#c", "grade": 0},
    ],
)
RANKED = Response(
    answer="the eiffel tower!",
    retrieved=[
        chunk("x#1", "x", 1),
        chunk("d2#b", "d2", 2),
        chunk("d3#c", "d3", 3),
        chunk("d1#a", "d1", 4),
    ],
)


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("recall_at_1", 0.0),
        ("recall_at_3", 0.5),
        ("recall_at_5", 1.0),
        ("precision_at_1", 0.0),
        ("precision_at_3", 1 / 3),
        ("precision_at_5", 2 / 5),
        ("hit_rate_at_1", 0.0),
        ("hit_rate_at_3", 1.0),
        ("mrr", 0.5),
        ("exact_match", 1.0),
        ("token_f1", 1.0),
    ],
)
def test_hand_computed_chunk_level_values(metric: str, expected: float) -> None:
    status, value, _ = score(metric, CHUNK_CASE, RANKED)
    assert status == "ok"
    assert value == pytest.approx(expected)


def test_doc_level_fallback_counts_each_document_once() -> None:
    case = Case(case_id="d", question="q", gold_passages=[{"doc_id": "d1"}, {"doc_id": "d2"}])
    response = Response(
        retrieved=[
            chunk("a", "d1", 1),
            chunk("b", "d1", 2),
            chunk("c", "x", 3),
            chunk("e", "d2", 4),
        ]
    )
    judged = judge_case(case, response)
    assert (judged.level, judged.ranked[1], judged.qrel) == (
        "doc",
        "~unjudged~2",
        {"d1": 1, "d2": 1},
    )
    assert [judged.ranked[0], judged.ranked[2]] == ["d1", "d2"]
    assert score("recall_at_3", case, response)[1] == 1.0
    assert score("precision_at_3", case, response)[1] == pytest.approx(2 / 3)


def test_anchor_matching_uses_rel_path_and_heading_prefix() -> None:
    case = Case(
        case_id="a",
        question="q",
        gold_passages=[{"rel_path": "hr/leave.md", "heading_path": "Leave  >Vacation"}],
    )
    response = Response(
        retrieved=[
            chunk("1", None, 1, rel_path="hr/leave.md", heading_path="Leave > Sick"),  # type: ignore[arg-type]
            chunk("2", None, 2, rel_path="hr/leave.md", heading_path="Leave > Vacation > Accrual"),  # type: ignore[arg-type]
        ]
    )
    assert score("mrr", case, response)[1] == 0.5
    assert score("recall_at_1", case, response)[1] == 0.0
    assert score("recall_at_3", case, response)[1] == 1.0


def test_skips_and_failures_are_kept_apart_from_values() -> None:
    unanswerable = Case(case_id="u", question="q", answerable=False)
    assert score("recall_at_1", unanswerable, Response(retrieved=[]))[::2] == (
        "skipped",
        "case has no gold passages",
    )
    assert score("recall_at_1", CHUNK_CASE, Response(answer="x"))[::2] == (
        "skipped",
        "target did not report retrieved chunks",
    )
    assert score("exact_match", unanswerable, Response(answer="x"))[0] == "skipped"
    status, value, reason = score("mrr", CHUNK_CASE, None, error_type="timeout")
    assert (status, value, reason) == ("failed", None, "target error: timeout")
    assert score("error_rate", CHUNK_CASE, None, error_type="timeout")[:2] == ("ok", 1.0)
    assert score("cost_per_query", CHUNK_CASE, RANKED)[0] == "skipped"


def test_empty_retrieval_scores_zero_not_skipped() -> None:
    status, value, _ = score("recall_at_5", CHUNK_CASE, Response(answer="", retrieved=[]))
    assert (status, value) == ("ok", 0.0)


def test_abstention_metrics() -> None:
    answerable = Case(case_id="a", question="q")
    unanswerable = Case(case_id="u", question="q", answerable=False)
    refusal = Response(answer="I don't have enough information to answer.")
    answer = Response(answer="It is 42.")
    assert score("unanswerable_accuracy", unanswerable, refusal)[1] == 1.0
    assert score("unanswerable_accuracy", answerable, refusal)[1] == 0.0
    assert score("abstention_accuracy", unanswerable, answer)[1] == 0.0
    assert score("abstention_false_negative_rate", unanswerable, answer)[1] == 1.0
    assert score("abstention_false_positive_rate", answerable, refusal)[1] == 1.0
    assert score("abstention_false_positive_rate", unanswerable, refusal)[0] == "skipped"
    assert detect_abstention(Response(answer="I don\u2019t know.")) == (
        True,
        "phrase: i don't know",
    )
    assert detect_abstention(Response(answer="I know", abstained=True)) == (True, "field")
    assert detect_abstention(Response(answer="")) == (True, "empty answer")
    assert detect_abstention(Response(answer="nope, sorry"), ("nope",))[0] is True


def test_latency_metric_reads_total() -> None:
    response = Response(answer="x", latency_ms={"total": 12.5, "retrieve": 3})
    assert score("latency_p50", CHUNK_CASE, response)[:2] == ("ok", 12.5)


def test_metric_bug_becomes_a_failed_score() -> None:
    from ragmeter.metrics.base import Metric

    def buggy(case: Case, response: Response) -> float:
        return {"total": 1.0}["p95"]

    metric = Metric("buggy", "performance", buggy, kind="duration")
    result = CaseResult(case_id="c1", status="ok", response=Response(answer="x"))
    scored = score_case(metric, CHUNK_CASE, result)
    assert (scored.status, scored.value) == ("failed", None)
    assert scored.reason is not None and scored.reason.startswith("KeyError")


def test_a_response_without_a_total_latency_skips_the_latency_metrics() -> None:
    replayed = Response(answer="x", latency_ms={"retrieve": 1.0})
    status, value, reason = score("latency_p95", CHUNK_CASE, replayed)
    assert (status, value) == ("skipped", None)
    assert reason is not None and "recorded no latency" in reason


def test_unknown_metric_family_suggests_a_name() -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'retrieval'"):
        resolve_metrics(["retreival"], SETTINGS)


def test_squad_normalisation_and_f1_by_hand() -> None:
    assert normalize_answer("The  Cat, sat!") == "cat sat"
    assert exact_match("An apple.", "apple") == 1.0
    # prediction "cat sat mat" vs "cat on mat": common 2, P=2/3, R=2/3
    assert token_f1("the cat sat on a mat", "cat on the mat") == pytest.approx(
        2 * 0.75 * 1.0 / 1.75
    )
    assert token_f1("cat sat mat", "cat on mat") == pytest.approx(2 / 3)
    assert token_f1("", "") == 1.0
    assert token_f1("", "x") == 0.0


words = st.lists(st.sampled_from(["a", "the", "cat", "Dog", "run", "12", "é", "ß"]), max_size=8)


@settings(deadline=None)
@given(words, words)
def test_token_f1_is_bounded_symmetric_and_one_on_identity(a: list[str], b: list[str]) -> None:
    x, y = " ".join(a), " ".join(b)
    value = token_f1(x, y)
    assert 0.0 <= value <= 1.0
    assert value == pytest.approx(token_f1(y, x))
    assert token_f1(x, x) == 1.0
    assert (exact_match(x, y) == 1.0) <= (value == 1.0)


def test_a_target_error_fails_only_the_metrics_that_apply_to_the_case() -> None:
    (f1,) = [m for m in resolve_metrics(["lexical"], MetricSettings()) if m.name == "token_f1"]
    (multi_hop,) = [
        m for m in resolve_metrics(["retrieval"], MetricSettings()) if m.name == "recall_all_at_5"
    ]
    failed = CaseResult(case_id="c", status="error", error_type="timeout")
    referenced = Case(case_id="c", question="q?", reference_answer="Paris")
    unreferenced = Case(case_id="c", question="q?")
    # the metric would have applied: the target's error is its failure (coverage drops)
    assert score_case(f1, referenced, failed).status == "failed"
    # it would not have applied: skipped for the same reason as with an answer
    skipped = score_case(f1, unreferenced, failed)
    assert (skipped.status, skipped.reason) == ("skipped", "case has no reference answer")
    assert score_case(multi_hop, referenced, failed).status == "skipped"

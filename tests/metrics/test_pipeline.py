"""Pipeline perspective (seed 003 F): every outcome rule and its precedence, the per-case
checks, the pass rate, skips when the target does not report what a rule needs, and the run's
latency budgets, all against hand-computed values."""

from __future__ import annotations

from typing import Any

import pytest

from ragmeter.metrics import MetricSettings, resolve_metrics, score_case
from ragmeter.metrics.pipeline import (
    NO_CITATIONS,
    NO_FLAGS,
    classify,
    latency_budget_summary,
    parse_budget_key,
)
from ragmeter.models import Case, CaseResult, Response

METRICS = {m.name: m for m in resolve_metrics(["pipeline"], MetricSettings())}
CITED = [{"chunk_id": "doc#1"}]
HIT = [{"id": "doc#1", "doc_id": "doc", "text": "x"}]


def reply(**fields: Any) -> Response:
    """A response as a target sends it (only the fields given are reported)."""
    return Response.from_target({"answer": "text", **fields})


def case(**labels: Any) -> Case:
    return Case(case_id="q1", question="What?", **labels)


def score(metric: str, the_case: Case, response: Response | None, **error: Any) -> tuple:
    result = CaseResult(
        case_id=the_case.case_id,
        status="ok" if response is not None else "error",
        response=response,
        **error,
    )
    found = score_case(METRICS[metric], the_case, result)
    return found.status, found.value, found.reason


# the outcome rules, one by one ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fields", "outcome"),
    [
        # success: citations >= 1 and no guardrail_blocked flag
        ({"policy_flags": [], "citations": CITED, "retrieved": HIT}, "success"),
        ({"policy_flags": ["pii_masked"], "citations": CITED * 2}, "success"),
        # blocked: guardrail_blocked in policy_flags
        ({"policy_flags": ["guardrail_blocked"], "citations": []}, "blocked"),
        ({"policy_flags": ["guardrail_blocked"]}, "blocked"),  # decided without citations
        # no_results: retrieved_count == 0, or the no_context flag
        ({"policy_flags": [], "retrieved": [], "citations": []}, "no_results"),
        ({"policy_flags": ["no_context"], "retrieved": HIT, "citations": []}, "no_results"),
        ({"policy_flags": ["no_context"]}, "no_results"),
        # uncertain: the uncertain flag, or confidence < 0.5 (or abstained: true)
        ({"policy_flags": ["uncertain"], "citations": []}, "uncertain"),
        ({"policy_flags": [], "confidence": 0.49, "citations": []}, "uncertain"),
        ({"policy_flags": [], "abstained": True, "citations": []}, "uncertain"),
        # confidence 0.5 is not below 0.5
        ({"policy_flags": [], "confidence": 0.5, "citations": CITED}, "success"),
        # none holds: other
        ({"policy_flags": [], "retrieved": HIT, "citations": []}, "other"),
        ({"policy_flags": [], "confidence": 0.9, "abstained": False, "citations": []}, "other"),
    ],
)
def test_each_outcome_rule(fields: dict[str, Any], outcome: str) -> None:
    assert classify(reply(**fields)).outcome == outcome


@pytest.mark.parametrize(
    ("fields", "outcome"),
    [
        # blocked > no_results > uncertain > success
        ({"policy_flags": ["guardrail_blocked", "no_context", "uncertain"]}, "blocked"),
        ({"policy_flags": ["guardrail_blocked"], "citations": CITED}, "blocked"),
        ({"policy_flags": ["no_context", "uncertain"], "citations": CITED}, "no_results"),
        (
            {"policy_flags": [], "retrieved": [], "confidence": 0.1, "citations": CITED},
            "no_results",
        ),
        ({"policy_flags": ["uncertain"], "citations": CITED}, "uncertain"),
        ({"policy_flags": [], "confidence": 0.2, "citations": CITED}, "uncertain"),
    ],
)
def test_precedence_when_several_rules_hold(fields: dict[str, Any], outcome: str) -> None:
    assert classify(reply(**fields)).outcome == outcome


def test_rules_and_signals_are_recorded() -> None:
    found = classify(reply(policy_flags=["uncertain"], citations=CITED, retrieved=HIT))
    assert found.rules == {
        "blocked": False,
        "no_results": False,
        "uncertain": True,
        "success": True,
    }
    assert found.signals == ["policy_flags", "retrieved", "citations"]


def test_an_undecidable_outcome_names_what_is_missing() -> None:
    no_flags = classify(reply(citations=CITED))
    assert (no_flags.outcome, no_flags.reason) == (None, NO_FLAGS)
    # flags say nothing went wrong, but success needs citations
    no_citations = classify(reply(policy_flags=[]))
    assert (no_citations.outcome, no_citations.reason) == (None, NO_CITATIONS)
    # a response built in Python reports what it was given
    built = Response(answer="x", policy_flags=[], citations=[])
    assert classify(built).outcome == "other"


# the per-case checks ----------------------------------------------------------------------------
def test_outcome_match() -> None:
    expects_success = case(expected_outcome="success")
    assert score(
        "pipeline_outcome_match", expects_success, reply(policy_flags=[], citations=CITED)
    )[:2] == ("ok", 1.0)
    status, value, _ = score(
        "pipeline_outcome_match", expects_success, reply(policy_flags=["guardrail_blocked"])
    )
    assert (status, value) == ("ok", 0.0)
    expects_blocked = case(expected_outcome="blocked")
    assert score(
        "pipeline_outcome_match", expects_blocked, reply(policy_flags=["guardrail_blocked"])
    )[:2] == ("ok", 1.0)
    # other never matches an expected outcome
    assert score("pipeline_outcome_match", expects_success, reply(policy_flags=[], citations=[]))[
        :2
    ] == ("ok", 0.0)


def test_outcome_details() -> None:
    the_case = case(expected_outcome="uncertain")
    result = CaseResult(
        case_id="q1", status="ok", response=reply(policy_flags=[], confidence=0.3, citations=[])
    )
    details = score_case(METRICS["pipeline_outcome_match"], the_case, result).details
    assert details["outcome"] == "uncertain" and details["expected"] == "uncertain"
    assert details["signals"] == ["policy_flags", "confidence", "citations"]


def test_skips_name_the_missing_label_or_report() -> None:
    assert score("pipeline_outcome_match", case(), reply(policy_flags=[])) == (
        "skipped",
        None,
        "case has no expected_outcome",
    )
    assert score("pipeline_outcome_match", case(expected_outcome="success"), reply()) == (
        "skipped",
        None,
        NO_FLAGS,
    )
    assert score(
        "pipeline_outcome_match", case(expected_outcome="success"), reply(policy_flags=[])
    ) == ("skipped", None, NO_CITATIONS)
    assert score("pipeline_required_flags_present", case(required_flags=["x"]), reply()) == (
        "skipped",
        None,
        NO_FLAGS,
    )
    assert score("pipeline_citations_ok", case(min_citations=1), reply()) == (
        "skipped",
        None,
        NO_CITATIONS,
    )
    assert score("pipeline_citations_ok", case(), reply(citations=[]))[2] == (
        "case has no min_citations"
    )


def test_required_and_forbidden_flags() -> None:
    the_case = case(required_flags=["pii_masked", "logged"], forbidden_flags=["guardrail_blocked"])
    both = reply(policy_flags=["logged", "pii_masked"])
    one = reply(policy_flags=["logged", "guardrail_blocked"])
    assert score("pipeline_required_flags_present", the_case, both)[:2] == ("ok", 1.0)
    assert score("pipeline_required_flags_present", the_case, one)[:2] == ("ok", 0.0)
    assert score("pipeline_forbidden_flags_absent", the_case, both)[:2] == ("ok", 1.0)
    assert score("pipeline_forbidden_flags_absent", the_case, one)[:2] == ("ok", 0.0)
    result = CaseResult(case_id="q1", status="ok", response=one)
    details = score_case(METRICS["pipeline_required_flags_present"], the_case, result).details
    assert details["missing"] == ["pii_masked"]


@pytest.mark.parametrize(("minimum", "count", "value"), [(1, 1, 1.0), (2, 1, 0.0), (0, 0, 1.0)])
def test_min_citations(minimum: int, count: int, value: float) -> None:
    response = reply(citations=CITED * count)
    assert score("pipeline_citations_ok", case(min_citations=minimum), response)[:2] == (
        "ok",
        value,
    )


def test_latency_budget_per_case() -> None:
    response = reply(latency_ms={"retrieve": 120.0, "generate": 900.0, "total": 1100.0})
    assert score("pipeline_latency_ok", case(latency_budget_ms={"p95": 1500}), response)[:2] == (
        "ok",
        1.0,
    )
    over = case(latency_budget_ms={"p95": 1500, "retrieve": 100})
    assert score("pipeline_latency_ok", over, response)[:2] == ("ok", 0.0)
    result = CaseResult(case_id="q1", status="ok", response=response)
    details = score_case(METRICS["pipeline_latency_ok"], over, result).details
    assert details["over_budget"] == {"retrieve": {"latency_ms": 120.0, "budget_ms": 100.0}}
    # a stage the target did not time is not a pass
    unknown = case(latency_budget_ms={"rerank.p95": 50})
    assert score("pipeline_latency_ok", unknown, response) == (
        "skipped",
        None,
        "target did not report the latency of stage rerank",
    )
    # an over-budget stage decides even when another is unknown
    both = case(latency_budget_ms={"rerank": 50, "generate": 500})
    assert score("pipeline_latency_ok", both, response)[:2] == ("ok", 0.0)
    negative = case(latency_budget_ms={"p95": -1})
    assert score("pipeline_latency_ok", negative, response)[0] == "failed"


def test_budget_keys() -> None:
    assert parse_budget_key("p95") == ("total", "p95")
    assert parse_budget_key("p99") == ("total", "p99")
    assert parse_budget_key("retrieve") == ("retrieve", None)
    assert parse_budget_key("retrieve.p95") == ("retrieve", "p95")
    assert parse_budget_key("guardrail_input.max") == ("guardrail_input", "max")
    assert parse_budget_key("total") == ("total", None)


# the pass rate ----------------------------------------------------------------------------------
SEED_LABELS: dict[str, Any] = {
    "expected_outcome": "success",
    "required_flags": [],
    "forbidden_flags": ["guardrail_blocked"],
    "min_citations": 1,
    "latency_budget_ms": {"p95": 5000},
}


def test_pass_rate_over_four_cases_by_hand() -> None:
    """Seed 003's example labels on four cases: pass, blocked, no citation, too slow -> 1/4."""
    the_case = case(**SEED_LABELS)
    good = reply(policy_flags=[], citations=CITED, latency_ms={"total": 800.0})
    blocked = reply(policy_flags=["guardrail_blocked"], citations=[], latency_ms={"total": 50.0})
    uncited = reply(policy_flags=[], citations=[], latency_ms={"total": 800.0})
    slow = reply(policy_flags=[], citations=CITED, latency_ms={"total": 6000.0})
    values = [score("pipeline_pass_rate", the_case, r)[:2] for r in (good, blocked, uncited, slow)]
    assert values == [("ok", 1.0), ("ok", 0.0), ("ok", 0.0), ("ok", 0.0)]
    result = CaseResult(case_id="q1", status="ok", response=blocked)
    details = score_case(METRICS["pipeline_pass_rate"], the_case, result).details
    assert details["failed"] == [
        "pipeline_outcome_match",
        "pipeline_forbidden_flags_absent",
        "pipeline_citations_ok",
    ]


def test_pass_rate_skips_and_failures() -> None:
    # no pipeline labels at all: skipped
    assert score("pipeline_pass_rate", case(), reply(policy_flags=[]))[0] == "skipped"
    # a failed query fails the pipeline (a 0, with the error named)
    the_case = case(**SEED_LABELS)
    status, value, _ = score("pipeline_pass_rate", the_case, None, error_type="timeout")
    assert (status, value) == ("ok", 0.0)
    # the single checks are failed (not scored) for a failed query
    assert score("pipeline_outcome_match", the_case, None, error_type="timeout")[0] == "failed"
    # no flags reported: undecided, so skipped with the reason
    answer_only = reply(citations=CITED, latency_ms={"total": 10.0})
    assert score("pipeline_pass_rate", the_case, answer_only) == ("skipped", None, NO_FLAGS)
    # ... unless a decided check already failed
    too_slow = reply(citations=CITED, latency_ms={"total": 9000.0})
    assert score("pipeline_pass_rate", the_case, too_slow)[:2] == ("ok", 0.0)


def test_pass_rate_counts_only_declared_checks() -> None:
    only_citations = case(min_citations=2)
    assert score("pipeline_pass_rate", only_citations, reply(citations=CITED * 2))[:2] == (
        "ok",
        1.0,
    )


# the run's latency budgets ----------------------------------------------------------------------
def test_latency_budget_summary_by_hand() -> None:
    cases = [case(latency_budget_ms={"p95": 1000, "retrieve": 100}) for _ in range(5)]
    for index, the_case in enumerate(cases):
        the_case.case_id = f"q{index}"
    totals = [100.0, 200.0, 300.0, 400.0, 2000.0]
    results = [
        CaseResult(
            case_id=f"q{index}",
            status="ok",
            response=reply(latency_ms={"total": total, "retrieve": 10.0 * (index + 1)}),
        )
        for index, total in enumerate(totals)
    ]
    results[4] = CaseResult(case_id="q4", status="error", error_type="timeout")
    rows = latency_budget_summary(cases, results)
    # the failed case has no latency: p95 of 100, 200, 300, 400 (linear) = 385
    assert rows == [
        {
            "stage": "retrieve",
            "statistic": "max",
            "budget_ms": 100.0,
            "observed_ms": 40.0,
            "n": 4,
            "status": "pass",
        },
        {
            "stage": "total",
            "statistic": "p95",
            "budget_ms": 1000.0,
            "observed_ms": pytest.approx(385.0),
            "n": 4,
            "status": "pass",
        },
    ]
    cases[0].latency_budget_ms = {"p95": 1000, "retrieve": 100, "rerank.p50": 5}
    rows = latency_budget_summary(cases, results)
    assert rows[0]["stage"] == "rerank" and rows[0]["status"] == "not_measured"


def test_latency_budget_summary_fails_over_budget() -> None:
    cases = [case(latency_budget_ms={"p50": 150})]
    results = [CaseResult(case_id="q1", status="ok", response=reply(latency_ms={"total": 151.0}))]
    assert latency_budget_summary(cases, results)[0]["status"] == "fail"

"""Pipeline perspective (seed 003, section F): did the pipeline end the way the case expects?

Each response is classified into one outcome by seed 003's rules, tried in this order (the
first that holds wins, so a response that satisfies several rules gets one outcome):

1. ``blocked``: ``guardrail_blocked`` in ``policy_flags``;
2. ``no_results``: the ``no_context`` flag, or the target reported ``retrieved`` and it is
   empty (retrieved_count == 0);
3. ``uncertain``: the ``uncertain`` flag, or ``confidence`` < 0.5, or ``abstained: true``
   (ragmeter's addition: a system that says it declined to answer is not certain);
4. ``success``: at least one citation (a blocked response never gets here);
5. ``other``: none of the above (e.g. an answer without citations).

The rules need ``policy_flags`` (without it no response can be told apart from a blocked one)
and, to reach ``success``, ``citations``: a target that does not report them gets the affected
metrics skipped with that reason, never a 0. ``retrieved``, ``confidence`` and ``abstained``
are used when reported.

Per-case checks, each declared by a case label (a case without the label is skipped):
``pipeline_outcome_match`` (``expected_outcome``), ``pipeline_required_flags_present``
(``required_flags``), ``pipeline_forbidden_flags_absent`` (``forbidden_flags``),
``pipeline_citations_ok`` (``min_citations``), ``pipeline_latency_ok``
(``latency_budget_ms``), and ``pipeline_pass_rate``: 1 when every declared check passes.

Latency budgets: a key of ``latency_budget_ms`` is a stage (``retrieve``: that stage's
latency), a percentile (``p95``: the ``total`` latency) or both (``retrieve.p95``). Per case,
the stage's latency must be within the budget; over the run, :func:`latency_budget_summary`
compares the percentile the key names (``max`` for a bare stage) of the cases that declare it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragmeter.metrics.base import Metric, MetricOutput, MetricSettings, SkipScore
from ragmeter.models import Case, CaseResult, Response

BLOCKED_FLAG = "guardrail_blocked"
NO_CONTEXT_FLAG = "no_context"
UNCERTAIN_FLAG = "uncertain"
CONFIDENCE_BELOW = 0.5
# the rules in the order they are tried; "other" when none holds
PRECEDENCE = ("blocked", "no_results", "uncertain", "success")
OTHER = "other"

NO_FLAGS = "target did not report policy_flags (send policy_flags: [] when nothing was flagged)"
NO_CITATIONS = "target did not report citations"
NO_LABELS = (
    "case has no pipeline labels (expected_outcome, required_flags, forbidden_flags, "
    "min_citations, latency_budget_ms)"
)

_BUDGET_KEY = re.compile(r"^(?:(?P<stage>.+)\.)?(?P<stat>p[1-9]\d?|max)$")


@dataclass(frozen=True)
class Check:
    """One pipeline check of one case: ``passed`` is None when the target did not report what
    the check needs (``reason`` says what)."""

    passed: bool | None
    details: dict[str, Any] = field(default_factory=dict)
    reason: str = ""


@dataclass(frozen=True)
class Classification:
    """A response's outcome (None: undetermined, ``reason`` says why), every rule's verdict
    (None: not decided) and the signals read."""

    outcome: str | None
    rules: dict[str, bool | None]
    signals: list[str]
    reason: str = ""


def classify(response: Response) -> Classification:
    """The response's outcome by seed 003's rules in :data:`PRECEDENCE` order."""
    if not response.has("policy_flags"):
        return Classification(None, {}, [], NO_FLAGS)
    flags = set(response.policy_flags)
    signals = ["policy_flags"]
    retrieved_known = response.has("retrieved")
    if retrieved_known:
        signals.append("retrieved")
    confidence = response.confidence if response.has("confidence") else None
    if confidence is not None:
        signals.append("confidence")
    abstained = response.abstained is True and response.has("abstained")
    if response.has("abstained"):
        signals.append("abstained")
    citations_known = response.has("citations")
    if citations_known:
        signals.append("citations")
    rules: dict[str, bool | None] = {
        "blocked": BLOCKED_FLAG in flags,
        "no_results": NO_CONTEXT_FLAG in flags or (retrieved_known and not response.retrieved),
        "uncertain": UNCERTAIN_FLAG in flags
        or (confidence is not None and confidence < CONFIDENCE_BELOW)
        or abstained,
        "success": len(response.citations) >= 1 if citations_known else None,
    }
    for name in PRECEDENCE:
        if rules[name] is None:
            return Classification(None, rules, signals, NO_CITATIONS)
        if rules[name]:
            return Classification(name, rules, signals)
    return Classification(OTHER, rules, signals)


# the checks: None when the case does not declare the check ------------------------------------
def outcome_check(case: Case, response: Response) -> Check | None:
    if case.expected_outcome is None:
        return None
    found = classify(response)
    details: dict[str, Any] = {
        "expected": case.expected_outcome,
        "outcome": found.outcome,
        "rules": found.rules,
        "signals": found.signals,
    }
    if found.outcome is None:
        return Check(None, details, found.reason)
    return Check(found.outcome == case.expected_outcome, details)


def required_flags_check(case: Case, response: Response) -> Check | None:
    if not case.required_flags:
        return None
    if not response.has("policy_flags"):
        return Check(None, reason=NO_FLAGS)
    missing = [flag for flag in case.required_flags if flag not in response.policy_flags]
    return Check(not missing, {"missing": missing, "flags": list(response.policy_flags)})


def forbidden_flags_check(case: Case, response: Response) -> Check | None:
    if not case.forbidden_flags:
        return None
    if not response.has("policy_flags"):
        return Check(None, reason=NO_FLAGS)
    present = [flag for flag in case.forbidden_flags if flag in response.policy_flags]
    return Check(not present, {"present": present, "flags": list(response.policy_flags)})


def citations_check(case: Case, response: Response) -> Check | None:
    if case.min_citations is None:
        return None
    if not response.has("citations"):
        return Check(None, reason=NO_CITATIONS)
    count = len(response.citations)
    return Check(count >= case.min_citations, {"citations": count, "min": case.min_citations})


def parse_budget_key(key: str) -> tuple[str, str | None]:
    """``(stage, statistic)`` of a latency budget key: ``p95`` -> ``("total", "p95")``,
    ``retrieve`` -> ``("retrieve", None)``, ``retrieve.p95`` -> ``("retrieve", "p95")``."""
    match = _BUDGET_KEY.match(key)
    if match is None:
        return key, None
    return match["stage"] or "total", match["stat"]


def _budgets(case: Case) -> list[tuple[str, str, str | None, float]]:
    """(key, stage, statistic, budget ms) of a case's latency budgets; a negative or non-finite
    budget is a mistake in the labels."""
    found = []
    for key, budget in case.latency_budget_ms.items():
        if not budget >= 0:
            raise ValueError(f"latency_budget_ms.{key} must be a number of ms >= 0, not {budget}")
        found.append((key, *parse_budget_key(key), float(budget)))
    return found


def latency_check(case: Case, response: Response) -> Check | None:
    if not case.latency_budget_ms:
        return None
    over: dict[str, dict[str, float]] = {}
    unreported: list[str] = []
    for key, stage, _, budget in _budgets(case):
        latency = response.latency_ms.get(stage)
        if latency is None:
            unreported.append(stage)
        elif latency > budget:
            over[key] = {"latency_ms": latency, "budget_ms": budget}
    details: dict[str, Any] = {"over_budget": over}
    if over:
        return Check(False, details)
    if unreported:
        stages = ", ".join(sorted(set(unreported)))
        return Check(None, details, f"target did not report the latency of stage {stages}")
    return Check(True, details)


ChecksFn = Callable[[Case, Response], Check | None]
# metric name -> (check, the case label it needs)
CHECKS: dict[str, tuple[ChecksFn, str]] = {
    "pipeline_outcome_match": (outcome_check, "expected_outcome"),
    "pipeline_required_flags_present": (required_flags_check, "required_flags"),
    "pipeline_forbidden_flags_absent": (forbidden_flags_check, "forbidden_flags"),
    "pipeline_citations_ok": (citations_check, "min_citations"),
    "pipeline_latency_ok": (latency_check, "latency_budget_ms"),
}


def _check_metric(check: ChecksFn, label: str) -> Callable[[Case, Response], MetricOutput]:
    def compute(case: Case, response: Response) -> MetricOutput:
        found = check(case, response)
        if found is None:
            raise SkipScore(f"case has no {label}")
        if found.passed is None:
            raise SkipScore(found.reason)
        return float(found.passed), found.details

    return compute


def has_pipeline_labels(case: Case) -> bool:
    return bool(
        case.expected_outcome is not None
        or case.required_flags
        or case.forbidden_flags
        or case.min_citations is not None
        or case.latency_budget_ms
    )


def _passes(case: Case, result: CaseResult) -> MetricOutput:
    """1 when every check the case declares passes; 0 when one fails or the query failed (a
    request that errors is not a pipeline that worked); skipped when a check could not be
    decided and none failed."""
    if not has_pipeline_labels(case):
        raise SkipScore(NO_LABELS)
    if result.status != "ok" or result.response is None:
        return 0.0, {"failed": ["query"], "error_type": result.error_type}
    checks = {
        name: found
        for name, (check, _) in CHECKS.items()
        if (found := check(case, result.response)) is not None
    }
    failed = [name for name, found in checks.items() if found.passed is False]
    undecided = {name: found.reason for name, found in checks.items() if found.passed is None}
    if failed:
        return 0.0, {"failed": failed, "undecided": undecided}
    if undecided:
        raise SkipScore("; ".join(dict.fromkeys(undecided.values())))
    return 1.0, {"checks": list(checks)}


_DESCRIPTIONS = {
    "pipeline_outcome_match": "the response's outcome (success / blocked / no_results / "
    "uncertain / other, seed 003's rules) equals the case's expected_outcome; needs "
    "policy_flags (and citations for success)",
    "pipeline_required_flags_present": "every flag of required_flags is in policy_flags",
    "pipeline_forbidden_flags_absent": "no flag of forbidden_flags is in policy_flags",
    "pipeline_citations_ok": "at least min_citations citations; needs citations",
    "pipeline_latency_ok": "each stage named in latency_budget_ms within its budget "
    "(p95/p99 keys: the total latency)",
}


def pipeline_metrics(_: MetricSettings) -> list[Metric]:
    metrics = [
        Metric(
            name,
            "pipeline",
            _check_metric(check, label),
            description=_DESCRIPTIONS[name],
            kind="binary",
        )
        for name, (check, label) in CHECKS.items()
    ]
    metrics.append(
        Metric(
            "pipeline_pass_rate",
            "pipeline",
            None,
            on_result=_passes,
            description="1 when every pipeline check the case declares passes (a failed "
            "query fails it); the mean is seed 003's pipeline pass rate",
            kind="binary",
        )
    )
    return metrics


# the run's latency budgets ---------------------------------------------------------------------
BudgetGroups = dict[tuple[str, str, float], list[float]]


def latency_budget_summary(cases: list[Case], results: list[CaseResult]) -> list[dict[str, Any]]:
    """One row per distinct (stage, statistic, budget) the cases declare: the statistic of that
    stage's latency over the declaring cases that answered and reported the stage, against the
    budget (``status`` pass / fail / not_measured)."""
    groups: BudgetGroups = {}
    add_budget_latencies(groups, cases, results)
    return budget_rows(groups)


def add_budget_latencies(
    groups: BudgetGroups, cases: list[Case], results: list[CaseResult]
) -> None:
    """Add the latencies of ``cases`` (a batch of a run) to their budgets' groups."""
    by_case = {result.case_id: result for result in results}
    for case in cases:
        if not case.latency_budget_ms:
            continue
        try:
            budgets = _budgets(case)
        except ValueError:
            continue  # the per-case metric reports it as failed
        result = by_case.get(case.case_id)
        response = result.response if result is not None else None
        for _, stage, stat, budget in budgets:
            values = groups.setdefault((stage, stat or "max", budget), [])
            if response is not None and stage in response.latency_ms:
                values.append(float(response.latency_ms[stage]))


def budget_rows(groups: BudgetGroups) -> list[dict[str, Any]]:
    """The rows of ``latency_budget_summary`` from the gathered latencies."""
    rows: list[dict[str, Any]] = []
    for (stage, stat, budget), values in sorted(groups.items()):
        observed: float | None = None
        if values:
            observed = (
                float(max(values))
                if stat == "max"
                else float(np.percentile(np.asarray(values), float(stat[1:])))
            )
        rows.append(
            {
                "stage": stage,
                "statistic": stat,
                "budget_ms": budget,
                "observed_ms": observed,
                "n": len(values),
                "status": "not_measured"
                if observed is None
                else ("pass" if observed <= budget else "fail"),
            }
        )
    return rows

"""``assert_rag(run, "faithfulness > 0.8", ...)``: goals checked as a test assertion.

Each condition is a goal as the goals table writes it (``"mrr > 0.5"``, ``"ndcg_at_5 >= 0.6 @
lower"``). The assertion passes only when every condition passes; a metric the run does not
have, one every case skipped, or one measured on too few of its cases fails it with that
reason, never passes. The message gives each condition's value, its 95% interval, the
coverage (n scored of n cases, skipped and failed) and why anything was not measured.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from ragmeter.run_record import GoalResult, MetricSummary, RunRecord

if TYPE_CHECKING:
    from ragmeter.runner.engine import RunOutcome

__all__ = ["RagAssertionError", "assert_rag", "explain"]


class RagAssertionError(AssertionError):
    """A condition of :func:`assert_rag` failed or was not measured; ``results`` has them all."""

    def __init__(self, message: str, results: list[GoalResult]) -> None:
        super().__init__(message)
        self.results = results


def _record(run: RunRecord | RunOutcome | str | Path) -> RunRecord:
    if isinstance(run, str | Path):
        from ragmeter.results import Run

        return Run.load(run)
    if isinstance(run, RunRecord):
        return run
    record = getattr(run, "record", None)
    if isinstance(record, RunRecord):
        return record
    raise TypeError(
        "assert_rag: expected a run (ragmeter.Run, a RunOutcome or a run file path), got "
        f"{type(run).__name__}"
    )


def _number(value: float | None) -> str:
    return "none" if value is None else f"{value:.4g}"


def _reasons(run: RunRecord, metric: str) -> str:
    """The most common reasons the run's cases give for skipping or failing ``metric``."""
    cases = getattr(run, "cases", None) or []
    counted: Counter[str] = Counter()
    for case in cases:
        score = case.scores.get(metric)
        if isinstance(score, dict):
            counted[f"{score['status']}: {score.get('reason') or 'no reason given'}"] += 1
    return "; ".join(f"{reason} ({n})" for reason, n in counted.most_common(3))


def _coverage(summary: MetricSummary) -> str:
    total = summary.n_scored + summary.n_skipped + summary.n_failed
    parts = [f"{summary.n_scored} of {total} cases scored"]
    if summary.n_skipped:
        parts.append(f"{summary.n_skipped} skipped")
    if summary.n_failed:
        parts.append(f"{summary.n_failed} failed")
    if summary.coverage is not None:
        parts.append(f"coverage {summary.coverage:.2f}")
    return ", ".join(parts)


def explain(run: RunRecord, result: GoalResult, condition: str) -> str:
    """One condition's line: verdict, value, interval, coverage, and why it was not measured."""
    from ragmeter.scoring.goals import goal_condition

    verdict = {"pass": "PASS", "fail": "FAIL"}.get(result.status, "NOT MEASURED")
    written = f"{result.metric} {goal_condition(result)}" if condition == "" else condition
    summary = run.scorecard.get(result.metric) if run.scorecard is not None else None
    if summary is None:
        names = [m.name for m in run.scorecard.metrics] if run.scorecard is not None else []
        shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
        return (
            f"{verdict:<12} {written}: the run has no metric {result.metric!r} (its family "
            f"did not run, or it needs a judge); the run has: {shown or 'no metrics'}"
        )
    interval = (
        f"95% CI {_number(summary.ci_low)}-{_number(summary.ci_high)}"
        if summary.ci_low is not None and summary.ci_high is not None
        else "no interval"
    )
    line = f"{verdict:<12} {written}: value {_number(summary.value)}, {interval}; "
    line += _coverage(summary)
    if result.reason:
        line += f"; {result.reason}"
    if summary.value is None:
        line += "; nothing measured"
    if summary.n_skipped or summary.n_failed:
        reasons = _reasons(run, result.metric)
        line += f" [{reasons}]" if reasons else ""
    return line


def assert_rag(
    run: RunRecord | RunOutcome | str | Path,
    *conditions: str,
    coverage_floor: float | None = None,
) -> list[GoalResult]:
    """Check ``conditions`` (``"METRIC OP VALUE"``) on a finished run; raise
    :class:`RagAssertionError` (an AssertionError) explaining every condition unless all pass.

    ``run``: what :func:`ragmeter.run_evaluation` or the ``rag_run`` fixture returns, a run
    record, a ``RunOutcome`` or a run file's path. ``coverage_floor``: the share of its cases a
    metric must be measured on (default: the run's ``coverage_floor`` setting, else 0)."""
    from ragmeter.scoring.goals import check_goals, parse_goals

    __tracebackhide__ = True  # pytest shows the caller's line and the message, not this body
    if not conditions:
        raise ValueError('assert_rag: give at least one condition, e.g. "mrr > 0.5"')
    record = _record(run)
    goals = parse_goals(list(conditions))
    floor = coverage_floor
    if floor is None:
        floor = float(record.config.get("coverage_floor") or 0.0)
    results = check_goals(record.scorecard, goals, coverage_floor=floor)
    lines = [explain(record, r, c.strip()) for r, c in zip(results, conditions, strict=True)]
    missed = [r for r in results if r.status != "pass"]
    if missed:
        header = (
            f"assert_rag: {len(missed)} of {len(results)} condition(s) not met in run "
            f"{record.id} ({record.name})"
        )
        raise RagAssertionError("\n".join([header, *lines]), results)
    return results

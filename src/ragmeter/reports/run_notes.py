"""One-line notes the command line prints around a run: why a gate failed, regressions against
a baseline, a dry run's judging estimate, a run that is not finished.

Metric names, run ids and names come from runs, goals files and plugins: they are shown
inert (:func:`ragmeter.reports.terminal.inert`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from ragmeter.redaction import redact_text
from ragmeter.reports.terminal import inert
from ragmeter.run_record import RunRecord
from ragmeter.scoring.goals import gate_failures, goal_condition

if TYPE_CHECKING:
    from ragmeter.judges.cost import Estimate
    from ragmeter.scoring.compare import Comparison, MetricComparison


def gate_report(record: RunRecord) -> tuple[bool, list[Text]]:
    """Whether ``--gate`` fails the run (a goal failed, a required one was not measured, or
    there is no goal at all) and the lines that say why."""
    if not record.goals:
        return True, [Text("gate: no goals to check (--goals FILE is empty)", style="red")]
    missed = gate_failures(record.goals)
    failing = [t for t in missed if t.status == "fail"]
    unmeasured = [t for t in missed if t.status == "not_measured"]
    lines = []
    if failing:
        shown = ", ".join(
            f"{inert(t.metric, markup=False)} {t.value:.3f} (goal {goal_condition(t)}"
            + (f"; {inert(t.reason, markup=False)})" if t.reason else ")")
            for t in failing
            if t.value is not None
        )
        lines.append(Text("gate: goals failed: ", style="red").append(shown, style="default"))
    if unmeasured:
        names = ", ".join(
            inert(t.metric, markup=False)
            + f" ({inert(t.reason or 'no case scored', markup=False)})"
            for t in unmeasured
        )
        lines.append(
            Text("gate: goals not measured: ", style="red").append(
                f"{names}; run errors: {record.error_count} of {record.question_count}. Mark a "
                "goal optional in --goals ('> 0.6 optional') if the run cannot measure it",
                style="default",
            )
        )
    return bool(missed), lines


def _regressed(rows: list[MetricComparison]) -> str:
    return ", ".join(
        f"{inert(r.metric, markup=False)} (Δ {_change(r)}, p {r.p_value:.4f})" for r in rows
    )


def _change(row: MetricComparison) -> str:
    """The paired change: a total's (a ``sum``) over the shared cases, else the mean's."""
    if row.total_diff is not None:
        return f"{row.total_diff:+.0f}" if row.total_diff.is_integer() else f"{row.total_diff:+.2f}"
    return f"{row.mean_diff:+.3f}"


def baseline_regressions(comparison: Comparison) -> Text | None:
    """``eval --baseline``: the metrics that regressed against the baseline run."""
    if not comparison.regressions:
        return None
    baseline = inert(comparison.baseline, markup=False)
    return Text(f"regression against {baseline}:", style="red").append(
        " " + _regressed(comparison.regressions), style="default"
    )


def compare_regressions(comparisons: list[Comparison]) -> list[Text]:
    """``compare``: one line a candidate that regressed, naming its metrics."""
    return [
        Text("regression:", style="red").append(
            f" {inert(c.candidate, markup=False)} vs {inert(c.baseline, markup=False)}: "
            + ", ".join(inert(r.metric, markup=False) for r in c.regressions),
            style="default",
        )
        for c in comparisons
        if c.regressions
    ]


def dry_run_line(judge: str, estimate: Estimate) -> Text:
    """``eval --dry-run``: what judging the run would take."""
    cost = (
        "unknown (no price for this model)"
        if estimate.cost_usd is None
        else f"${estimate.cost_usd:.4f}"
    )
    return Text(
        f"dry run, judge {inert(redact_text(judge), markup=False)}: {estimate.cases} cases -> "
        f"{estimate.calls} judge calls, "
        f"~{estimate.prompt_tokens} prompt + ~{estimate.completion_tokens} completion tokens, "
        f"cost {cost} (answers and contexts assumed; repairs not counted)"
    )


def unfinished_note(record: RunRecord, answered: int) -> Text | None:
    """``show`` of a run that is not completed: how far it got and how to finish it."""
    if record.status == "completed":
        return None
    return Text(
        f"run {record.id} is {record.status}: {answered} of {record.question_count} "
        f"cases answered, not scored yet; finish it with: ragmeter eval --resume {record.id}",
        style="yellow",
    )

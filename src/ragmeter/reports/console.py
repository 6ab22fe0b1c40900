"""The console scorecard (rich tables).

Every string that came from outside ragmeter (run and dataset names, metric names of plugins
and goals files, breakdown labels, case ids, error messages, latency stage names) goes
through :func:`ragmeter.reports.terminal.inert` before it reaches a table. Metric names and
numbers are never cut: a table that is too wide for the console falls back to a narrower
layout (:class:`Fit`) instead of truncating cells with an ellipsis.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from ragmeter.models import CaseResult
from ragmeter.reports.operational import operational_renderables
from ragmeter.reports.terminal import inert, inert_text
from ragmeter.run_record import (
    GoalResult,
    JudgeReliability,
    MetricSummary,
    Performance,
    RunRecord,
    Scorecard,
    WeightedScore,
)
from ragmeter.scoring.goals import goal_condition
from ragmeter.text import visible

if TYPE_CHECKING:
    from ragmeter.run_record import MetricDeclaration

# an error message in the cases table is cut here; `ragmeter show --details` or --json has more
ERROR_LIMIT = 300
_UNBOUNDED = 100_000


class Fit:
    """The first of ``layouts`` that fits the console without cutting a cell, else the last.

    A layout fits when its one-line (``no_wrap``) columns get their whole content and every
    other column at least its longest word (or its ``min_width``). Lets a wide table keep one
    row a line where there is room and switch to a layout that wraps where there is not,
    instead of rich cutting metric names and numbers with an ellipsis.
    """

    def __init__(self, *layouts: Table) -> None:
        if not layouts:
            raise ValueError("Fit needs at least one layout")
        self.layouts = layouts

    @staticmethod
    def _pin(table: Table, console: Console, options: ConsoleOptions) -> None:
        """Give every one-line column a ``min_width`` of its widest cell, so the table's
        minimum width is the width it needs to show every such cell whole."""
        for column in table.columns:
            if not column.no_wrap:
                continue
            cells = [column.header, *column.cells] if table.show_header else [*column.cells]
            widest = max(
                (Measurement.get(console, options, cell).maximum for cell in cells), default=0
            )
            column.min_width = max(column.min_width or 0, widest)

    def choose(self, console: Console, options: ConsoleOptions) -> Table:
        unbounded = options.update_width(_UNBOUNDED)
        for layout in self.layouts[:-1]:
            self._pin(layout, console, unbounded)
            if Measurement.get(console, unbounded, layout).minimum <= options.max_width:
                return layout
        return self.layouts[-1]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.choose(console, options)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.choose(console, options))


def format_total(value: float) -> str:
    """A total (a ``sum`` aggregation): a whole number as one (``37``), else 2 decimals."""
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.2f}"


def format_value(summary: MetricSummary, value: float | None) -> str:
    """A value as its declared kind reads: ms for a duration, dollars for a cost, a total as a
    whole number, a mean count with its unit, else three decimals."""
    if value is None:
        return "-"
    kind = summary.value_kind()
    if summary.aggregation == "sum":
        return format_total(value) + (f" {summary.unit}" if summary.unit else "")
    if kind == "duration":
        return f"{value:.1f} ms"
    if kind == "cost":
        return f"${value:.5f}"
    if kind == "count":
        return f"{value:.2f}" + (f" {summary.unit}" if summary.unit else "")
    text = f"{value:.3f}"
    return "0.000" if text == "-0.000" else text  # float noise below zero


def _arrow(summary: MetricSummary) -> str:
    return "↑" if summary.higher_is_better else "↓"


def _failed(summary: MetricSummary) -> str:
    return f"[red]{summary.n_failed}[/red]" if summary.n_failed else "0"


def coverage_note(summary: MetricSummary) -> str:
    """`` cov 74%`` when the metric measured less than every case it applies to (failed or
    not reported by the target), with how failed cases were counted; else nothing."""
    note = ""
    if summary.coverage is not None and summary.coverage < 1.0:
        note = f" cov {summary.coverage:.0%}"
    if summary.failed_as and summary.n_failed:
        note += f" (failed as {summary.failed_as})"
    return note


def _counts(summary: MetricSummary) -> str:
    return f"{summary.n_scored}/{summary.n_skipped}/{_failed(summary)}{coverage_note(summary)}"


def _value_and_interval(summary: MetricSummary) -> str:
    """The value over its interval, the unit written once: the narrow tables' one column."""
    value = format_value(summary, summary.value)
    if summary.ci_low is None or summary.ci_high is None:
        return value
    low, high = summary.ci_low, summary.ci_high
    kind = summary.value_kind()
    if kind == "duration":
        interval = f"{low:.1f}-{high:.1f} ms"
    elif kind == "cost":
        interval = f"${low:.5f}-{high:.5f}"
    else:
        interval = _interval(summary)
    return f"{value}\n[dim]{interval}[/dim]"


_COUNTS_CAPTION = (
    "counts: n/skip/fail, the cases scored, skipped and failed; cov: measured share of the "
    "cases a metric applies to"
)


def _coverage_cell(summary: MetricSummary) -> str:
    if summary.coverage is None:
        return "-"
    text = f"{summary.coverage:.0%}"
    if summary.failed_as and summary.n_failed:
        text += f" ({summary.failed_as})"
    return f"[yellow]{text}[/yellow]" if summary.coverage < 1.0 else text


def scorecard_table(record: RunRecord) -> Fit:
    """The run's scorecard: one row a metric (value, interval, counts), grouped."""
    title = f"Scorecard: {inert(record.name)} ({inert(record.id)})"
    wide = Table(title=title, title_justify="left")
    wide.add_column("metric", no_wrap=True)
    wide.add_column("value", justify="right", no_wrap=True)
    wide.add_column("95% CI", justify="right", no_wrap=True)
    for column in ("n", "skip", "fail", "cov"):
        wide.add_column(column, justify="right", no_wrap=True, min_width=4)
    narrow = Table(title=title, title_justify="left", caption=_COUNTS_CAPTION)
    narrow.add_column("metric", no_wrap=True)
    narrow.add_column("value, 95% CI", justify="right", overflow="fold")
    narrow.add_column("counts", justify="right", no_wrap=True)
    if record.scorecard is None:
        return Fit(wide, narrow)
    for group, names in record.scorecard.by_group.items():
        wide.add_row(f"[bold]{inert(group)}[/bold]")
        narrow.add_row(f"[bold]{inert(group)}[/bold]")
        for name in names:
            summary = record.scorecard.get(name)
            if summary is None:
                continue
            label = f"  {inert(summary.name)} {_arrow(summary)}"
            wide.add_row(
                label,
                format_value(summary, summary.value),
                _interval(summary),
                str(summary.n_scored),
                str(summary.n_skipped),
                _failed(summary),
                _coverage_cell(summary),
            )
            narrow.add_row(label, _value_and_interval(summary), _counts(summary))
    return Fit(wide, narrow)


def _interval(summary: MetricSummary) -> str:
    if summary.ci_low is None or summary.ci_high is None:
        return "-"
    if summary.value_kind() == "count":  # the unit is shown once, with the value
        return f"{summary.ci_low:.2f}-{summary.ci_high:.2f}"
    return f"{format_value(summary, summary.ci_low)}-{format_value(summary, summary.ci_high)}"


def breakdown_table(
    field: str, groups: dict[str, list[MetricSummary]], metrics: list[str] | None = None
) -> Fit:
    """One row a group and metric: value, interval and counts. Group labels come from the
    dataset: they wrap (never cut); metric names and numbers stay on one line."""
    title = f"Breakdown by {inert(field)}"
    wide = Table(title=title, title_justify="left")
    wide.add_column("group", overflow="fold")
    wide.add_column("metric", no_wrap=True)
    wide.add_column("value", justify="right", no_wrap=True)
    wide.add_column("95% CI", justify="right", no_wrap=True)
    for column in ("n", "skip", "fail", "cov"):
        wide.add_column(column, justify="right", no_wrap=True, min_width=4)
    narrow = Table(title=title, title_justify="left", caption=_COUNTS_CAPTION)
    narrow.add_column("group", overflow="fold")
    narrow.add_column("metric", no_wrap=True)
    narrow.add_column("value, 95% CI", justify="right", overflow="fold")
    narrow.add_column("counts", justify="right", no_wrap=True)
    for label, summaries in groups.items():
        first = True
        for summary in summaries:
            if metrics and summary.name not in metrics:
                continue
            if not metrics and summary.n_scored == 0:
                continue
            group = f"[bold]{inert(label)}[/bold]" if first else ""
            wide.add_row(
                group,
                inert(summary.name),
                format_value(summary, summary.value),
                _interval(summary),
                str(summary.n_scored),
                str(summary.n_skipped),
                _failed(summary),
                _coverage_cell(summary),
            )
            narrow.add_row(
                group, inert(summary.name), _value_and_interval(summary), _counts(summary)
            )
            first = False
    return Fit(wide, narrow)


def weighted_line(weighted: WeightedScore) -> str:
    thin = under_coverage(weighted)
    if weighted.score is None:
        line = "weighted score: - (no objective has a value)"
        return f"{line}; {thin}" if thin else line
    parts = [
        f"{inert(name)} {value:.3f} x {weighted.effective_weights[name]:.2f}"
        for name, value in weighted.objectives.items()
        if value is not None and name in weighted.effective_weights
    ]
    line = f"weighted score: [bold]{weighted.score:.3f}[/bold] ({', '.join(parts)})"
    if weighted.missing:
        line += f"; missing, weights renormalised: {', '.join(map(inert, weighted.missing))}"
    return f"{line}; {thin}" if thin else line


def under_coverage(weighted: WeightedScore, quote: Callable[[str], str] = inert) -> str:
    """The metrics the weighted score left out for their coverage, as one phrase ("" if
    none), each name passed through ``quote``."""
    thin = {n: c for objective in weighted.detail for n, c in objective.under_coverage.items()}
    if not thin:
        return ""
    listed = ", ".join(f"{quote(name)} ({coverage:.0%})" for name, coverage in thin.items())
    return f"left out, measured on too few cases: {listed}"


def goal_value(result: GoalResult, scorecard: Scorecard | None) -> str:
    """A goal's value as its metric's kind reads (a count with its unit, ms, $), three
    decimals when the metric is not in the scorecard."""
    summary = scorecard.get(result.metric) if scorecard is not None else None
    if result.value is None:
        return "-"
    return format_value(summary, result.value) if summary is not None else f"{result.value:.3f}"


def goals_table(results: list[GoalResult], scorecard: Scorecard | None = None) -> Table:
    table = Table(title="Goals", title_justify="left")
    table.add_column("metric", no_wrap=True)
    for column in ("goal", "value", "status"):
        table.add_column(column, no_wrap=True)
    for result in results:
        # a required goal that no case measured fails a gate, so it is shown in red
        colour = {"pass": "green", "fail": "red"}.get(
            result.status, "dim" if result.optional else "red"
        )
        status = result.status.replace("_", " ")
        if result.reason:
            status += f": {inert(result.reason)}"
        if result.optional and result.status == "not_measured":
            status += " (optional)"
        table.add_row(
            inert(result.metric),
            inert(goal_condition(result)),
            goal_value(result, scorecard),
            f"[{colour}]{status}[/]",
        )
    return table


def latency_table(performance: Performance) -> Table | None:
    stages = performance.latency_ms
    if not stages:
        return None
    table = Table(title="Latency by stage (ms)", title_justify="left")
    table.add_column("stage", overflow="fold")  # stage names are the target's
    for column in ("n", "mean", "p50", "p95", "p99"):
        table.add_column(column, justify="right", no_wrap=True)
    for stage, row in stages.items():
        table.add_row(
            inert(str(stage)),
            str(row["n"]),
            *(f"{row[key]:.1f}" for key in ("mean", "p50", "p95", "p99")),
        )
    return table


def cost_line(performance: Performance) -> str | None:
    cost = performance.cost
    if cost is None:
        return None
    system, judge = cost.system, cost.judge
    if system.per_query_usd is None or system.total_usd is None:
        text = "system cost: not reported"
    else:
        text = (
            f"system cost: ${system.per_query_usd:.5f}/query, ${system.total_usd:.4f} "
            f"total ({system.n_costed} costed, {system.n_priced_from_tokens} priced from tokens)"
        )
    judge_text = (
        f"${judge['total_usd']:.4f}"
        if judge.get("total_usd") is not None
        else inert(str(judge.get("status", "-")).replace("_", " "))
    )
    return f"{text} · judge cost: {judge_text}"


def reliability_line(report: JudgeReliability) -> str:
    """The spot check in one line: what was compared (the second judge, or the run's judge
    with other prompt versions), disagreement and kappa."""
    rate, kappa, swaps = report.disagreement_rate, report.kappa, report.prompts
    if report.same_judge:
        against = "the run's judge"
    else:
        against = f"second judge {inert(str(report.second_judge))}"
    if swaps:
        against += ", prompts " + ", ".join(
            f"{inert(new)} vs the run's {inert(old)}" for old, new in swaps.items()
        )
    return (
        f"judge spot check ({report.spot_check_n} cases, {against}): disagreement "
        f"{'-' if rate is None else f'{rate:.2f}'}, Cohen's kappa "
        f"{'-' if kappa is None else f'{kappa:.2f}'} over {report.pairs} verdict pairs"
    )


def cases_table(results: Sequence[CaseResult], error_limit: int = ERROR_LIMIT) -> Table:
    """``ragmeter show --cases``: one row a case (id, status, error, latency). Case ids and
    error text are the dataset's and the target's: sanitised, wrapped, the error cut at
    ``error_limit`` characters."""
    table = Table(title="Cases", title_justify="left")
    table.add_column("case", overflow="fold", ratio=1)
    table.add_column("status", no_wrap=True)
    table.add_column("error", overflow="fold", ratio=3)
    table.add_column("latency ms", justify="right", no_wrap=True)
    for result in results:
        error = Text()
        if result.error_type or result.error_message:
            error.append_text(inert_text(result.error_type or "error", style="red"))
            if result.error_message:
                error.append(": ")
                error.append_text(inert_text(result.error_message, error_limit))
        table.add_row(
            inert_text(visible(result.case_id)),
            Text(result.status, style="green" if result.status == "ok" else "red"),
            error,
            f"{result.latency_ms:.1f}" if result.latency_ms is not None else "-",
        )
    return table


def metrics_table(rows: Sequence[tuple[str, MetricDeclaration]]) -> Fit:
    """``ragmeter metrics``: every (family, metric) pair. Family and metric names never wrap
    or get cut; the description (and the inputs a metric needs) wrap instead. Where the
    console is too narrow for a column each, families become section rows and group, kind,
    unit and inputs move under the description."""
    caption = "↑ higher is better · ↓ lower is better"
    wide = Table(title="Metrics", title_justify="left", caption=caption)
    wide.add_column("family", no_wrap=True)
    wide.add_column("metric", no_wrap=True)
    wide.add_column("group", no_wrap=True)
    wide.add_column("kind", no_wrap=True)
    wide.add_column("needs", overflow="fold", max_width=24)
    wide.add_column("description", overflow="fold", ratio=1, min_width=30)
    narrow = Table(title="Metrics", title_justify="left", caption=caption)
    narrow.add_column("metric", no_wrap=True)
    narrow.add_column("description", overflow="fold", ratio=1)
    family_seen: str | None = None
    for family, metric in rows:
        first = family != family_seen
        if first:
            if family_seen is not None:
                narrow.add_section()
            narrow.add_row(inert_text(family, style="bold"), "")
            family_seen = family
        name = inert_text(metric.name)
        name.append(" ↑" if metric.higher_is_better else " ↓")
        description = inert_text(metric.description or "-")
        needs = inert_text(", ".join(metric.requires) or "-")
        wide.add_row(
            inert_text(family, style="bold") if first else "",
            name,
            inert_text(metric.group),
            inert_text(metric.kind),
            needs,
            description,
            end_section=False,
        )
        facts = [f"group {metric.group}", f"kind {metric.kind}"]
        if metric.unit:
            facts.append(f"unit {metric.unit}")
        if metric.requires:
            facts.append("needs " + ", ".join(metric.requires))
        under = description.copy()
        under.append("\n")
        under.append_text(inert_text(" · ".join(facts), style="dim"))
        narrow.add_row(name, under)
    return Fit(wide, narrow)


def repeats_table(record: RunRecord) -> Table | None:
    """A run with repeats: each metric's variance within a case (between its repeats: the
    system's or the judge's own noise) against between cases, and the within share."""
    summaries = [
        s
        for s in (record.scorecard.metrics if record.scorecard is not None else [])
        if s.repeats and s.within_case_var is not None and s.between_case_var is not None
    ]
    if not summaries:
        return None
    title = f"Repeats: {summaries[0].repeats} answers per case (intervals resample cases)"
    table = Table(title=title, title_justify="left")
    table.add_column("metric", no_wrap=True)
    for column in ("within-case var", "between-case var", "within share"):
        table.add_column(column, justify="right", no_wrap=True)
    for summary in summaries:
        within, between = summary.within_case_var or 0.0, summary.between_case_var or 0.0
        share = within / (within + between) if within + between > 0 else 0.0
        table.add_row(inert(summary.name), f"{within:.4g}", f"{between:.4g}", f"{share:.0%}")
    return table


def print_run(record: RunRecord, console: Console) -> None:
    console.print(scorecard_table(record))
    if record.weighted_score is not None:
        console.print(weighted_line(record.weighted_score))
    if record.goals:
        console.print(goals_table(record.goals, record.scorecard))
    latency = latency_table(record.performance)
    if latency is not None and len(record.performance.latency_ms) > 1:
        console.print(latency)
    cost = cost_line(record.performance)
    if cost:
        console.print(cost)
    for renderable in operational_renderables(record):
        console.print(renderable)
    noise = repeats_table(record)
    if noise is not None:
        console.print(noise)
    if record.judge_reliability:
        console.print(reliability_line(record.judge_reliability))
    from ragmeter.reports.perspectives import summary_notes  # it imports this module

    for note in summary_notes(record):
        console.print(note)
    console.print(
        f"run [bold]{inert(record.id)}[/bold] · {inert(record.status)} · "
        f"datasets: {', '.join(map(inert, record.datasets))} · "
        f"questions: {record.question_count} · errors: {record.error_count}"
    )

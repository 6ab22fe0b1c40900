"""The console scorecard (rich tables)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from ragmeter.models import MetricSummary, RunRecord, TargetResult, WeightedScore


def format_value(summary: MetricSummary, value: float | None) -> str:
    if value is None:
        return "-"
    if summary.unit == "ms":
        return f"{value:.1f} ms"
    if summary.unit == "USD":
        return f"${value:.5f}"
    text = f"{value:.3f}"
    return "0.000" if text == "-0.000" else text  # float noise below zero


def scorecard_table(record: RunRecord) -> Table:
    table = Table(title=f"Scorecard: {record.name} ({record.id})", title_justify="left")
    table.add_column("metric", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("95% CI", justify="right", no_wrap=True)
    for column in ("n", "skip", "fail"):
        table.add_column(column, justify="right", no_wrap=True, min_width=4)
    if record.scorecard is None:
        return table
    for group, names in record.scorecard.by_group.items():
        table.add_row(f"[bold]{group}[/bold]")
        for name in names:
            summary = record.scorecard.get(name)
            if summary is None:
                continue
            interval = _interval(summary)
            arrow = "↑" if summary.higher_is_better else "↓"
            table.add_row(
                f"  {summary.name} {arrow}",
                format_value(summary, summary.value),
                interval,
                str(summary.n_scored),
                str(summary.n_skipped),
                f"[red]{summary.n_failed}[/red]" if summary.n_failed else "0",
            )
    return table


def _interval(summary: MetricSummary) -> str:
    if summary.ci_low is None:
        return "-"
    return f"{format_value(summary, summary.ci_low)}-{format_value(summary, summary.ci_high)}"


def breakdown_table(
    field: str, groups: dict[str, list[MetricSummary]], metrics: list[str] | None = None
) -> Table:
    """One row a group and metric: value, interval and counts."""
    table = Table(title=f"Breakdown by {field}", title_justify="left")
    for column in ("group", "metric"):
        table.add_column(column, no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("95% CI", justify="right", no_wrap=True)
    for column in ("n", "skip", "fail"):
        table.add_column(column, justify="right", no_wrap=True, min_width=4)
    for label, summaries in groups.items():
        first = True
        for summary in summaries:
            if metrics and summary.name not in metrics:
                continue
            if not metrics and summary.n_scored == 0:
                continue
            table.add_row(
                f"[bold]{label}[/bold]" if first else "",
                summary.name,
                format_value(summary, summary.value),
                _interval(summary),
                str(summary.n_scored),
                str(summary.n_skipped),
                f"[red]{summary.n_failed}[/red]" if summary.n_failed else "0",
            )
            first = False
    return table


def weighted_line(weighted: WeightedScore) -> str:
    if weighted.score is None:
        return "weighted score: - (no objective has a value)"
    parts = [
        f"{name} {value:.3f} x {weighted.effective_weights[name]:.2f}"
        for name, value in weighted.objectives.items()
        if value is not None and name in weighted.effective_weights
    ]
    line = f"weighted score: [bold]{weighted.score:.3f}[/bold] ({', '.join(parts)})"
    if weighted.missing:
        line += f"; missing, weights renormalised: {', '.join(weighted.missing)}"
    return line


def targets_table(results: list[TargetResult]) -> Table:
    table = Table(title="Targets", title_justify="left")
    for column in ("metric", "target", "value", "status"):
        table.add_column(column, no_wrap=True)
    colour = {"pass": "green", "fail": "red", "not_measured": "dim"}
    for result in results:
        table.add_row(
            result.metric,
            f"{result.op} {result.threshold:g}",
            f"{result.value:.3f}" if result.value is not None else "-",
            f"[{colour[result.status]}]{result.status.replace('_', ' ')}[/]",
        )
    return table


def latency_table(performance: dict[str, Any]) -> Table | None:
    stages = performance.get("latency_ms") or {}
    if not stages:
        return None
    table = Table(title="Latency by stage (ms)", title_justify="left")
    table.add_column("stage", no_wrap=True)
    for column in ("n", "mean", "p50", "p95", "p99"):
        table.add_column(column, justify="right", no_wrap=True)
    for stage, row in stages.items():
        table.add_row(
            stage,
            str(row["n"]),
            *(f"{row[key]:.1f}" for key in ("mean", "p50", "p95", "p99")),
        )
    return table


def cost_line(performance: dict[str, Any]) -> str | None:
    cost = performance.get("cost")
    if not cost:
        return None
    system, judge = cost["system"], cost["judge"]
    if system["per_query_usd"] is None:
        text = "system cost: not reported"
    else:
        text = (
            f"system cost: ${system['per_query_usd']:.5f}/query, ${system['total_usd']:.4f} "
            f"total ({system['n_costed']} costed, {system['n_priced_from_tokens']} priced from "
            f"tokens)"
        )
    judge_text = (
        f"${judge['total_usd']:.4f}"
        if judge.get("total_usd") is not None
        else judge.get("status", "-").replace("_", " ")
    )
    return f"{text} · judge cost: {judge_text}"


def reliability_line(report: dict[str, Any]) -> str:
    rate, kappa = report.get("disagreement_rate"), report.get("kappa")
    return (
        f"judge spot check ({report['spot_check_n']} cases, second judge "
        f"{report['second_judge']}): disagreement "
        f"{'-' if rate is None else f'{rate:.2f}'}, Cohen's kappa "
        f"{'-' if kappa is None else f'{kappa:.2f}'} over {report['pairs']} verdict pairs"
    )


def print_run(record: RunRecord, console: Console) -> None:
    console.print(scorecard_table(record))
    if record.weighted_score is not None:
        console.print(weighted_line(record.weighted_score))
    if record.targets:
        console.print(targets_table(record.targets))
    latency = latency_table(record.performance)
    if latency is not None and len(record.performance.get("latency_ms", {})) > 1:
        console.print(latency)
    cost = cost_line(record.performance)
    if cost:
        console.print(cost)
    if record.judge_reliability:
        console.print(reliability_line(record.judge_reliability))
    console.print(
        f"run [bold]{record.id}[/bold] · {record.status} · "
        f"datasets: {', '.join(record.datasets)} · "
        f"questions: {record.question_count} · errors: {record.error_count}"
    )

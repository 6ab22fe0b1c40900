"""The console scorecard (rich tables)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ragmeter.models import MetricSummary, RunRecord


def format_value(summary: MetricSummary, value: float | None) -> str:
    if value is None:
        return "-"
    if summary.unit == "ms":
        return f"{value:.1f} ms"
    if summary.unit == "USD":
        return f"${value:.5f}"
    return f"{value:.3f}"


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
            interval = (
                f"{format_value(summary, summary.ci_low)}-{format_value(summary, summary.ci_high)}"
                if summary.ci_low is not None
                else "-"
            )
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


def print_run(record: RunRecord, console: Console) -> None:
    console.print(scorecard_table(record))
    console.print(
        f"run [bold]{record.id}[/bold] · {record.status} · "
        f"datasets: {', '.join(record.datasets)} · "
        f"questions: {record.question_count} · errors: {record.error_count}"
    )

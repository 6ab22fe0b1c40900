"""Console tables for ``ragmeter compare``: paired comparison, methods table, Pareto frontier."""

from __future__ import annotations

from rich.table import Table

from ragmeter.models import MetricSummary, RunRecord
from ragmeter.reports.console import format_value
from ragmeter.scoring.compare import Comparison, MetricComparison
from ragmeter.scoring.pareto import ParetoPoint

_VERDICT = {
    "better": "[green]better[/green]",
    "worse": "[yellow]worse[/yellow]",
    "regression": "[bold red]REGRESSED[/bold red]",
    "no_difference": "[dim]=[/dim]",
    "not_paired": "[dim]unpaired[/dim]",
}


def _number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _p_value(value: float | None) -> str:
    if value is None:
        return "-"
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def comparison_table(comparison: Comparison, show_all: bool = False) -> Table:
    table = Table(
        title=f"{comparison.candidate} vs baseline {comparison.baseline} "
        f"({comparison.n_shared_cases} shared cases, alpha {comparison.alpha}, "
        f"margin {comparison.margin})",
        title_justify="left",
    )
    table.add_column("metric", overflow="fold")
    for column in ("base", "cand", "paired Δ", "95% CI", "effect", "p", "test"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    for row in comparison.rows:
        if not show_all and row.verdict in ("no_difference", "not_paired") and not row.delta:
            continue
        table.add_row(
            f"{row.metric} {'↑' if row.higher_is_better else '↓'}",
            _number(row.baseline),
            _number(row.candidate),
            _number(row.mean_diff),
            f"{_number(row.ci_low)}..{_number(row.ci_high)}" if row.ci_low is not None else "-",
            _number(row.effect_size, 2),
            _p_value(row.p_value),
            {"mcnemar_exact": "McN", "sign_flip_permutation": "perm"}.get(row.test, "-"),
            _VERDICT[row.verdict] + ("" if row.gated else "*"),
        )
    table.caption = (
        "paired Δ: mean of candidate - baseline over shared cases; effect: d_z (perm) or Δ "
        "(McNemar); McN: exact McNemar; perm: sign-flip permutation; *: not gated"
    )
    return table


def flips_lines(rows: list[MetricComparison], limit: int = 10) -> list[str]:
    lines = []
    for row in rows:
        if not (row.pass_to_fail or row.fail_to_pass):
            continue
        worse = ", ".join(row.pass_to_fail[:limit]) + (
            " ..." if len(row.pass_to_fail) > limit else ""
        )
        better = ", ".join(row.fail_to_pass[:limit]) + (
            " ..." if len(row.fail_to_pass) > limit else ""
        )
        lines.append(
            f"{row.metric}: pass→fail {len(row.pass_to_fail)} [{worse}] · "
            f"fail→pass {len(row.fail_to_pass)} [{better}]"
        )
    return lines


def methods_table(records: list[RunRecord], metrics: list[str]) -> Table:
    """Seed 001's methods table: one row a run, one column a metric (value and interval)."""
    table = Table(title="Methods", title_justify="left")
    table.add_column("run", no_wrap=True)
    table.add_column("weighted", justify="right", no_wrap=True)
    for name in metrics:
        table.add_column(name, justify="right", no_wrap=True)
    for record in records:
        cells = []
        for name in metrics:
            summary: MetricSummary | None = record.scorecard.get(name) if record.scorecard else None
            if summary is None or summary.value is None:
                cells.append("-")
            elif summary.ci_low is not None and summary.ci_high is not None:
                half = (summary.ci_high - summary.ci_low) / 2
                cells.append(f"{format_value(summary, summary.value)} ±{half:.3f}")
            else:
                cells.append(format_value(summary, summary.value))
        weighted = record.weighted_score.score if record.weighted_score else None
        table.add_row(f"{record.name} ({record.id})", _number(weighted), *cells)
    return table


def pareto_table(points: list[ParetoPoint], quality: str, dropped: list[str]) -> Table:
    title = f"Pareto: {quality} ↑ vs cost ↓ vs latency p50 ↓"
    if dropped:
        title += f" (left out, not measured for every run: {', '.join(dropped)})"
    table = Table(title=title, title_justify="left")
    for column in ("run", quality, "cost/query", "latency p50 ms", "frontier", "dominated by"):
        table.add_column(column, no_wrap=column != "dominated by")
    for point in points:
        table.add_row(
            point.run_id,
            _number(point.quality),
            _number(point.cost, 5),
            _number(point.latency, 1),
            "[green]●[/green]" if point.on_frontier else "",
            ", ".join(point.dominated_by),
        )
    return table

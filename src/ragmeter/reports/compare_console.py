"""Console tables for ``ragmeter compare``: paired comparison, methods table, Pareto frontier.

Metric names, run names and ids and case ids can come from run files and plugins: they are
sanitised (:func:`ragmeter.reports.terminal.inert`). Metric names and numbers are never wrapped
or cut; where the console is too narrow for the one-line table, a narrower layout is used
(:class:`ragmeter.reports.console.Fit`).
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from ragmeter.reports.console import Fit, format_total, format_value
from ragmeter.reports.html.format import change_text, change_unit
from ragmeter.reports.terminal import inert, inert_text
from ragmeter.run_record import MetricSummary, RunRecord
from ragmeter.scoring.compare import Comparison, MetricComparison
from ragmeter.scoring.pareto import ParetoPoint

_VERDICT = {
    "better": "[green]better[/green]",
    "worse": "[yellow]worse[/yellow]",
    "regression": "[bold red]REGRESSED[/bold red]",
    "no_difference": "[dim]=[/dim]",
    "not_paired": "[dim]unpaired[/dim]",
}
_TEST = {
    "mcnemar_exact": "McN",
    "sign_flip_permutation": "perm",
    "paired_stratified_bootstrap": "boot",
    "paired_quantile_bootstrap": "boot",
}
_CORRECTION = {
    "holm": "Holm correction",
    "bh": "Benjamini-Hochberg correction",
    "none": "no correction",
}


def _number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _p_value(value: float | None) -> str:
    if value is None:
        return "-"
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def _interval(row: MetricComparison) -> str:
    if row.ci_low is None or row.ci_high is None:
        return "-"
    if row.total_diff is not None:  # a total's change: the mean's interval x the shared cases
        low, high = row.ci_low * row.n_paired, row.ci_high * row.n_paired
        return f"{_signed(low)}..{_signed(high)}"
    return f"{_number(row.ci_low)}..{_number(row.ci_high)}"


def _value(row: MetricComparison, value: float | None) -> str:
    """A run's value: a total (a ``sum``) as a whole number, else three decimals."""
    if value is None or row.aggregation != "sum":
        return _number(value)
    return format_total(value)


def _signed(value: float) -> str:
    """A change of a total: ``+3``, ``-1``, ``+0.50``."""
    value = round(value, 9) + 0.0  # float noise, and no "-0"
    return f"{value:+.0f}" if value.is_integer() else f"{value:+.2f}"


def _paired(row: MetricComparison) -> str:
    """The paired difference: a total's change over the shared cases, a percentile's own
    change (``latency_p95``: the p95's), else the mean one; with its unit (``-1983.9 ms``)."""
    if row.total_diff is not None:
        return _signed(row.total_diff)
    unit = change_unit(row)
    return change_text(row.mean_diff, unit=unit) if unit else _number(row.mean_diff)


def _metric_label(row: MetricComparison) -> str:
    return f"{inert(row.metric)} {'↑' if row.higher_is_better else '↓'}"


def comparison_table(comparison: Comparison, show_all: bool = False) -> Fit:
    """One row a metric: both values, the paired difference with its interval, effect size,
    p value, test and verdict. Where that does not fit on one line, the metric name (never
    wrapped) and verdict share a column and the numbers wrap beside them."""
    title = (
        f"{inert(comparison.candidate)} vs baseline {inert(comparison.baseline)} "
        f"({comparison.n_shared_cases} shared cases, alpha {comparison.alpha}, "
        f"margin {comparison.margin}, {_CORRECTION[comparison.correction]})"
    )
    adjusted = f"p {comparison.correction}" if comparison.correction != "none" else "p adj"
    caption = (
        "paired Δ: mean of candidate - baseline over shared cases (for a total: the change "
        "in the total over them; for a percentile such as latency_p95: the change of that "
        "percentile over them), in the metric's unit; effect: d_z (perm) or Δ (McNemar); "
        "McN: exact McNemar; perm: sign-flip permutation; boot: paired bootstrap; "
        f"{adjusted}: p corrected over the gated metrics, which the verdict reads; MDE: "
        f"smallest change detectable at power {comparison.power:g} (per case); *: not gated"
    )
    wide = Table(title=title, title_justify="left", caption=caption)
    wide.add_column("metric", no_wrap=True)
    for column in ("base", "cand", "paired Δ", "95% CI", "effect", "p", adjusted, "MDE", "test"):
        wide.add_column(column, justify="right", no_wrap=True)
    wide.add_column("verdict", no_wrap=True)
    narrow = Table(title=title, title_justify="left", caption=caption)
    narrow.add_column("metric / verdict", no_wrap=True)
    narrow.add_column(
        f"base → cand · paired Δ [95% CI] · effect · p ({adjusted}; test) · MDE", ratio=1
    )
    for row in comparison.rows:
        quiet = row.verdict in ("no_difference", "not_paired") and not row.delta
        if not show_all and quiet and not row.gate_failure:
            continue
        verdict = _VERDICT[row.verdict] + ("" if row.gated else "*")
        if row.gate_failure:  # a gate cannot pass on it: shown whatever else it says
            verdict = f"[bold red]NOT COMPARED[/bold red] ({_coverage(row)})"
        test = _TEST.get(row.test, "-")
        wide.add_row(
            _metric_label(row),
            _value(row, row.baseline),
            _value(row, row.candidate),
            _paired(row),
            _interval(row),
            _number(row.effect_size, 2),
            _p_value(row.p_value),
            _p_value(row.p_adjusted),
            _number(row.mde),
            test,
            verdict,
        )
        numbers = (
            f"{_value(row, row.baseline)} → {_value(row, row.candidate)} · "
            f"Δ {_paired(row)} [{_interval(row)}] · effect {_number(row.effect_size, 2)} · "
            f"p {_p_value(row.p_value)} ({_p_value(row.p_adjusted)}; {test}) · "
            f"MDE {_number(row.mde)}"
        )
        narrow.add_row(f"{_metric_label(row)}\n{verdict}", numbers)
    return Fit(wide, narrow)


def _coverage(row: MetricComparison) -> str:
    if row.coverage is None:
        return f"{row.n_paired} paired"
    return f"{row.n_paired} paired, coverage {row.coverage:.2f}"


def one_sided_lines(comparison: Comparison) -> list[Text]:
    """The metrics in one run only (never compared), one line a run (plain text, sanitised)."""
    lines = []
    for side, metrics in (
        ("baseline", comparison.only_in_baseline),
        ("candidate", comparison.only_in_candidate),
    ):
        if metrics:
            shown = ", ".join(f"{m.metric} {_number(m.value)}" for m in metrics)
            lines.append(inert_text(f"only in the {side} (not compared): {shown}"))
    return lines


def gate_failure_lines(comparisons: list[Comparison]) -> list[Text]:
    """``compare``: the gated metrics a gate cannot pass on, one line a candidate and reason."""
    lines = []
    for comparison in comparisons:
        by_reason: dict[str, list[str]] = {}
        for metric, reason in comparison.gate_failures:
            by_reason.setdefault(reason, []).append(metric)
        for reason, metrics in by_reason.items():
            lines.append(
                Text("not compared:", style="red").append(
                    f" {inert(comparison.candidate, markup=False)} vs "
                    f"{inert(comparison.baseline, markup=False)}: "
                    f"{', '.join(inert(m, markup=False) for m in metrics)}: "
                    f"{inert(reason, markup=False)}",
                    style="default",
                )
            )
    return lines


def flips_lines(rows: list[MetricComparison], limit: int = 10) -> list[Text]:
    """The cases that flipped on each 0/1 metric, one line a metric (plain text, sanitised:
    prints the same with or without markup)."""
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
            inert_text(
                f"{row.metric}: pass→fail {len(row.pass_to_fail)} [{worse}] · "
                f"fail→pass {len(row.fail_to_pass)} [{better}]"
            )
        )
    return lines


def _method_cell(summary: MetricSummary | None, separator: str = " ") -> str:
    if summary is None or summary.value is None:
        return "-"
    if summary.ci_low is not None and summary.ci_high is not None:
        half = (summary.ci_high - summary.ci_low) / 2
        return f"{format_value(summary, summary.value)}{separator}±{half:.3f}"
    return format_value(summary, summary.value)


def methods_table(records: list[RunRecord], metrics: list[str]) -> Fit:
    """Seed 001's methods table: one row a run, one column a metric (value and interval).
    Too wide for the console, it turns: one row a metric, one column a run; and where even
    that does not fit, one row a metric and run. Names and numbers are never cut."""
    summaries = [
        {name: record.scorecard.get(name) if record.scorecard else None for name in metrics}
        for record in records
    ]
    weighted = [
        _number(record.weighted_score.score if record.weighted_score else None)
        for record in records
    ]
    labels = [f"{inert(record.name)} ({inert(record.id)})" for record in records]
    # the cases each run failed on: a value measured on fewer cases is not the same number
    failed = [_errors(record.error_count, record.question_count) for record in records]

    wide = Table(title="Methods", title_justify="left")
    wide.add_column("run", no_wrap=True)
    wide.add_column("errors", justify="right", no_wrap=True)
    wide.add_column("weighted", justify="right", no_wrap=True)
    for name in metrics:
        wide.add_column(inert(name), justify="right", no_wrap=True)
    for label, errors, score, row in zip(labels, failed, weighted, summaries, strict=True):
        wide.add_row(label, errors, score, *(_method_cell(row[name]) for name in metrics))

    turned = Table(title="Methods", title_justify="left")
    turned.add_column("metric", no_wrap=True)
    for record in records:
        turned.add_column(
            f"{inert(record.name)}\n({inert(record.id)})", justify="right", overflow="fold"
        )
    turned.add_row("errors", *failed)
    turned.add_row("weighted", *weighted)
    for name in metrics:
        turned.add_row(inert(name), *(_method_cell(row[name], "\n") for row in summaries))

    long = Table(title="Methods", title_justify="left")
    long.add_column("metric", no_wrap=True)
    long.add_column("run", overflow="fold", ratio=1, min_width=12)
    long.add_column("value", justify="right")
    for position, name in enumerate(["errors", "weighted", *metrics]):
        for index, label in enumerate(labels):
            cell = (
                [failed, weighted][position][index]
                if position < 2
                else _method_cell(summaries[index][name])
            )
            long.add_row(
                inert(name) if index == 0 else "", label, cell, end_section=index == len(labels) - 1
            )
    return Fit(wide, turned, long)


def _errors(errors: int | None, cases: int | None) -> str:
    return "-" if errors is None or cases is None else f"{errors}/{cases}"


def pareto_table(points: list[ParetoPoint], quality: str, dropped: list[str]) -> Table:
    title = f"Pareto: {inert(quality)} ↑ vs cost ↓ vs latency p50 ↓"
    if dropped:
        title += f" (left out, not measured for every run: {', '.join(map(inert, dropped))})"
    table = Table(title=title, title_justify="left")
    for column in ("run", inert(quality), "errors", "coverage", "cost/query", "latency p50 ms"):
        table.add_column(column, no_wrap=True)
    table.add_column("frontier", no_wrap=True)
    table.add_column("dominated by", overflow="fold")
    for point in points:
        table.add_row(
            inert(point.run_id),
            _number(point.quality),
            _errors(point.errors, point.cases),
            _number(point.coverage, 2),
            _number(point.cost, 5),
            _number(point.latency, 1),
            "[green]●[/green]" if point.on_frontier else "",
            inert(point.note) if point.note else ", ".join(map(inert, point.dominated_by)),
        )
    return table

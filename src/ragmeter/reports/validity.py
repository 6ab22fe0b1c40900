"""The validity report as tables: the full one ``ragmeter validity`` prints, and the short
section ``ragmeter show`` adds when a run has one. Labels paths, case ids and metric names are
printed inert (they come from files the user was given)."""

from __future__ import annotations

from pydantic import ValidationError
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ragmeter.errors import StoreError
from ragmeter.reports.terminal import inert, inert_text
from ragmeter.scoring.validity_report import (
    PRIMARY,
    MetricValidity,
    Statistic,
    ValidityReport,
    reports_from_rows,
)
from ragmeter.store.sqlite import RunStore

# column headings of each statistic
NAMES = {
    "auc": "AUC",
    "balanced_accuracy": "bal. acc.",
    "kappa": "kappa",
    "base_rate": "base rate",
    "spearman": "Spearman rho",
    "kendall_tau_b": "Kendall tau-b",
}
COLUMNS = {
    "binary": ("auc", "balanced_accuracy", "kappa", "base_rate"),
    "graded": ("spearman", "kendall_tau_b"),
}


def stored_reports(run_store: RunStore, run_id: str) -> list[ValidityReport]:
    """The run's stored validity reports, one per labels file, newest first."""
    try:
        return reports_from_rows(run_store.get_validity(run_id))
    except (ValidationError, ValueError, KeyError) as exc:
        raise StoreError(
            f"run {run_id} in {run_store.path}: a stored validity report no longer reads "
            f"({str(exc).splitlines()[0]}); run `ragmeter validity` again"
        ) from None


def _number(value: float) -> str:
    return f"{round(value, 3) + 0.0:.3f}"  # + 0.0: no "-0.000"


def value_text(statistic: Statistic | None) -> str:
    if statistic is None or statistic.value is None:
        return "-"
    return _number(statistic.value)


def interval_text(statistic: Statistic | None) -> str:
    if statistic is None or statistic.ci_low is None or statistic.ci_high is None:
        return ""
    return f"[{_number(statistic.ci_low)}, {_number(statistic.ci_high)}]"


def _cell(statistic: Statistic | None) -> str:
    interval = interval_text(statistic)
    return f"{value_text(statistic)} {interval}".strip()


def _left_out(result: MetricValidity) -> str:
    parts = [
        f"{count} {what}"
        for count, what in (
            (result.n_skipped, "skipped"),
            (result.n_failed, "failed"),
            (result.n_unscored, "unscored"),
        )
        if count
    ]
    return ", ".join(parts) or "-"


def heading(report: ValidityReport) -> Text:
    """What was measured against what: the labels file, its form and counts."""
    text = Text("Validity against ", style="bold")
    text.append_text(inert_text(report.labels_path, style="bold"))
    text.append(
        f" ({report.label_form} labels, {report.n_labels} labels, sha256 "
        f"{report.labels_sha256[:12]}; run {report.run_id})"
    )
    return text


def unknown_line(report: ValidityReport) -> Text | None:
    if not report.n_unknown:
        return None
    shown = ", ".join(report.unknown_case_ids)
    more = ", ..." if report.n_unknown > len(report.unknown_case_ids) else ""
    return inert_text(
        f"{report.n_unknown} labels name cases not in the run (left out): {shown}{more}",
        style="yellow",
    )


def validity_table(report: ValidityReport) -> Table:
    """One row a statistic of each measured metric, with its interval; the metric's counts on
    its first row. Balanced accuracy and kappa name the threshold they were taken at."""
    level = round(report.level * 100)
    table = Table(title=f"{level}% bootstrap intervals, {report.resamples} resamples of the cases")
    table.add_column("metric", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    table.add_column("left out")
    table.add_column("statistic", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column(f"{level}% CI", no_wrap=True)
    for result in report.metrics:
        if not result.measured:
            continue
        arrow = "↑" if result.higher_is_better else "↓"
        first = [f"{inert(result.metric)} {arrow}", f"{result.n_scored}/{result.n_labelled}"]
        first.append(_left_out(result))
        shown = [name for name in COLUMNS[report.label_form] if name in result.statistics]
        for position, name in enumerate(shown):
            statistic = result.statistics[name]
            label = NAMES[name]
            if name in ("balanced_accuracy", "kappa") and result.threshold is not None:
                label += f" ({result.threshold_op} {result.threshold:g})"
            cells = first if position == 0 else ["", "", ""]
            table.add_row(*cells, label, value_text(statistic), interval_text(statistic))
        table.add_section()
    return table


def thresholds_line(report: ValidityReport) -> Text | None:
    """The rule behind each threshold (the run's target, or the midpoint of the scale), with
    the metrics it applies to."""
    measured = [m for m in report.metrics if m.measured]
    if report.label_form != "binary" or not measured:
        return None
    rules: dict[str, list[str]] = {}
    for m in measured:
        rule = (
            f"{m.threshold_op} {m.threshold:g} ({m.threshold_rule})"
            if m.threshold is not None
            else "none (no scale and no target: AUC only)"
        )
        rules.setdefault(rule, []).append(m.metric)
    text = "; ".join(f"{rule}: {', '.join(names)}" for rule, names in rules.items())
    return inert_text(f"thresholds: {text}", style="dim")


def not_measured_line(report: ValidityReport) -> Text | None:
    missing = [m for m in report.metrics if not m.measured]
    if not missing:
        return None
    text = Text(f"not measured ({len(missing)}): ", style="dim")
    text.append_text(inert_text("; ".join(f"{m.metric}: {m.reason}" for m in missing), style="dim"))
    return text


def validity_report(report: ValidityReport) -> list[RenderableType]:
    """Everything ``ragmeter validity`` prints about a report, in order."""
    found: list[RenderableType | None] = [
        heading(report),
        unknown_line(report),
        validity_table(report) if any(m.measured for m in report.metrics) else None,
        thresholds_line(report),
        not_measured_line(report),
    ]
    return [part for part in found if part is not None]


def validity_section(reports: list[ValidityReport]) -> Table:
    """``ragmeter show``'s short section: each labels file's headline statistic per metric."""
    table = Table("labels", "metric", "statistic", "value", "95% CI", "n", title="Validity")
    for report in reports:
        name = PRIMARY[report.label_form]
        measured = [m for m in report.metrics if m.measured]
        # two versions of one labels file are told apart by their content's hash
        labels = f"{inert(report.labels_path)} ({report.labels_sha256[:8]})"
        for result in measured:
            statistic = result.statistics.get(name)
            table.add_row(
                labels,
                inert(result.metric),
                NAMES[name],
                value_text(statistic),
                interval_text(statistic),
                str(result.n_scored),
            )
        if len(measured) < len(report.metrics):
            count = len(report.metrics) - len(measured)
            table.add_row(labels, f"({count} not measured)", "", "", "", "")
    return table

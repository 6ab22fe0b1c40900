"""Formatting shared by the HTML reports (:mod:`ragmeter.reports.html`) and the web UI
(:mod:`ragmeter.web`), so the two show the same text for the same number: the escaper, plain
numbers, p values, a metric's interval, and a comparison row's change with its interval (a
total's as the console shows it, :mod:`ragmeter.reports.compare_console`).

:func:`esc` is the one escaper of both: control characters, terminal escape sequences and bidi
overrides removed (:func:`ragmeter.reports.terminal.strip_unsafe`), then ``& < > " '`` escaped.
"""

from __future__ import annotations

import html
import math
from typing import TypeGuard

from ragmeter.reports.console import format_value
from ragmeter.reports.terminal import strip_unsafe
from ragmeter.run_record import MetricSummary
from ragmeter.scoring.compare import Comparison, MetricComparison

__all__ = [
    "CORRECTIONS",
    "change",
    "change_interval_text",
    "change_text",
    "change_unit",
    "correction_label",
    "esc",
    "is_finite",
    "metric_interval",
    "number",
    "p_text",
]

CORRECTIONS = {
    "holm": "Holm correction",
    "bh": "Benjamini-Hochberg correction",
    "none": "no correction",
}


def esc(value: object) -> str:
    """``value`` as HTML text or a quoted attribute value (``None`` is empty)."""
    return html.escape(strip_unsafe("" if value is None else str(value)), quote=True)


def is_finite(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and math.isfinite(value)


def number(value: float | None, digits: int = 3) -> str:
    """``value`` with ``digits`` decimals; ``-`` for none, ``non-finite`` for Inf or NaN."""
    if value is None:
        return "-"
    if not math.isfinite(value):
        return "non-finite"
    return f"{value:.{digits}f}"


def p_text(value: float | None) -> str:
    if value is None:
        return "-"
    if not math.isfinite(value):
        return "non-finite"
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def metric_interval(summary: MetricSummary, separator: str = " to ") -> str:
    """A metric's 95% interval in its kind's format (``format_value``)."""
    if summary.ci_low is None or summary.ci_high is None:
        return "-"
    low, high = format_value(summary, summary.ci_low), format_value(summary, summary.ci_high)
    return f"{low}{separator}{high}"


def correction_label(comparison: Comparison) -> str:
    """The corrected p value's column: ``p holm``, ``p bh`` (``p adj`` without a correction)."""
    return f"p {comparison.correction}" if comparison.correction != "none" else "p adj"


def change(row: MetricComparison) -> tuple[float | None, float | None, float | None]:
    """The paired change and its 95% interval: for a total (aggregation ``sum``) the change of
    the total over the shared cases and the mean's interval times the shared cases, as the
    console shows it."""
    if row.total_diff is not None:
        scale = float(row.n_paired)
        low = row.ci_low * scale if row.ci_low is not None else None
        high = row.ci_high * scale if row.ci_high is not None else None
        return row.total_diff, low, high
    return row.mean_diff, row.ci_low, row.ci_high


def change_unit(row: MetricComparison) -> str:
    """The unit a row's change is in: ``ms`` for a duration (a latency percentile), ``USD``
    for a cost, a count's own unit; empty for a 0-1 or score metric."""
    if row.metric_kind == "duration":
        return "ms"
    if row.metric_kind == "cost":
        return "USD"
    if row.metric_kind in ("binary", "proportion", "score"):
        return ""
    return row.unit or ""


def change_text(value: float | None, total: bool = False, unit: str = "") -> str:
    """A change, signed: a total's as ``+3`` / ``-0.50``, a duration's as ``-1983.9 ms``, a
    cost's as ``+0.00012 USD``, a mean's with three decimals (and ``unit``)."""
    if value is None:
        return "-"
    if not math.isfinite(value):
        return "non-finite"
    suffix = f" {unit}" if unit else ""
    if total:
        value = round(value, 9) + 0.0  # float noise, and no "-0"
        return (f"{value:+.0f}" if value.is_integer() else f"{value:+.2f}") + suffix
    digits = {"ms": 1, "USD": 5}.get(unit, 3)
    text = f"{value:+.{digits}f}"
    if float(text) == 0.0:
        text = "+" + text.lstrip("+-")  # no "-0.000"
    return text + suffix


def change_interval_text(row: MetricComparison) -> str:
    """The change's interval, its unit written once (``-2100.0 … -1800.5 ms``)."""
    _, low, high = change(row)
    if low is None or high is None:
        return "-"
    total, unit = row.total_diff is not None, change_unit(row)
    text = f"{change_text(low, total, unit)} … {change_text(high, total, unit)}"
    return text.replace(f" {unit} …", " …", 1) if unit else text

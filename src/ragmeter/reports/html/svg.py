"""Hand-rolled inline SVG charts for the HTML reports (no charting library): a value with its
interval on the metric's scale, a histogram, a paired difference with its interval around 0
and a Pareto scatter. Every label goes through :func:`ragmeter.reports.html.page.esc`; colours
come from the page's CSS classes, so the charts follow the light or dark theme."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ragmeter.reports.html.format import esc

__all__ = ["delta_bar", "histogram", "interval_bar", "pareto_chart"]


def _num(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def interval_bar(
    value: float | None,
    low: float | None,
    high: float | None,
    scale: tuple[float, float] | None,
    label: str,
    width: int = 160,
) -> str:
    """The value (a tick) and its 95% interval (a band) on the metric's scale; without a
    declared scale, on 0 .. the larger of the value and the interval's top."""
    if value is None:
        return ""
    top = max(v for v in (value, high, 0.0) if v is not None)
    lo, hi = scale if scale is not None else (min(0.0, value, low or 0.0), top * 1.1 or 1.0)
    span = (hi - lo) or 1.0

    def x(v: float) -> float:
        return 2 + (min(max(v, lo), hi) - lo) / span * (width - 4)

    parts = [
        f'<svg class="ibar" width="{width}" height="14" viewBox="0 0 {width} 14" role="img" '
        f'aria-label="{esc(label)}"><title>{esc(label)}</title>',
        f'<rect class="track" x="1" y="4" width="{width - 2}" height="6" rx="3"/>',
    ]
    if low is not None and high is not None:
        parts.append(
            f'<rect class="ci" x="{x(low):.1f}" y="2" width="{max(x(high) - x(low), 1.5):.1f}" '
            'height="10" rx="2"/>'
        )
    parts.append(f'<rect class="val" x="{x(value) - 1.5:.1f}" y="0" width="3" height="14"/>')
    parts.append("</svg>")
    return "".join(parts)


def delta_bar(
    mean: float | None, low: float | None, high: float | None, bound: float, label: str
) -> str:
    """A paired difference and its interval on ``-bound .. bound`` with 0 marked; the band is
    green or red when the interval excludes 0 (``better`` / ``worse`` in the metric's
    direction is decided by the caller through ``label``)."""
    width = 120
    if mean is None:
        return ""
    bound = bound or 1.0

    def x(v: float) -> float:
        return 2 + (min(max(v, -bound), bound) + bound) / (2 * bound) * (width - 4)

    parts = [
        f'<svg class="dbar" width="{width}" height="14" viewBox="0 0 {width} 14" role="img" '
        f'aria-label="{esc(label)}"><title>{esc(label)}</title>',
        f'<rect class="track" x="1" y="4" width="{width - 2}" height="6" rx="3"/>',
    ]
    if low is not None and high is not None:
        parts.append(
            f'<rect class="ci" x="{x(low):.1f}" y="2" width="{max(x(high) - x(low), 1.5):.1f}" '
            'height="10" rx="2"/>'
        )
    parts.append(f'<line class="zero" x1="{x(0):.1f}" x2="{x(0):.1f}" y1="0" y2="14"/>')
    parts.append(f'<rect class="val" x="{x(mean) - 1.5:.1f}" y="0" width="3" height="14"/>')
    parts.append("</svg>")
    return "".join(parts)


def histogram(values: Sequence[float], label: str, unit: str = "ms", bins: int = 24) -> str:
    """Counts of ``values`` in equal bins from the smallest to the 99th percentile (the last
    bin also holds anything above), with axis labels; empty for no values."""
    if not values:
        return ""
    ordered = sorted(values)
    low = ordered[0]
    high = ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]
    if high <= low:
        high = low + 1.0
    width, height, pad_left, pad_bottom = 640, 180, 40, 34
    inner_w, inner_h = width - pad_left - 10, height - pad_bottom - 10
    counts = [0] * bins
    step = (high - low) / bins
    for value in ordered:
        counts[min(int((value - low) / step), bins - 1)] += 1
    peak = max(counts)
    bar_w = inner_w / bins
    parts = [
        f'<svg class="hist" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{esc(label)}"><title>{esc(label)}</title>',
        f'<line class="axis" x1="{pad_left}" y1="{10 + inner_h}" x2="{width - 10}" '
        f'y2="{10 + inner_h}"/>',
        f'<line class="axis" x1="{pad_left}" y1="10" x2="{pad_left}" y2="{10 + inner_h}"/>',
    ]
    for index, count in enumerate(counts):
        if not count:
            continue
        h = count / peak * inner_h
        start, end = low + index * step, low + (index + 1) * step
        more = " or more" if index == bins - 1 else ""
        parts.append(
            f'<rect class="hbar" x="{pad_left + index * bar_w + 1:.1f}" y="{10 + inner_h - h:.1f}" '
            f'width="{max(bar_w - 2, 1):.1f}" height="{h:.1f}"><title>{_num(start)}-{_num(end)}'
            f"{more} {esc(unit)}: {count} cases</title></rect>"
        )
    parts += [
        f'<text x="{pad_left}" y="{height - 18}" text-anchor="start">{_num(low)} '
        f"{esc(unit)}</text>",
        f'<text x="{width - 10}" y="{height - 18}" text-anchor="end">{_num(high)} {esc(unit)} '
        "(p99; higher in last bin)</text>",
        f'<text x="{pad_left - 4}" y="16" text-anchor="end">{peak}</text>',
        f'<text x="{pad_left - 4}" y="{10 + inner_h}" text-anchor="end">0</text>',
        f'<text x="{pad_left + inner_w / 2:.0f}" y="{height - 2}" text-anchor="middle">cases by '
        f"{esc(label)}</text>",
        "</svg>",
    ]
    return "".join(parts)


def pareto_chart(
    points: Sequence[tuple[str, float, float, bool]], x_label: str, y_label: str
) -> str:
    """Runs as points (label, x lower-is-better, y higher-is-better, on the frontier), the
    frontier joined by a line; axes labelled."""
    if not points:
        return ""
    width, height, pad = 640, 300, 56
    xs, ys = [p[1] for p in points], [p[2] for p in points]
    x_lo, x_hi = min(xs), max(xs)
    y_lo, y_hi = min(ys), max(ys)
    x_span = (x_hi - x_lo) or (abs(x_hi) or 1.0)
    y_span = (y_hi - y_lo) or (abs(y_hi) or 1.0)
    x_lo, x_hi = x_lo - 0.1 * x_span, x_hi + 0.1 * x_span
    y_lo, y_hi = y_lo - 0.1 * y_span, y_hi + 0.1 * y_span

    def px(v: float) -> float:
        return pad + (v - x_lo) / (x_hi - x_lo) * (width - 2 * pad)

    def py(v: float) -> float:
        return height - pad + -(v - y_lo) / (y_hi - y_lo) * (height - 2 * pad)

    parts = [
        f'<svg class="pareto" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="Pareto chart: {esc(y_label)} against {esc(x_label)}">'
        f"<title>Pareto chart: {esc(y_label)} against {esc(x_label)}</title>",
        f'<line class="axis" x1="{pad}" y1="{height - pad}" x2="{width - pad}" '
        f'y2="{height - pad}"/>',
        f'<line class="axis" x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}"/>',
    ]
    frontier = sorted((p for p in points if p[3]), key=lambda p: p[1])
    if len(frontier) > 1:
        line = " ".join(f"{px(p[1]):.1f},{py(p[2]):.1f}" for p in frontier)
        parts.append(f'<polyline class="frontier" points="{line}"/>')
    for label, x_value, y_value, on in points:
        css_class = "pt-front" if on else "pt-dom"
        state = "on the frontier" if on else "dominated"
        parts.append(
            f'<circle class="{css_class}" cx="{px(x_value):.1f}" cy="{py(y_value):.1f}" r="6">'
            f"<title>{esc(label)}: {esc(y_label)} {y_value:.4g}, {esc(x_label)} {x_value:.4g} "
            f"({state})</title></circle>"
            f'<text x="{px(x_value) + 9:.1f}" y="{py(y_value) - 8:.1f}">{esc(label)}</text>'
        )
    parts += [
        f'<text x="{width / 2:.0f}" y="{height - 14}" text-anchor="middle">{esc(x_label)} '
        "(lower is better)</text>",
        f'<text x="14" y="{height / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {height / 2:.0f})">{esc(y_label)} (higher is better)</text>',
        f'<text x="{pad}" y="{height - pad + 14}" text-anchor="middle">{x_lo:.4g}</text>',
        f'<text x="{width - pad}" y="{height - pad + 14}" text-anchor="middle">{x_hi:.4g}</text>',
        f'<text x="{pad - 4}" y="{height - pad}" text-anchor="end">{y_lo:.4g}</text>',
        f'<text x="{pad - 4}" y="{pad + 4}" text-anchor="end">{y_hi:.4g}</text>',
        "</svg>",
    ]
    return "".join(parts)

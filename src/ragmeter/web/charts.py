"""Hand-rolled inline SVG charts: the latency histogram and the Pareto chart.

No script, no external file: every label is escaped text, colours come from the stylesheet's
classes (presentation only, so the Content-Security-Policy needs no inline style).
"""

from __future__ import annotations

import math

from ragmeter.reports.html.format import esc
from ragmeter.scoring.pareto import ParetoPoint

WIDTH, HEIGHT = 640, 240
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 14, 40


def _tick(value: float) -> str:
    if value == 0 or abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 1:
        return f"{value:.1f}"
    return f"{value:.3g}"


def histogram_bins(values: list[float], bins: int = 20) -> list[tuple[float, float, int]]:
    """(low, high, count) of ``bins`` equal bins from the smallest to the largest value."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high <= low:
        return [(low, high, len(values))]
    width = (high - low) / bins
    counts = [0] * bins
    for value in values:
        counts[min(bins - 1, int((value - low) / width))] += 1
    return [(low + i * width, low + (i + 1) * width, n) for i, n in enumerate(counts)]


def latency_histogram(bins: list[tuple[float, float, int]], label: str = "latency (ms)") -> str:
    """Bars of ``histogram_bins``' bins."""
    if not bins:
        return '<p class="muted">No latencies recorded.</p>'
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    peak = max(n for _, _, n in bins) or 1
    bar_w = plot_w / len(bins)
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}"'
        f' height="{HEIGHT}" aria-labelledby="lat-title">',
        f'<title id="lat-title">Histogram of {esc(label)}: {sum(n for _, _, n in bins)} answers,'
        f" {_tick(bins[0][0])} to {_tick(bins[-1][1])}</title>",
    ]
    for index, (low, high, count) in enumerate(bins):
        h = plot_h * count / peak
        x = LEFT + index * bar_w
        parts.append(
            f'<rect class="bar" x="{x + 1:.1f}" y="{TOP + plot_h - h:.1f}"'
            f' width="{max(bar_w - 2, 1):.1f}" height="{h:.1f}">'
            f"<title>{_tick(low)}-{_tick(high)} ms: {count}</title></rect>"
        )
    base = TOP + plot_h
    parts += [
        f'<line class="axis" x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{base}"/>',
        f'<text x="{LEFT}" y="{base + 16}" text-anchor="middle">{_tick(bins[0][0])}</text>',
        f'<text x="{WIDTH - RIGHT}" y="{base + 16}" text-anchor="end">{_tick(bins[-1][1])}</text>',
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 6}" text-anchor="middle">{esc(label)}</text>',
        f'<text x="{LEFT - 6}" y="{TOP + 10}" text-anchor="end">{peak}</text>',
        f'<text x="{LEFT - 6}" y="{base}" text-anchor="end">0</text>',
        "</svg>",
    ]
    return "".join(parts)


def pareto_chart(points: list[ParetoPoint], quality: str) -> str:
    """Quality (up) against latency p50 or cost per query (left is better); frontier points
    filled and joined, dominated ones hollow."""
    axis = "latency" if all(p.latency is not None for p in points) else "cost"
    shown = [p for p in points if p.quality is not None and getattr(p, axis) is not None]
    if not shown:
        return (
            '<p class="muted">No Pareto chart: the runs lack a quality value or both latency'
            " and cost.</p>"
        )
    xs = [float(getattr(p, axis)) for p in shown]
    ys = [float(p.quality or 0.0) for p in shown]
    x_low, x_high = min(xs), max(xs)
    y_low, y_high = min(ys), max(ys)
    if math.isclose(x_low, x_high):
        x_low, x_high = x_low - 1, x_high + 1
    if math.isclose(y_low, y_high):
        y_low, y_high = y_low - 0.05, y_high + 0.05
    plot_w, plot_h = WIDTH - LEFT - RIGHT - 90, HEIGHT - TOP - BOTTOM

    def x_of(value: float) -> float:
        return LEFT + 20 + (plot_w - 40) * (value - x_low) / (x_high - x_low)

    def y_of(value: float) -> float:
        return TOP + 10 + (plot_h - 20) * (1 - (value - y_low) / (y_high - y_low))

    x_label = "latency p50 (ms)" if axis == "latency" else "cost per query (USD)"
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}"'
        f' height="{HEIGHT}" aria-labelledby="pareto-title">',
        f'<title id="pareto-title">Pareto chart: {esc(quality)} against {esc(x_label)};'
        f" {sum(p.on_frontier for p in shown)} of {len(shown)} runs on the frontier</title>",
    ]
    frontier = sorted((p for p in shown if p.on_frontier), key=lambda p: float(getattr(p, axis)))
    if len(frontier) > 1:
        path = " ".join(
            f"{x_of(float(getattr(p, axis))):.1f},{y_of(float(p.quality or 0)):.1f}"
            for p in frontier
        )
        parts.append(f'<polyline class="frontier" points="{path}"/>')
    for point, x, y in zip(shown, xs, ys, strict=True):
        css = "point" if point.on_frontier else "point off"
        state = "on the frontier" if point.on_frontier else "dominated"
        parts.append(
            f'<circle class="{css}" cx="{x_of(x):.1f}" cy="{y_of(y):.1f}" r="6">'
            f"<title>{esc(point.run_id)}: {esc(quality)} {y:.3f}, {esc(x_label)} {_tick(x)},"
            f" {state}</title></circle>"
            f'<text x="{x_of(x) + 9:.1f}" y="{y_of(y) + 4:.1f}">{esc(point.run_id)}</text>'
        )
    base = TOP + plot_h
    parts += [
        f'<line class="axis" x1="{LEFT}" y1="{base}" x2="{LEFT + plot_w}" y2="{base}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{base}"/>',
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 6}" text-anchor="middle">'
        f"{esc(x_label)} (lower is better)</text>",
        f'<text x="{LEFT - 6}" y="{y_of(y_high) + 4:.1f}" text-anchor="end">{y_high:.3f}</text>',
        f'<text x="{LEFT - 6}" y="{y_of(y_low) + 4:.1f}" text-anchor="end">{y_low:.3f}</text>',
        f'<text x="{x_of(x_low):.1f}" y="{base + 16}" text-anchor="middle">{_tick(x_low)}</text>',
        f'<text x="{x_of(x_high):.1f}" y="{base + 16}" text-anchor="middle">{_tick(x_high)}</text>',
        f'<text x="8" y="{TOP + 4}" text-anchor="start">{esc(quality)} ↑</text>',
        "</svg>",
    ]
    return "".join(parts)

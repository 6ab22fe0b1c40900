"""Pareto frontier of runs: quality (higher is better) against cost and latency (lower).

A run whose quality is measured on less than the coverage floor of its cases (``comparable``
false, e.g. 5 of 12 cases failed) is left off the frontier: it neither dominates nor is
dominated, and ``note`` says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ParetoPoint:
    run_id: str
    quality: float | None
    cost: float | None = None
    latency: float | None = None
    on_frontier: bool = False
    dominated_by: list[str] = field(default_factory=list)
    errors: int | None = None  # cases the target failed on
    cases: int | None = None  # cases asked
    coverage: float | None = None  # the share of the cases the quality is measured on
    comparable: bool = True
    note: str | None = None  # why the run is not comparable


def _oriented(point: ParetoPoint, dims: list[str]) -> tuple[float, ...]:
    """Every dimension as "higher is better"."""
    signs = {"quality": 1.0, "cost": -1.0, "latency": -1.0}
    return tuple(signs[d] * float(getattr(point, d)) for d in dims)


def dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    """a is at least as good as b everywhere and strictly better somewhere."""
    return all(x >= y for x, y in zip(a, b, strict=True)) and any(
        x > y for x, y in zip(a, b, strict=True)
    )


def pareto_frontier(points: list[ParetoPoint]) -> tuple[list[ParetoPoint], list[str]]:
    """Mark the points on the frontier. A dimension missing for any point is left out for all
    (returned as the second value); a point without quality is never on the frontier."""
    dims = ["quality"] + [
        d for d in ("cost", "latency") if points and all(getattr(p, d) is not None for p in points)
    ]
    dropped = [d for d in ("cost", "latency") if d not in dims]
    scored = [p for p in points if p.quality is not None and p.comparable]
    for point in points:
        point.on_frontier = False
        point.dominated_by = []
    for point in scored:
        mine = _oriented(point, dims)
        point.dominated_by = [
            other.run_id
            for other in scored
            if other is not point and dominates(_oriented(other, dims), mine)
        ]
        point.on_frontier = not point.dominated_by
    return points, dropped

"""``compare --pareto`` and the methods table: the points of each run, the headline metrics."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ragmeter.config import DEFAULT_COVERAGE_FLOOR
from ragmeter.run_record import RunRecord
from ragmeter.scoring.pareto import ParetoPoint, pareto_frontier

# the methods table of `compare` shows these when the runs have them
HEADLINE_METRICS = (
    "recall_at_5",
    "ndcg_at_5",
    "mrr",
    "token_f1",
    "unanswerable_accuracy",
    "latency_p50",
)
DEFAULT_QUALITY = "weighted_score"


def headline_metrics(record: RunRecord, limit: int = 6) -> list[str]:
    """The metrics the methods table shows by default: the headline ones the run has, else its
    first ``limit`` metrics."""
    if record.scorecard is None:
        return []
    present = [name for name in HEADLINE_METRICS if record.scorecard.get(name) is not None]
    return present or [m.name for m in record.scorecard.metrics[:limit]]


def _value(record: RunRecord, name: str) -> float | None:
    summary = record.scorecard.get(name) if record.scorecard else None
    return summary.value if summary is not None else None


def quality_coverage(record: RunRecord, quality: str | None) -> tuple[float | None, str]:
    """The share of the run's cases its quality axis is measured on, and how to say it: the
    metric's coverage, or for the weighted score the share of the cases answered."""
    if quality:
        summary = record.scorecard.get(quality) if record.scorecard else None
        if summary is None or summary.coverage is None:
            return None, ""
        return summary.coverage, f"{quality} measured on {summary.coverage:.0%} of the cases"
    if not record.question_count:
        return None, ""
    answered = record.question_count - record.error_count
    return answered / record.question_count, (
        f"{answered} of {record.question_count} cases answered"
    )


def pareto_points(
    records: list[RunRecord],
    quality: str | None,
    coverage_floor: float = DEFAULT_COVERAGE_FLOOR,
) -> tuple[list[ParetoPoint], list[str]]:
    """Each run's quality (``quality``, or the weighted score), cost per query and latency p50,
    marked on or off the frontier; second, the axes left out (not measured for every run). A
    run whose quality is measured on less than ``coverage_floor`` of its cases is not
    comparable: off the frontier, dominating none."""
    points = []
    for record in records:
        coverage, said = quality_coverage(record, quality)
        comparable = coverage is None or coverage >= coverage_floor
        points.append(
            ParetoPoint(
                run_id=record.id,
                quality=_value(record, quality)
                if quality
                else (record.weighted_score.score if record.weighted_score else None),
                cost=_value(record, "cost_per_query"),
                latency=_value(record, "latency_p50"),
                errors=record.error_count,
                cases=record.question_count,
                coverage=coverage,
                comparable=comparable,
                note=None if comparable else f"not comparable: {said}",
            )
        )
    return pareto_frontier(points)


def pareto_document(
    points: list[ParetoPoint], quality: str | None, dropped: list[str]
) -> dict[str, Any]:
    """The ``pareto`` section of ``compare --json``."""
    return {
        "quality": quality or DEFAULT_QUALITY,
        "left_out": dropped,
        "points": [asdict(point) for point in points],
    }

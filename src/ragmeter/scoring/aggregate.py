"""Aggregate per-case scores into a scorecard: value, counts and a 95% bootstrap interval."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import numpy.typing as npt

from ragmeter.metrics.base import GROUPS, Metric
from ragmeter.models import MetricSummary, Score, Scorecard

_PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0}
_BLOCK = 2_000_000  # resample cells per block, to bound memory


def statistic(
    values: npt.NDArray[np.float64], aggregation: str, axis: int | None = None
) -> npt.NDArray[np.float64]:
    if aggregation == "mean":
        return np.asarray(values.mean(axis=axis))
    if aggregation in _PERCENTILES:
        return np.asarray(np.percentile(values, _PERCENTILES[aggregation], axis=axis))
    raise ValueError(f"unknown aggregation {aggregation!r}")


def bootstrap_interval(
    values: npt.NDArray[np.float64],
    aggregation: str = "mean",
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of ``aggregation`` over ``values``; None if n < 2."""
    n = len(values)
    if n < 2 or resamples < 1:
        return None
    rng = np.random.default_rng(seed)
    per_block = max(1, _BLOCK // n)
    stats: list[npt.NDArray[np.float64]] = []
    for start in range(0, resamples, per_block):
        count = min(per_block, resamples - start)
        sample = values[rng.integers(0, n, size=(count, n))]
        stats.append(statistic(sample, aggregation, axis=1))
    all_stats = np.concatenate(stats)
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(all_stats, [tail, 100.0 - tail])
    return float(low), float(high)


def aggregate_scores(
    scores: list[Score], metrics: list[Metric], resamples: int = 1000, seed: int = 0
) -> Scorecard:
    by_metric: dict[str, list[Score]] = defaultdict(list)
    for score in scores:
        by_metric[score.metric].append(score)
    summaries: list[MetricSummary] = []
    by_group: dict[str, list[str]] = {}
    for metric in sorted(metrics, key=lambda m: GROUPS.index(m.group) if m.group in GROUPS else 99):
        entries = by_metric.get(metric.name, [])
        values = np.array([s.value for s in entries if s.status == "ok"], dtype=np.float64)
        interval = bootstrap_interval(values, metric.aggregation, resamples, seed)
        summaries.append(
            MetricSummary(
                name=metric.name,
                group=metric.group,
                value=float(statistic(values, metric.aggregation)) if len(values) else None,
                aggregation=metric.aggregation,
                higher_is_better=metric.higher_is_better,
                unit=metric.unit,
                n_scored=len(values),
                n_skipped=sum(s.status == "skipped" for s in entries),
                n_failed=sum(s.status == "failed" for s in entries),
                ci_low=interval[0] if interval else None,
                ci_high=interval[1] if interval else None,
            )
        )
        by_group.setdefault(metric.group, []).append(metric.name)
    return Scorecard(metrics=summaries, by_group=by_group)

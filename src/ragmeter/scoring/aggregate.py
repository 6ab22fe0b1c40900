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


class ResampleCache:
    """Bootstrap resample indices for a given n, drawn once per seed and reused by every metric
    with that many values (so metrics of one run are resampled on the same draws)."""

    def __init__(self, resamples: int, seed: int) -> None:
        self.resamples = resamples
        self.seed = seed
        self._blocks: dict[int, list[npt.NDArray[np.intp]]] = {}

    def blocks(self, n: int) -> list[npt.NDArray[np.intp]]:
        cached = self._blocks.get(n)
        if cached is not None:
            return cached
        rng = np.random.default_rng(self.seed)
        per_block = max(1, _BLOCK // n)
        blocks = [
            rng.integers(0, n, size=(min(per_block, self.resamples - start), n))
            for start in range(0, self.resamples, per_block)
        ]
        if self.resamples * n <= _BLOCK:
            self._blocks[n] = blocks
        return blocks


def bootstrap_interval(
    values: npt.NDArray[np.float64],
    aggregation: str = "mean",
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    cache: ResampleCache | None = None,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of ``aggregation`` over ``values``; None if n < 2."""
    n = len(values)
    if n < 2 or resamples < 1:
        return None
    if values.min() == values.max():
        return float(values[0]), float(values[0])
    cache = cache if cache is not None and cache.seed == seed else ResampleCache(resamples, seed)
    stats = np.concatenate(
        [statistic(values[block], aggregation, axis=1) for block in cache.blocks(n)]
    )
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(stats, [tail, 100.0 - tail])
    return float(low), float(high)


def aggregate_scores(
    scores: list[Score], metrics: list[Metric], resamples: int = 1000, seed: int = 0
) -> Scorecard:
    cache = ResampleCache(resamples, seed)
    by_metric: dict[str, list[Score]] = defaultdict(list)
    for score in scores:
        by_metric[score.metric].append(score)
    summaries: list[MetricSummary] = []
    by_group: dict[str, list[str]] = {}
    for metric in sorted(metrics, key=lambda m: GROUPS.index(m.group) if m.group in GROUPS else 99):
        entries = by_metric.get(metric.name, [])
        values = np.array([s.value for s in entries if s.status == "ok"], dtype=np.float64)
        interval = bootstrap_interval(values, metric.aggregation, resamples, seed, cache=cache)
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

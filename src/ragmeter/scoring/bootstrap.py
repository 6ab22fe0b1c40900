"""Joint bootstrap of every metric, overall and within every breakdown group, in one pass.

Means use a Poisson bootstrap: each resample gives every case a weight w ~ Poisson(1) and the
resampled mean of a metric is sum(w v) / sum(w) over the cases the metric scored. All metrics
share the same weights (one matrix product per block of resamples), and because Poisson
weights are independent, the weights of any subset of cases are a Poisson bootstrap of that
subset; so a breakdown group uses a slice of the same weight block (cases sorted by group).
Quantile aggregations (p50, p95, ...) use the exact bootstrap of the order statistic
(``stats.quantile_interval``), which needs no resampling at all. A ``sum`` aggregation (a count
such as seed 001's number of CORRECT answers) is the exact total over the scored cases: it is
not an estimate, so it has no interval (the matching rate carries the uncertainty). A
detector's run-level statistic (``auc``, ``tpr_at_fpr_1``, ``tpr_at_fpr_5``) is computed from
the (score, label) pairs of the group's cases with a stratified bootstrap of its own
(``ragmeter.scoring.roc``); a group holding positives but no negative (a breakdown by
``attack_category``) is measured against every negative of the run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from ragmeter.metrics.base import Metric
from ragmeter.run_record import MetricSummary
from ragmeter.scoring.blas import single_threaded_blas
from ragmeter.scoring.roc import detector_interval, detector_value, is_roc
from ragmeter.scoring.stats import quantile_interval
from ragmeter.scoring.table import ScoreTable

QUANTILES = {"p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99}
_BLOCK_CELLS = 4_000_000  # weights per block (float32: 16 MB)
_TABLE_BITS = 16


@lru_cache(maxsize=1)
def _poisson_table() -> npt.NDArray[np.float32]:
    """Inverse CDF of Poisson(1) on a 2^16 grid: a uniform 16-bit integer -> a weight."""
    cdf = np.cumsum([math.exp(-1.0) / math.factorial(k) for k in range(20)])
    grid = (np.arange(2**_TABLE_BITS) + 0.5) / 2**_TABLE_BITS
    table: npt.NDArray[np.float32] = np.searchsorted(cdf, grid).astype(np.float32)
    return table


def poisson_weights(rng: np.random.Generator, rows: int, cols: int) -> npt.NDArray[np.float32]:
    draws = rng.integers(0, 2**_TABLE_BITS, size=(rows, cols), dtype=np.uint16)
    weights: npt.NDArray[np.float32] = _poisson_table()[draws]
    return weights


@dataclass
class Partition:
    """Cases grouped by one field: ``rows[bounds[g]:bounds[g+1]]`` are group g's case rows
    (a multi-valued field such as tags lists a case once per value)."""

    field: str
    labels: list[str]
    rows: npt.NDArray[np.intp]
    bounds: npt.NDArray[np.intp]

    @classmethod
    def whole(cls, n: int) -> Partition:
        return cls("", ["all"], np.arange(n, dtype=np.intp), np.array([0, n], dtype=np.intp))

    @classmethod
    def from_labels(cls, field: str, labels_per_case: list[list[str]]) -> Partition:
        pairs = [(label, i) for i, labels in enumerate(labels_per_case) for label in labels]
        pairs.sort(key=lambda pair: pair[0])
        names = list(dict.fromkeys(label for label, _ in pairs))
        rows = np.fromiter((i for _, i in pairs), np.intp, len(pairs))
        counts = {name: 0 for name in names}
        for label, _ in pairs:
            counts[label] += 1
        bounds = np.concatenate([[0], np.cumsum([counts[name] for name in names])]).astype(np.intp)
        return cls(field, names, rows, bounds)

    @classmethod
    def from_codes(cls, field: str, names: list[str], codes: npt.NDArray[np.intp]) -> Partition:
        """``from_labels`` of cases with one label each, given as codes into ``names``."""
        order = sorted(range(len(names)), key=names.__getitem__)
        rank = np.empty(len(names), dtype=np.intp)
        rank[order] = np.arange(len(names))
        ranks = rank[codes] if len(codes) else np.empty(0, dtype=np.intp)
        rows = np.argsort(ranks, kind="stable").astype(np.intp)
        counts = np.bincount(ranks, minlength=len(names))
        present = [i for i in range(len(names)) if counts[i]]
        labels = [names[order[i]] for i in present]
        bounds = np.concatenate([[0], np.cumsum(counts[present])]).astype(np.intp)
        return cls(field, labels, rows, bounds)


def _reduce(
    values: npt.NDArray[np.float64], bounds: npt.NDArray[np.intp], op: np.ufunc = np.add
) -> npt.NDArray[np.float64]:
    """Column reductions per group (only the whole of an empty run has an empty group)."""
    if values.shape[0] == 0:
        return np.full((len(bounds) - 1, values.shape[1]), np.nan if op is not np.add else 0.0)
    return np.asarray(op.reduceat(values, bounds[:-1], axis=0))


def summarize(
    table: ScoreTable,
    metrics: list[Metric],
    partitions: list[Partition],
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    labels: dict[str, npt.NDArray[np.float64]] | None = None,
) -> list[list[list[MetricSummary]]]:
    """Summaries for every partition, group and metric: ``result[p][g][j]``. ``labels`` gives
    a detector metric's per-case labels (1 positive, 0 negative, NaN unknown; table rows)."""
    by_name = {metric.name: metric for metric in metrics}
    ordered = [by_name[name] for name in table.metrics]
    values = table.values
    ok = ~np.isnan(values)
    mean_cols = [j for j, m in enumerate(ordered) if m.aggregation == "mean"]
    for m in ordered:
        known = ("mean", "sum", *QUANTILES)
        if m.aggregation not in known and not is_roc(m.aggregation):
            raise ValueError(f"metric {m.name}: unknown aggregation {m.aggregation!r}")
    k = len(mean_cols)
    with np.errstate(invalid="ignore", divide="ignore"):
        counts_all = ok.sum(axis=0)
        centre = np.where(counts_all > 0, np.nansum(values, axis=0) / counts_all, 0.0)
    centred = np.where(ok, values - centre, 0.0)
    weighted = np.hstack([centred[:, mean_cols], ok[:, mean_cols]]).astype(np.float32)
    stacked = [weighted[p.rows] for p in partitions]

    draws: list[list[npt.NDArray[np.float64]]] = [
        [np.empty((resamples, k)) for _ in p.labels] for p in partitions
    ]
    width = max((len(p.rows) for p in partitions), default=0)
    if k and width and resamples > 0:
        _draw(draws, partitions, stacked, width, resamples, seed)
    detector = _Detector(labels or {}, resamples, seed, level)
    return _summaries(
        table, ordered, partitions, draws, mean_cols, centre, ok, resamples, level, detector
    )


def _coverage(measured: float, missed: float) -> float | None:
    """Measured cases over the cases the metric applies to (measured, failed, or skipped
    because the target did not report what it reads); None when it applies to none."""
    applicable = measured + missed
    return round(float(measured / applicable), 6) if applicable else None


@dataclass
class _Detector:
    """Run-level detector statistics of one group: value and stratified-bootstrap interval."""

    labels: dict[str, npt.NDArray[np.float64]]
    resamples: int
    seed: int
    level: float

    def summary(
        self,
        metric: Metric,
        column: npt.NDArray[np.float64],
        rows: npt.NDArray[np.intp],
        whole: bool,
    ) -> tuple[float | None, tuple[float, float] | None]:
        label = self.labels.get(metric.name)
        if label is None:
            return None, None
        usable = ~np.isnan(column) & ~np.isnan(label)
        inside = np.zeros(len(column), bool)
        inside[rows] = True
        pos = column[usable & inside & (label == 1.0)]
        neg = column[usable & inside & (label == 0.0)]
        if len(pos) and not len(neg) and not whole:
            neg = column[usable & (label == 0.0)]  # a group of attacks: against every benign
        value = detector_value(metric.aggregation, pos, neg)
        interval = detector_interval(
            metric.aggregation, pos, neg, self.resamples, self.seed, self.level
        )
        return value, interval


def _draw(
    draws: list[list[npt.NDArray[np.float64]]],
    partitions: list[Partition],
    stacked: list[npt.NDArray[np.float32]],
    width: int,
    resamples: int,
    seed: int,
) -> None:
    k = stacked[0].shape[1] // 2
    with single_threaded_blas():
        rng = np.random.default_rng(seed)
        per_block = max(1, _BLOCK_CELLS // width)
        for start in range(0, resamples, per_block):
            rows = min(per_block, resamples - start)
            weights = poisson_weights(rng, rows, width)
            for p, partition in enumerate(partitions):
                bounds = partition.bounds
                for g in range(len(partition.labels)):
                    a, b = int(bounds[g]), int(bounds[g + 1])
                    sums = weights[:, a:b] @ stacked[p][a:b]
                    with np.errstate(invalid="ignore", divide="ignore"):
                        draws[p][g][start : start + rows] = sums[:, :k] / sums[:, k:]


def _summaries(
    table: ScoreTable,
    ordered: list[Metric],
    partitions: list[Partition],
    draws: list[list[npt.NDArray[np.float64]]],
    mean_cols: list[int],
    centre: npt.NDArray[np.float64],
    ok: npt.NDArray[np.bool_],
    resamples: int,
    level: float,
    detector: _Detector,
) -> list[list[list[MetricSummary]]]:
    values, status, k = table.values, table.status, len(mean_cols)
    tail = (1.0 - level) / 2.0 * 100.0
    results: list[list[list[MetricSummary]]] = []
    filled = np.where(ok, values, 0.0)
    for p, partition in enumerate(partitions):
        idx, bounds = partition.rows, partition.bounds
        n_ok = _reduce(ok[idx].astype(np.float64), bounds)
        n_skip = _reduce(np.isin(status[idx], (1, 4)).astype(np.float64), bounds)
        n_fail = _reduce((status[idx] == 2).astype(np.float64), bounds)
        n_unreported = _reduce((status[idx] == 4).astype(np.float64), bounds)
        n_measured = _reduce((status[idx] == 0).astype(np.float64), bounds)
        sums = _reduce(filled[idx], bounds)
        lows = _reduce(values[idx], bounds, np.fmin)
        highs = _reduce(values[idx], bounds, np.fmax)
        groups: list[list[MetricSummary]] = []
        for g in range(len(partition.labels)):
            interval_of: dict[int, tuple[float, float]] = {}
            if k and resamples > 0:
                sample = draws[p][g]
                # an all-NaN column (n < 2) has no interval; left out rather than warned
                # about (a warnings filter is process-wide: two runs score in two threads)
                if np.isnan(sample).any():
                    with_draws = ~np.isnan(sample).all(axis=0)
                    ends = np.full((2, sample.shape[1]), np.nan)
                    if with_draws.any():
                        ends[:, with_draws] = np.nanpercentile(
                            sample[:, with_draws], [tail, 100.0 - tail], axis=0
                        )
                else:
                    ends = np.percentile(sample, [tail, 100.0 - tail], axis=0)
                for c, j in enumerate(mean_cols):
                    interval_of[j] = (
                        float(ends[0, c] + centre[j]),
                        float(ends[1, c] + centre[j]),
                    )
            summaries: list[MetricSummary] = []
            for j, metric in enumerate(ordered):
                n = int(n_ok[g, j])
                value: float | None = None
                interval: tuple[float, float] | None = None
                if n and metric.aggregation == "mean":
                    # a mean lies between the lowest and the highest value: rounding in the
                    # sums (twelve 0.2 sum to 2.4000000000000004) must not put it outside
                    low, high = float(lows[g, j]), float(highs[g, j])
                    value = min(max(float(sums[g, j] / n), low), high)
                    if n >= 2 and low == high:
                        interval = (low, low)
                    elif n >= 2 and (drawn := interval_of.get(j)) is not None:
                        interval = (max(drawn[0], low), min(drawn[1], high))
                elif n and metric.aggregation == "sum":
                    value = float(sums[g, j])  # a true total: no mean x n, no interval
                elif n and is_roc(metric.aggregation):
                    rows = idx[bounds[g] : bounds[g + 1]]
                    whole = not partition.field
                    value, interval = detector.summary(metric, values[:, j], rows, whole)
                elif n:
                    column = values[idx[bounds[g] : bounds[g + 1]], j]
                    column = np.sort(column[~np.isnan(column)])
                    q = QUANTILES[metric.aggregation]
                    value = float(np.percentile(column, q * 100.0))
                    if resamples > 0:
                        interval = quantile_interval(column, q, level)
                summaries.append(
                    MetricSummary(
                        name=metric.name,
                        group=metric.group,
                        value=value,
                        aggregation=metric.aggregation,
                        higher_is_better=metric.higher_is_better,
                        unit=metric.unit,
                        kind=metric.kind,
                        scale=metric.scale,
                        n_scored=n,
                        n_skipped=int(n_skip[g, j]),
                        n_failed=int(n_fail[g, j]),
                        n_unreported=int(n_unreported[g, j]),
                        coverage=_coverage(n_measured[g, j], n_fail[g, j] + n_unreported[g, j]),
                        failed_as=table.failed_as.get(metric.name),
                        ci_low=interval[0] if interval else None,
                        ci_high=interval[1] if interval else None,
                    )
                )
            groups.append(summaries)
        results.append(groups)
    return results

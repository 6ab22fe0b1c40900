"""Run-level statistics of a detector: ROC AUC and TPR at a fixed FPR over (score, label) pairs.

These are not means of per-case values: they need every case's score and label at once. A
metric declares one of them as its ``aggregation`` (``auc``, ``tpr_at_fpr_1``,
``tpr_at_fpr_5``); its per-case value is the detector's score and its score's details carry the
case's label (``details["label"]``: true for a positive, an attack). The rules:

- **AUC** is the Mann-Whitney statistic: the probability that a random positive scores above a
  random negative, a tie counting one half (the area under the ROC curve with ties drawn as
  diagonal segments).
- **TPR at FPR x**: a threshold t flags every case with score >= t; among the thresholds whose
  FPR is <= x (including "flag nothing", TPR 0), the highest TPR. No interpolation between ROC
  points: the value is a TPR some threshold actually reaches at that FPR or below.

Both need at least one positive and one negative; with one class missing there is no value.
Intervals come from a stratified bootstrap: every resample draws the positives from the
positives and the negatives from the negatives (each with replacement, each class keeping its
size), so every resample has both classes. Everything is computed from per-class counts on the
grid of distinct scores, so a resample costs O(distinct scores), not a sort.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
_TPR = re.compile(r"^tpr_at_fpr_(\d{1,2})$")
_BLOCK_CELLS = 1_000_000  # resample x grid cells per block, to bound memory
ROC_AGGREGATIONS = ("auc", "tpr_at_fpr_1", "tpr_at_fpr_5")


def is_roc(aggregation: str) -> bool:
    """True for a run-level detector aggregation (``auc``, ``tpr_at_fpr_1``, ...)."""
    return aggregation in ROC_AGGREGATIONS


CountStatistic = Callable[[FloatArray, FloatArray], FloatArray]


def auc_from_counts(pos: FloatArray, neg: FloatArray) -> FloatArray:
    """AUC of each row: ``pos[r, k]`` / ``neg[r, k]`` are how many positives / negatives score
    the k-th distinct score (grid ascending)."""
    n_pos, n_neg = pos.sum(axis=1), neg.sum(axis=1)
    below = np.cumsum(neg, axis=1) - neg
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((pos * (below + 0.5 * neg)).sum(axis=1) / (n_pos * n_neg))


def tpr_from_counts(fpr: float) -> CountStatistic:
    """TPR at FPR <= ``fpr`` of each row (see the module's rule)."""

    def statistic(pos: FloatArray, neg: FloatArray) -> FloatArray:
        n_pos, n_neg = pos.sum(axis=1), neg.sum(axis=1)
        flagged_pos = np.cumsum(pos[:, ::-1], axis=1)[:, ::-1]  # score >= the k-th score
        flagged_neg = np.cumsum(neg[:, ::-1], axis=1)[:, ::-1]
        allowed = flagged_neg <= fpr * n_neg[:, None] * (1.0 + 1e-12)
        best = np.where(allowed, flagged_pos, 0.0).max(axis=1, initial=0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(best / n_pos)

    return statistic


def statistic_for(aggregation: str) -> CountStatistic:
    if aggregation == "auc":
        return auc_from_counts
    match = _TPR.match(aggregation)
    if match is None or not 1 <= int(match.group(1)) <= 99:
        raise ValueError(f"not a detector aggregation: {aggregation!r}")
    return tpr_from_counts(int(match.group(1)) / 100.0)


def _class_counts(weights: FloatArray, scores: FloatArray, grid: FloatArray) -> FloatArray:
    """Row r of ``weights`` gives each case's multiplicity; the counts per grid score."""
    out = np.zeros((weights.shape[0], len(grid)))
    if len(scores) == 0:
        return out
    order = np.argsort(scores, kind="stable")
    ordered = scores[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    out[:, np.searchsorted(grid, ordered[starts])] = np.add.reduceat(
        weights[:, order], starts, axis=1
    )
    return out


def _value(statistic: CountStatistic, pos: FloatArray, neg: FloatArray) -> float | None:
    if len(pos) == 0 or len(neg) == 0:
        return None
    grid = np.unique(np.concatenate([pos, neg]))
    counts_pos = _class_counts(np.ones((1, len(pos))), pos, grid)
    counts_neg = _class_counts(np.ones((1, len(neg))), neg, grid)
    return float(statistic(counts_pos, counts_neg)[0])


def detector_value(aggregation: str, pos: npt.ArrayLike, neg: npt.ArrayLike) -> float | None:
    """The statistic of the positives' and negatives' scores (None without both classes)."""
    return _value(
        statistic_for(aggregation), np.asarray(pos, np.float64), np.asarray(neg, np.float64)
    )


def _distinct(scores: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The distinct scores, ascending, and how many cases have each."""
    values, counts = np.unique(scores, return_counts=True)
    return values, counts.astype(np.float64)


def _multinomial(rng: np.random.Generator, counts: FloatArray, rows: int) -> FloatArray:
    """``rows`` bootstrap resamples of the cases behind ``counts`` (how many cases share each
    distinct score, or score pair) as multiplicities per distinct value: each row sums to the
    number of cases. Drawing n cases with replacement and counting them per distinct value is
    this multinomial, so a resample costs O(distinct values), not O(cases)."""
    n = int(counts.sum())
    if n == 0:
        return np.zeros((rows, len(counts)))
    return np.asarray(rng.multinomial(n, counts / n, size=rows), dtype=np.float64)


def _percentiles(stats: FloatArray, level: float) -> tuple[float, float] | None:
    stats = stats[~np.isnan(stats)]
    if len(stats) == 0:
        return None
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(stats, [tail, 100.0 - tail])
    return float(low), float(high)


def detector_interval(
    aggregation: str,
    pos: npt.ArrayLike,
    neg: npt.ArrayLike,
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile interval of the statistic under the stratified bootstrap (None without both
    classes, with fewer than two cases, or with no resamples)."""
    statistic = statistic_for(aggregation)
    p, n = np.asarray(pos, np.float64), np.asarray(neg, np.float64)
    if len(p) == 0 or len(n) == 0 or len(p) + len(n) < 2 or resamples < 1:
        return None
    (p, p_counts), (n, n_counts) = _distinct(p), _distinct(n)
    grid = np.unique(np.concatenate([p, n]))
    rng = np.random.default_rng(seed)
    per_block = max(1, _BLOCK_CELLS // len(grid))
    stats = []
    for start in range(0, resamples, per_block):
        rows = min(per_block, resamples - start)
        w_pos, w_neg = _multinomial(rng, p_counts, rows), _multinomial(rng, n_counts, rows)
        stats.append(statistic(_class_counts(w_pos, p, grid), _class_counts(w_neg, n, grid)))
    return _percentiles(np.concatenate(stats), level)


def paired_detector_difference(
    aggregation: str,
    first: npt.ArrayLike,
    second: npt.ArrayLike,
    labels: npt.ArrayLike,
    resamples: int = 10_000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, tuple[float, float] | None, float] | None:
    """The statistic of ``second`` minus that of ``first`` on the same cases (a paired
    comparison of two runs), its stratified paired-bootstrap interval and a two-sided bootstrap
    p value (twice the smaller share of resampled differences on either side of 0, at most 1).
    None without both classes."""
    statistic = statistic_for(aggregation)
    a, b = np.asarray(first, np.float64), np.asarray(second, np.float64)
    y = np.asarray(labels, bool)
    if not y.any() or y.all():
        return None
    # cases of one class with the same pair of scores are interchangeable: resample the pairs
    pairs = {
        c: np.unique(np.stack([a[y == c], b[y == c]], axis=1), axis=0, return_counts=True)
        for c in (True, False)
    }
    grids = np.unique(a), np.unique(b)

    def stats(w_pos: FloatArray, w_neg: FloatArray) -> FloatArray:
        values = [
            statistic(
                _class_counts(w_pos, pairs[True][0][:, side], grid),
                _class_counts(w_neg, pairs[False][0][:, side], grid),
            )
            for side, grid in enumerate(grids)
        ]
        return values[1] - values[0]

    counts = {c: pairs[c][1].astype(np.float64) for c in (True, False)}
    observed = float(stats(counts[True][None, :], counts[False][None, :])[0])
    if resamples < 1:
        return observed, None, 1.0
    rng = np.random.default_rng(seed)
    widest = max(len(grids[0]), len(grids[1]), len(counts[True]), len(counts[False]))
    per_block = max(1, _BLOCK_CELLS // widest)
    draws = []
    for start in range(0, resamples, per_block):
        rows = min(per_block, resamples - start)
        draws.append(
            stats(_multinomial(rng, counts[True], rows), _multinomial(rng, counts[False], rows))
        )
    diffs = np.concatenate(draws)
    if np.all(diffs == diffs[0]) and diffs[0] == 0.0:
        return observed, (0.0, 0.0), 1.0
    # (1 + k) / (1 + B): a bootstrap with no resample across 0 bounds p by its resolution,
    # never reports 0 (which any correction for many metrics would pass as significant)
    tail = min(int((diffs <= 0.0).sum()), int((diffs >= 0.0).sum()))
    p_value = min(1.0, 2.0 * (1 + tail) / (1 + len(diffs)))
    return observed, _percentiles(diffs, level), p_value

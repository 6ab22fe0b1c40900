"""Validity of a metric against human labels: does the metric rank and classify cases the way
reviewers did? Pure NumPy functions, seeded, no SciPy (docs/statistics.md, "Validity").

Every statistic works on a batch of rows (one row a bootstrap resample; the point estimate is
the row of the cases as they are) and gives NaN where it is undefined for a row (one class
only, no spread):

- ``auc_rows``: the Mann-Whitney AUC, P(a positive case outscores a negative one), ties 1/2;
- ``balanced_accuracy_rows``: (sensitivity + specificity) / 2 of a thresholded prediction;
- ``kappa_rows``: Cohen's kappa of two binary ratings;
- ``spearman_rows``: Spearman's rho, the Pearson correlation of average ranks;
- ``kendall_tau_b_counts``: Kendall's tau-b of the cases repeated by bootstrap counts.

``binary_validity`` and ``graded_validity`` give each statistic with a percentile bootstrap
interval over resampled cases. The scores passed in are *oriented*: higher means better (a
lower-is-better metric is negated before it gets here), and a positive label means a good case.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ragmeter.scoring.blas import single_threaded_blas

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

DEFAULT_RESAMPLES = 1000
DEFAULT_LEVEL = 0.95
# Kendall's tau-b is computed from an n x n sign matrix: up to this many cases
KENDALL_MAX_N = 2000
_BLOCK_CELLS = 4_000_000  # values per block of resamples


@dataclass(frozen=True)
class Estimate:
    """A statistic and its percentile bootstrap interval (None where undefined)."""

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None


def _as_rows(values: npt.ArrayLike) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    return array[np.newaxis, :] if array.ndim == 1 else array


def average_ranks(values: npt.ArrayLike) -> FloatArray:
    """1-based ranks along the last axis (row by row), tied values sharing their mean rank."""
    rows = _as_rows(values)
    count, n = rows.shape
    if n == 0:
        return np.empty((count, 0))
    order = np.argsort(rows, axis=1, kind="stable")
    ordered = np.take_along_axis(rows, order, axis=1)
    starts = np.ones((count, n), dtype=bool)  # a tie block starts here
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    ends = np.ones((count, n), dtype=bool)  # a tie block ends here
    ends[:, :-1] = starts[:, 1:]
    position = np.arange(n)
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, position, n - 1)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty((count, n))
    np.put_along_axis(ranks, order, (first + last) / 2.0 + 1.0, axis=1)
    return ranks


def auc_rows(scores: npt.ArrayLike, labels: npt.ArrayLike) -> FloatArray:
    """AUC of each row: the share of (positive, negative) pairs where the positive case has
    the higher score, ties counted 1/2 (the Mann-Whitney U over n_pos * n_neg)."""
    ranks = average_ranks(scores)
    positive = _as_rows(labels) > 0.5
    n_pos = positive.sum(axis=1).astype(np.float64)
    n_neg = positive.shape[1] - n_pos
    rank_sum = np.where(positive, ranks, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = (rank_sum - n_pos * (n_pos + 1.0) / 2.0) / (n_pos * n_neg)
    return np.where((n_pos > 0) & (n_neg > 0), auc, np.nan)


def balanced_accuracy_rows(predicted: npt.ArrayLike, labels: npt.ArrayLike) -> FloatArray:
    """(true positive rate + true negative rate) / 2 of each row."""
    guess, truth = _as_rows(predicted) > 0.5, _as_rows(labels) > 0.5
    n_pos = truth.sum(axis=1)
    n_neg = truth.shape[1] - n_pos
    with np.errstate(invalid="ignore", divide="ignore"):
        sensitivity = (guess & truth).sum(axis=1) / n_pos
        specificity = (~guess & ~truth).sum(axis=1) / n_neg
    return np.where((n_pos > 0) & (n_neg > 0), (sensitivity + specificity) / 2.0, np.nan)


def kappa_rows(first: npt.ArrayLike, second: npt.ArrayLike) -> FloatArray:
    """Cohen's kappa of two binary ratings of the same cases, row by row:
    (p_o - p_e) / (1 - p_e), NaN when p_e = 1 (both raters gave one rating throughout)."""
    a, b = _as_rows(first) > 0.5, _as_rows(second) > 0.5
    observed = (a == b).mean(axis=1)
    share_a, share_b = a.mean(axis=1), b.mean(axis=1)
    expected = share_a * share_b + (1.0 - share_a) * (1.0 - share_b)
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = (observed - expected) / (1.0 - expected)
    return np.where(expected < 1.0, kappa, np.nan)


def spearman_rows(first: npt.ArrayLike, second: npt.ArrayLike) -> FloatArray:
    """Spearman's rho of each row: the Pearson correlation of the average ranks."""
    x = average_ranks(first)
    y = average_ranks(second)
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    spread = np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (x * y).sum(axis=1) / spread
    return np.where(spread > 0, np.clip(rho, -1.0, 1.0), np.nan)


def _tied_pairs(values: FloatArray, counts: FloatArray) -> FloatArray:
    """Pairs of (repeated) cases with equal values, row by row of ``counts``."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    totals = np.add.reduceat(counts[:, order], starts, axis=1)  # copies per tie group
    tied: FloatArray = (totals * (totals - 1.0) / 2.0).sum(axis=1)
    return tied


def kendall_tau_b_counts(
    first: npt.ArrayLike, second: npt.ArrayLike, counts: npt.ArrayLike | None = None
) -> FloatArray:
    """Kendall's tau-b of the cases, each row of ``counts`` saying how many times every case
    is taken (a bootstrap resample; None: each once). Copies of a case are tied on both sides,
    as they are in the resampled list."""
    x = np.asarray(first, dtype=np.float64)
    y = np.asarray(second, dtype=np.float64)
    weights = np.ones((1, len(x))) if counts is None else _as_rows(counts)
    signs = np.sign(x[:, None] - x[None, :]) * np.sign(y[:, None] - y[None, :])
    with single_threaded_blas():
        concordance = ((weights @ signs) * weights).sum(axis=1) / 2.0
    total = weights.sum(axis=1)
    pairs = total * (total - 1.0) / 2.0
    spread = (pairs - _tied_pairs(x, weights)) * (pairs - _tied_pairs(y, weights))
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = concordance / np.sqrt(spread)
    return np.where(spread > 0, np.clip(tau, -1.0, 1.0), np.nan)


# one-dimensional forms ---------------------------------------------------------------------------
def _scalar(values: FloatArray) -> float | None:
    value = float(values[0])
    return None if np.isnan(value) else value


def auc(scores: npt.ArrayLike, labels: npt.ArrayLike) -> float | None:
    """AUC of ``scores`` (higher: more likely positive) against 0/1 ``labels``."""
    return _scalar(auc_rows(scores, labels))


def balanced_accuracy(predicted: npt.ArrayLike, labels: npt.ArrayLike) -> float | None:
    return _scalar(balanced_accuracy_rows(predicted, labels))


def cohens_kappa(first: npt.ArrayLike, second: npt.ArrayLike) -> float | None:
    return _scalar(kappa_rows(first, second))


def spearman_rho(first: npt.ArrayLike, second: npt.ArrayLike) -> float | None:
    return _scalar(spearman_rows(first, second))


def kendall_tau_b(first: npt.ArrayLike, second: npt.ArrayLike) -> float | None:
    return _scalar(kendall_tau_b_counts(first, second))


# bootstrap ---------------------------------------------------------------------------------------
Statistic = Callable[[npt.NDArray[np.intp]], FloatArray]


def _bootstrap(
    n: int, statistics: dict[str, Statistic], resamples: int, seed: int, level: float
) -> dict[str, Estimate]:
    """Each statistic at the cases as they are, and its percentile interval over resamples of
    the cases (drawn with replacement, seeded). A resample where the statistic is undefined
    (one class drawn) is left out; with fewer than half of them defined there is no interval."""
    identity = np.arange(n, dtype=np.intp)[np.newaxis, :]
    points = {name: _scalar(statistic(identity)) for name, statistic in statistics.items()}
    draws: dict[str, list[FloatArray]] = {name: [] for name in statistics}
    if n >= 2 and resamples > 0:
        rng = np.random.default_rng(seed)
        per_block = max(1, _BLOCK_CELLS // n)
        for start in range(0, resamples, per_block):
            rows = rng.integers(0, n, size=(min(per_block, resamples - start), n), dtype=np.intp)
            for name, statistic in statistics.items():
                if points[name] is not None:
                    draws[name].append(statistic(rows))
    tail = (1.0 - level) / 2.0 * 100.0
    estimates: dict[str, Estimate] = {}
    for name, point in points.items():
        sample = np.concatenate(draws[name]) if draws[name] else np.empty(0)
        sample = sample[~np.isnan(sample)]
        if point is None or len(sample) * 2 < resamples or len(sample) == 0:
            estimates[name] = Estimate(point)
            continue
        low, high = np.percentile(sample, [tail, 100.0 - tail])
        estimates[name] = Estimate(point, float(low), float(high))
    return estimates


def binary_validity(
    scores: npt.ArrayLike,
    labels: npt.ArrayLike,
    predicted: npt.ArrayLike | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
) -> dict[str, Estimate]:
    """``auc``, ``base_rate`` and, given the thresholded ``predicted`` (1: the metric calls
    the case good), ``balanced_accuracy`` and ``kappa`` of oriented ``scores`` against 0/1
    ``labels``, each with its bootstrap interval."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    statistics: dict[str, Statistic] = {
        "auc": lambda rows: auc_rows(s[rows], y[rows]),
        "base_rate": lambda rows: (y[rows] > 0.5).mean(axis=1),
    }
    if predicted is not None:
        p = np.asarray(predicted, dtype=np.float64)
        statistics["balanced_accuracy"] = lambda rows: balanced_accuracy_rows(p[rows], y[rows])
        statistics["kappa"] = lambda rows: kappa_rows(p[rows], y[rows])
    return _bootstrap(len(s), statistics, resamples, seed, level)


def _counts(rows: npt.NDArray[np.intp], n: int) -> FloatArray:
    offsets = rows + (np.arange(rows.shape[0]) * n)[:, np.newaxis]
    return np.bincount(offsets.ravel(), minlength=rows.shape[0] * n).reshape(-1, n).astype(float)


def graded_validity(
    scores: npt.ArrayLike,
    labels: npt.ArrayLike,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
) -> dict[str, Estimate]:
    """``spearman`` and (up to KENDALL_MAX_N cases) ``kendall_tau_b`` of oriented ``scores``
    against graded ``labels``, each with its bootstrap interval."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    statistics: dict[str, Statistic] = {"spearman": lambda rows: spearman_rows(s[rows], y[rows])}
    if len(s) <= KENDALL_MAX_N:
        statistics["kendall_tau_b"] = lambda rows: kendall_tau_b_counts(s, y, _counts(rows, len(s)))
    return _bootstrap(len(s), statistics, resamples, seed, level)

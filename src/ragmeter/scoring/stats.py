"""Statistical tests and intervals, vectorised with NumPy and seeded (no SciPy).

- ``binomial_sf``: exact binomial upper tail in log space.
- ``mcnemar_exact``: exact (binomial) two-sided McNemar test for paired binary outcomes.
- ``sign_flip_test``: paired permutation test of a mean difference (random sign flips).
- ``paired_bootstrap_interval``: percentile bootstrap interval of a mean paired difference.
- ``cohens_dz``: standardised mean paired difference.
- ``quantile_interval``: the exact (infinite-resample) bootstrap percentile interval of a
  quantile, from the binomial distribution of resampled order statistics.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from ragmeter.scoring.power import has_spread

FloatArray = npt.NDArray[np.float64]
_BLOCK_CELLS = 4_000_000


@lru_cache(maxsize=8)
def _log_factorials(n: int) -> FloatArray:
    return np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))])


def _logsumexp(values: FloatArray) -> float:
    top = float(values.max())
    if not math.isfinite(top):
        return top
    return top + math.log(float(np.exp(values - top).sum()))


def binomial_sf(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), computed exactly in log space."""
    if k <= 0:
        return 1.0
    if k > n or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    logf = _log_factorials(n)
    i = np.arange(k, n + 1)
    log_pmf = logf[n] - logf[i] - logf[n - i] + i * math.log(p) + (n - i) * math.log1p(-p)
    return min(1.0, math.exp(_logsumexp(log_pmf)))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for discordant counts ``b`` (1->0) and ``c`` (0->1):
    2 * P(X <= min(b, c)) for X ~ Binomial(b + c, 1/2), capped at 1."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    logf = _log_factorials(n)
    i = np.arange(0, k + 1)
    log_pmf = logf[n] - logf[i] - logf[n - i] - n * math.log(2.0)
    return min(1.0, 2.0 * math.exp(_logsumexp(log_pmf)))


def sign_flip_test(diffs: FloatArray, resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of H0 "the paired differences are symmetric about 0" by random sign
    flips of the differences; (1 + #{|mean*| >= |mean|}) / (1 + resamples)."""
    n = len(diffs)
    if n == 0:
        return 1.0
    observed = abs(float(diffs.mean()))
    if observed == 0.0:
        return 1.0
    rng = np.random.default_rng(seed)
    tolerance = 1e-12 * max(1.0, float(np.abs(diffs).max()))
    per_block = max(1, _BLOCK_CELLS // n)
    hits = 0
    for start in range(0, resamples, per_block):
        rows = min(per_block, resamples - start)
        signs = rng.integers(0, 2, size=(rows, n), dtype=np.int8) * 2 - 1
        means = np.abs(signs @ diffs) / n
        hits += int((means >= observed - tolerance).sum())
    return (1 + hits) / (1 + resamples)


def paired_bootstrap_interval(
    diffs: FloatArray, resamples: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean paired difference; None if n < 2."""
    n = len(diffs)
    if n < 2 or resamples < 1:
        return None
    if float(diffs.min()) == float(diffs.max()):
        return float(diffs[0]), float(diffs[0])
    rng = np.random.default_rng(seed)
    per_block = max(1, _BLOCK_CELLS // n)
    means = np.concatenate(
        [
            diffs[rng.integers(0, n, size=(min(per_block, resamples - s), n))].mean(axis=1)
            for s in range(0, resamples, per_block)
        ]
    )
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return float(low), float(high)


def cohens_dz(diffs: FloatArray) -> float | None:
    """Mean paired difference over the standard deviation of the differences (Cohen's d_z);
    None when it is undefined (n < 2 or no spread)."""
    if len(diffs) < 2:
        return None
    spread = float(diffs.std(ddof=1))
    if not has_spread(spread, float(diffs.mean())):
        return None
    return float(diffs.mean()) / spread


def quantile_interval(
    sorted_values: FloatArray, q: float, level: float = 0.95
) -> tuple[float, float] | None:
    """Exact bootstrap percentile interval of the q-quantile of ``sorted_values`` (ascending).

    The bootstrap replicate is the order statistic X*(k), k = ceil(q n). Its distribution is
    known without resampling: P(X*(k) <= x(j)) = P(Binomial(n, j/n) >= k). The endpoints are the
    smallest x(j) whose probability reaches (1-level)/2 and (1+level)/2.
    """
    n = len(sorted_values)
    if n < 2:
        return None
    if sorted_values[0] == sorted_values[-1]:
        return float(sorted_values[0]), float(sorted_values[0])
    k = min(n, max(1, math.ceil(q * n)))

    def first_reaching(probability: float) -> int:
        low, high = 1, n  # F(n) = 1 >= probability
        while low < high:
            middle = (low + high) // 2
            if binomial_sf(k, n, middle / n) >= probability:
                high = middle
            else:
                low = middle + 1
        return low

    alpha = 1.0 - level
    lower = first_reaching(alpha / 2.0)
    upper = first_reaching(1.0 - alpha / 2.0)
    return float(sorted_values[lower - 1]), float(sorted_values[upper - 1])


def paired_quantile_difference(
    first: FloatArray,
    second: FloatArray,
    q: float,
    resamples: int = 10_000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, tuple[float, float] | None, float]:
    """The q-quantile (0-100, NumPy's linear rule, as the scorecard) of ``second`` minus that
    of ``first`` on the same cases (a latency p95 against another run's p95), its paired
    bootstrap interval (the same cases drawn for both) and a two-sided bootstrap p value:
    twice the smaller share of resampled differences on either side of 0, (1 + k) / (1 + B)."""
    observed = float(np.percentile(second, q) - np.percentile(first, q))
    n = len(first)
    if n < 2 or resamples < 1:
        return observed, None, 1.0
    rng = np.random.default_rng(seed)
    per_block = max(1, _BLOCK_CELLS // n)
    diffs = np.concatenate(
        [
            np.percentile(second[rows], q, axis=1) - np.percentile(first[rows], q, axis=1)
            for rows in (
                rng.integers(0, n, size=(min(per_block, resamples - s), n))
                for s in range(0, resamples, per_block)
            )
        ]
    )
    if np.all(diffs == 0.0):
        return observed, (0.0, 0.0), 1.0
    tail = min(int((diffs <= 0.0).sum()), int((diffs >= 0.0).sum()))
    p_value = min(1.0, 2.0 * (1 + tail) / (1 + len(diffs)))
    low, high = np.percentile(diffs, [(1.0 - level) / 2.0 * 100.0, (1.0 + level) / 2.0 * 100.0])
    return observed, (float(low), float(high)), p_value

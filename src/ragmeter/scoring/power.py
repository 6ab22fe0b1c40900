"""Many metrics at once and how big a change a run can see: p-value corrections (Holm,
Benjamini-Hochberg), the minimum detectable effect of a paired comparison, and the number of
cases needed to detect an effect (``ragmeter plan``).

The minimum detectable effect (MDE) of a paired comparison of n cases whose per-case differences
have standard deviation ``sd`` is the true mean difference that a two-sided test at level
``alpha`` detects with probability ``power``, by the normal approximation:

    MDE = (z(1 - alpha / 2) + z(power)) * sd / sqrt(n)

and the cases needed for an effect ``d`` invert it: n = ((z(1 - alpha / 2) + z(power)) * sd /
d) ** 2, rounded up. With a correction over m gated metrics the level is the Bonferroni bound
``alpha / m``, the level at which a metric is detected whatever the other metrics do (Holm's
first step; Benjamini-Hochberg is never stricter).

A standard deviation at or below ``SPREAD_TOLERANCE x max(1, |mean|)`` is float noise (0.2 on
every case can give 4e-17), not a spread: :func:`has_spread` says no, and no MDE or case count
is made from it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

Correction = Literal["holm", "bh", "none"]
CORRECTIONS: tuple[Correction, ...] = ("holm", "bh", "none")
DEFAULT_POWER = 0.8
SPREAD_TOLERANCE = 1e-12
_NORMAL = NormalDist()


def has_spread(sd: float, mean: float = 0.0) -> bool:
    """Whether ``sd`` is a spread and not float noise around ``mean`` (module docstring)."""
    return math.isfinite(sd) and sd > SPREAD_TOLERANCE * max(1.0, abs(mean))


def adjust_p_values(p_values: Sequence[float], method: Correction) -> list[float]:
    """The p values adjusted for testing them together, in their order: Holm's step-down
    (family-wise error rate), Benjamini-Hochberg's step-up (false discovery rate) or none.
    A metric is significant at ``alpha`` when its adjusted p value is below ``alpha``."""
    m = len(p_values)
    if method == "none" or m == 0:
        return [float(p) for p in p_values]
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    if method == "holm":
        running = 0.0
        for rank, index in enumerate(order):
            running = max(running, min(1.0, (m - rank) * p_values[index]))
            adjusted[index] = running
        return adjusted
    running = 1.0
    for rank in range(m - 1, -1, -1):
        index = order[rank]
        running = min(running, min(1.0, m / (rank + 1) * p_values[index]))
        adjusted[index] = running
    return adjusted


def per_metric_level(alpha: float, method: Correction, gated: int) -> float:
    """The per-metric level the MDE is computed at: ``alpha``, or ``alpha / gated`` under a
    correction (module docstring)."""
    return alpha if method == "none" or gated <= 1 else alpha / gated


def z_total(level: float, power: float = DEFAULT_POWER) -> float:
    """z(1 - level / 2) + z(power): the MDE in standard errors."""
    return _z_sum(level, power)


def _z_sum(level: float, power: float) -> float:
    return _NORMAL.inv_cdf(1 - level / 2) + _NORMAL.inv_cdf(power)


@dataclass(frozen=True)
class DetectableEffect:
    """A comparison's minimum detectable effect and what its standard deviation came from:
    ``paired`` (the per-case differences) or ``independent`` (the two runs' own spreads, when
    the differences do not vary, e.g. a run compared with itself)."""

    mde: float
    sd: float
    basis: Literal["paired", "independent"]


def minimum_detectable_effect(
    baseline: np.ndarray[tuple[int], np.dtype[np.float64]],
    candidate: np.ndarray[tuple[int], np.dtype[np.float64]],
    level: float,
    power: float = DEFAULT_POWER,
) -> DetectableEffect | None:
    """The MDE of the paired comparison of these per-case values; None under 2 cases or when
    neither the differences nor the runs vary (no spread to measure a change against)."""
    n = len(baseline)
    if n < 2:
        return None
    found = difference_spread(baseline, candidate)
    if found is None:
        return None
    sd, basis = found
    return DetectableEffect(_z_sum(level, power) * sd / math.sqrt(n), sd, basis)


def difference_spread(
    baseline: np.ndarray[tuple[int], np.dtype[np.float64]],
    candidate: np.ndarray[tuple[int], np.dtype[np.float64]],
) -> tuple[float, Literal["paired", "independent"]] | None:
    """The sd a change between two runs' paired per-case values (2 or more) is measured
    against: that of the paired differences, or, where they do not vary (identical runs), the
    runs' own spreads combined; None when neither varies."""
    diffs = candidate - baseline
    sd = float(np.std(diffs, ddof=1))
    if has_spread(sd, float(np.mean(diffs))):
        return sd, "paired"
    sd = math.sqrt(float(np.var(baseline, ddof=1)) + float(np.var(candidate, ddof=1)))
    center = max(abs(float(np.mean(baseline))), abs(float(np.mean(candidate))))
    return (sd, "independent") if has_spread(sd, center) else None


def cases_needed(effect: float, sd: float, level: float, power: float = DEFAULT_POWER) -> int:
    """Cases a paired comparison needs to detect a mean difference ``effect`` when the per-case
    differences have standard deviation ``sd`` (at least 2)."""
    if effect <= 0 or sd < 0:
        raise ValueError("the effect must be positive and the standard deviation not negative")
    return max(2, math.ceil((_z_sum(level, power) * sd / effect) ** 2))

"""Repeats (``--repeats N``): each case asked N times, the per-case mean feeding the aggregates.

A repeated case is stored as N cases (``ragmeter.repeat_ids``).

Aggregation clusters by case: the table's rows of one case are averaged (a case is measured
when any of its repeats was), and the bootstrap resamples cases, not answers, so the interval
accounts for both the run-to-run (system or judge) noise and the case sampling noise. Each
metric also reports its within-case variance (the mean over cases of the variance of their
repeats) against its between-case variance (the variance of the per-case means).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


def mean_by_case(values: dict[str, float], base_of: dict[str, str]) -> dict[str, float]:
    """Per-case values of a run with repeats averaged over each case's repeats."""
    sums: dict[str, list[float]] = {}
    for case_id, value in values.items():
        sums.setdefault(base_of.get(case_id, case_id), []).append(value)
    return {case_id: float(np.mean(group)) for case_id, group in sums.items()}


@dataclass(frozen=True)
class Collapsed:
    """A case x metric table with one row per case (repeats averaged) and each metric's
    within- and between-case variance (NaN where it cannot be computed)."""

    case_ids: list[str]
    values: npt.NDArray[np.float64]
    status: npt.NDArray[np.int8]
    within: npt.NDArray[np.float64]
    between: npt.NDArray[np.float64]
    repeats: int


def collapse(
    case_ids: list[str],
    values: npt.NDArray[np.float64],
    status: npt.NDArray[np.int8],
    base_of: dict[str, str],
) -> Collapsed:
    """Average each case's repeats: a case is ok where any repeat is; otherwise it keeps the
    first repeat's status (failed, not reported, skipped)."""
    order = list(dict.fromkeys(base_of.get(c, c) for c in case_ids))
    row_of = {case_id: i for i, case_id in enumerate(order)}
    groups = np.array([row_of[base_of.get(c, c)] for c in case_ids], dtype=np.intp)
    n, m = len(order), values.shape[1]
    ok = ~np.isnan(values)
    counts = np.zeros((n, m))
    np.add.at(counts, groups, ok.astype(np.float64))
    sums = np.zeros((n, m))
    np.add.at(sums, groups, np.where(ok, values, 0.0))
    squares = np.zeros((n, m))
    np.add.at(squares, groups, np.where(ok, values, 0.0) ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / counts, np.nan)
        # unbiased variance of each case's repeats, where it has 2 or more
        case_var = np.where(
            counts >= 2, (squares - counts * means**2) / np.maximum(counts - 1, 1), np.nan
        )
    collapsed_status = np.full((n, m), 3, dtype=np.int8)
    first_row: dict[int, int] = {}
    for i, group in enumerate(groups):
        first_row.setdefault(int(group), i)
    for group, i in first_row.items():
        collapsed_status[group] = status[i]
    collapsed_status[counts > 0] = 0
    within = _nanmean_columns(np.maximum(case_var, 0.0))
    between = _nanvar_columns(means)
    repeats = int(np.bincount(groups).max()) if len(groups) else 1
    return Collapsed(order, means, collapsed_status, within, between, repeats)


def _nanmean_columns(array: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    present = ~np.isnan(array)
    total = np.where(present, array, 0.0).sum(axis=0)
    count = present.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _nanvar_columns(array: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    present = ~np.isnan(array)
    count = present.sum(axis=0)
    mean = np.where(present, array, 0.0).sum(axis=0) / np.maximum(count, 1)
    squares = (np.where(present, array - mean, 0.0) ** 2).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count >= 2, squares / np.maximum(count - 1, 1), np.nan)

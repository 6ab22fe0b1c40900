"""Aggregate per-case scores into a scorecard: value, counts and a 95% bootstrap interval.

``aggregate_with_breakdowns`` is the fast path used by runs (a joint Poisson bootstrap over
every metric and breakdown group); ``bootstrap_interval`` is the plain percentile bootstrap of
one array, kept for single-array use."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ragmeter.metrics.base import GROUPS, Metric
from ragmeter.models import Case, Score
from ragmeter.run_record import MetricSummary, Scorecard
from ragmeter.scoring.bootstrap import Partition, summarize
from ragmeter.scoring.columns import ScoreColumns, detector_labels
from ragmeter.scoring.repeats import collapse
from ragmeter.scoring.table import ScoreTable

Breakdowns = dict[str, dict[str, list[MetricSummary]]]

_PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0}
_BLOCK = 2_000_000  # resample cells per block, to bound memory
# cells (cases x metrics) bootstrapped together: a large run's metrics go a few at a time
GROUP_CELLS = 2_000_000

__all__ = ["aggregate_columns", "aggregate_scores", "aggregate_with_breakdowns", "detector_labels"]


def statistic(
    values: npt.NDArray[np.float64], aggregation: str, axis: int | None = None
) -> npt.NDArray[np.float64]:
    if aggregation == "mean":
        return np.asarray(values.mean(axis=axis))
    if aggregation == "sum":
        return np.asarray(values.sum(axis=axis))
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


def _ordered(metrics: list[Metric]) -> list[Metric]:
    return sorted(metrics, key=lambda m: GROUPS.index(m.group) if m.group in GROUPS else 99)


def _scorecard(summaries: list[MetricSummary]) -> Scorecard:
    by_group: dict[str, list[str]] = {}
    for summary in summaries:
        by_group.setdefault(summary.group, []).append(summary.name)
    return Scorecard(metrics=summaries, by_group=by_group)


def aggregate_with_breakdowns(
    scores: list[Score],
    metrics: list[Metric],
    cases: list[Case] | None = None,
    fields: list[str] | tuple[str, ...] = (),
    resamples: int = 1000,
    seed: int = 0,
    failed_as: str = "exclude",
) -> tuple[Scorecard, Breakdowns]:
    """The scorecard and, for every field, the scorecard of every group of cases; all from one
    joint bootstrap (see ``ragmeter.scoring.bootstrap``). ``failed_as`` (exclude, zero,
    worst): how failed cases enter the values (``ScoreTable.count_failed_as``)."""
    if fields and cases is None:
        raise ValueError("breakdowns need the cases of the run")
    if cases is None:
        ids = dict.fromkeys(s.case_id for s in scores)
        # validated, not model_construct: pydantic 2.13's model_construct inspects every
        # default factory's signature on every call (about 1 ms a case)
        cases = [Case(case_id=case_id, question="(scores only)") for case_id in ids]
    with ScoreColumns(metrics, fields) as columns:
        columns.add(cases, scores)
        return aggregate_columns(columns, metrics, resamples, seed, failed_as)


def aggregate_columns(
    columns: ScoreColumns,
    metrics: list[Metric],
    resamples: int = 1000,
    seed: int = 0,
    failed_as: str = "exclude",
) -> tuple[Scorecard, Breakdowns]:
    """``aggregate_with_breakdowns`` of a run's score columns (``scoring.columns``), a few
    metrics at a time when the run is large: every group of metrics is bootstrapped on the
    same Poisson weights (the same seed and cases), so the result is the same."""
    ordered = _ordered(metrics)
    first = np.array([c not in columns.repeat_of for c in columns.case_ids], dtype=bool)
    repeated = not bool(first.all())
    partitions = [Partition.whole(int(first.sum()))]
    for labels in columns.fields:
        found = labels.per_case()
        if isinstance(found, tuple):
            names, codes = found
            partitions.append(Partition.from_codes(labels.field, names, codes[first]))
        else:
            kept = [case for case, keep in zip(found, first, strict=True) if keep]
            partitions.append(Partition.from_labels(labels.field, kept))
    detector = {name: label[first] for name, label in columns.labels().items()}
    per_group = max(1, GROUP_CELLS // max(1, columns.cases))
    results: list[list[list[MetricSummary]]] = [[[] for _ in p.labels] for p in partitions]
    for start in range(0, len(ordered), per_group):
        chosen = ordered[start : start + per_group]
        summaries = _summarize_group(
            columns, chosen, partitions, detector, repeated, resamples, seed, failed_as
        )
        for p, groups in enumerate(summaries):
            for g, group in enumerate(groups):
                results[p][g].extend(group)
    breakdowns: Breakdowns = {
        partition.field: dict(zip(partition.labels, groups, strict=True))
        for partition, groups in zip(partitions[1:], results[1:], strict=True)
    }
    return _scorecard(results[0][0]), breakdowns


def _summarize_group(
    columns: ScoreColumns,
    chosen: list[Metric],
    partitions: list[Partition],
    detector: dict[str, npt.NDArray[np.float64]],
    repeated: bool,
    resamples: int,
    seed: int,
    failed_as: str,
) -> list[list[list[MetricSummary]]]:
    table = columns.table([m.name for m in chosen])
    table.count_failed_as(chosen, failed_as)
    answers = table.status
    collapsed = None
    if repeated:
        collapsed = collapse(table.case_ids, table.values, table.status, columns.repeat_of)
        table = ScoreTable(
            collapsed.case_ids, table.metrics, collapsed.values, collapsed.status, table.failed_as
        )
    labels = {m.name: detector[m.name] for m in chosen if m.name in detector}
    results = summarize(table, chosen, partitions, resamples, seed, labels=labels)
    if collapsed is not None:
        for summary in results[0][0]:
            j = table.metrics.index(summary.name)
            # failures and coverage count answers: a case whose repeats partly failed (or
            # were given a value by failed_as) is not fully measured
            measured = int((answers[:, j] == 0).sum())
            summary.n_failed = int((answers[:, j] == 2).sum())
            summary.n_unreported = int((answers[:, j] == 4).sum())
            missed = summary.n_failed + summary.n_unreported
            summary.coverage = (
                round(measured / (measured + missed), 6) if measured + missed else None
            )
            summary.repeats = collapsed.repeats
            summary.within_case_var = _finite(collapsed.within[j])
            summary.between_case_var = _finite(collapsed.between[j])
    return results


def _finite(value: float) -> float | None:
    return None if np.isnan(value) else round(float(value), 8)


def aggregate_scores(
    scores: list[Score], metrics: list[Metric], resamples: int = 1000, seed: int = 0
) -> Scorecard:
    return aggregate_with_breakdowns(scores, metrics, resamples=resamples, seed=seed)[0]

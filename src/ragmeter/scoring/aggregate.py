"""Aggregate per-case scores into a scorecard: value, counts and a 95% bootstrap interval.

``aggregate_with_breakdowns`` is the fast path used by runs (a joint Poisson bootstrap over
every metric and breakdown group); ``bootstrap_interval`` is the plain percentile bootstrap of
one array, kept for single-array use."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ragmeter.metrics.base import GROUPS, Metric
from ragmeter.models import Case, MetricSummary, Score, Scorecard
from ragmeter.scoring.bootstrap import Partition, summarize
from ragmeter.scoring.breakdowns import labels_by_case
from ragmeter.scoring.repeats import REPEAT_KEY, base_ids, collapse, first_answers
from ragmeter.scoring.roc import is_roc
from ragmeter.scoring.table import ScoreTable

Breakdowns = dict[str, dict[str, list[MetricSummary]]]

_PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0}
_BLOCK = 2_000_000  # resample cells per block, to bound memory


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


def detector_labels(
    scores: list[Score], metrics: list[Metric], case_ids: list[str]
) -> dict[str, npt.NDArray[np.float64]]:
    """For each detector metric (``auc``, ``tpr_at_fpr_*``), the label its ok scores recorded
    (``details["label"]``: 1 positive, 0 negative), aligned with ``case_ids``; NaN where a
    case has no ok score or no label."""
    names = {m.name for m in metrics if is_roc(m.aggregation)}
    if not names:
        return {}
    row = {case_id: i for i, case_id in enumerate(case_ids)}
    labels = {name: np.full(len(case_ids), np.nan) for name in names}
    for score in scores:
        if score.metric in names and score.status == "ok" and score.case_id in row:
            label = score.details.get("label")
            if isinstance(label, bool):
                labels[score.metric][row[score.case_id]] = float(label)
    return labels


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
    ordered = _ordered(metrics)
    case_ids = [case.case_id for case in cases] if cases is not None else None
    table = ScoreTable.from_scores(scores, [m.name for m in ordered], case_ids)
    table.count_failed_as(ordered, failed_as)
    collapsed = None
    answers = table.status
    if cases is not None and any(case.metadata.get(REPEAT_KEY) for case in cases):
        collapsed = collapse(table.case_ids, table.values, table.status, base_ids(cases))
        table = ScoreTable(
            collapsed.case_ids, table.metrics, collapsed.values, collapsed.status, table.failed_as
        )
        cases = first_answers(cases)
    partitions = [Partition.whole(len(table.case_ids))]
    if fields:
        if cases is None:
            raise ValueError("breakdowns need the cases of the run")
        partitions += [Partition.from_labels(f, labels_by_case(cases, f)) for f in fields]
    labels = detector_labels(scores, ordered, table.case_ids)
    results = summarize(table, ordered, partitions, resamples, seed, labels=labels)
    breakdowns: Breakdowns = {
        partition.field: dict(zip(partition.labels, groups, strict=True))
        for partition, groups in zip(partitions[1:], results[1:], strict=True)
    }
    summaries = results[0][0]
    if collapsed is not None:
        for summary in summaries:
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
    return _scorecard(summaries), breakdowns


def _finite(value: float) -> float | None:
    return None if np.isnan(value) else round(float(value), 8)


def aggregate_scores(
    scores: list[Score], metrics: list[Metric], resamples: int = 1000, seed: int = 0
) -> Scorecard:
    return aggregate_with_breakdowns(scores, metrics, resamples=resamples, seed=seed)[0]

"""Per-case scores as a dense case x metric table (NumPy), the input of every aggregate."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter

import numpy as np
import numpy.typing as npt

from ragmeter.metrics.base import NOT_REPORTED, Metric
from ragmeter.models import Score

_STATUS = {"ok": 0, "skipped": 1, "failed": 2}
MISSING = 3
NOT_REPORTED_CODE = 4  # skipped: the target did not report what the metric reads
_CASE_ID, _METRIC = attrgetter("case_id"), attrgetter("metric")
_VALUE = attrgetter("value")


def failed_value(metric: Metric, policy: str) -> tuple[str, float] | None:
    """The value a failed case of ``metric`` counts as under ``policy``, with what it is
    called: ``worst`` is the scale's worst end; ``zero`` is 0 where 0 is the worst end, else
    the worst end too (0 on a lower-is-better metric would count a failure as perfect)."""
    if metric.aggregation not in ("mean", "sum"):
        return None
    if metric.kind in ("binary", "proportion"):
        scale = (0.0, 1.0)
    elif metric.kind == "score":
        scale = metric.scale or (0.0, 1.0)
    else:
        return None
    worst = scale[0] if metric.higher_is_better else scale[1]
    if policy == "zero" and worst == 0.0:
        return "zero", 0.0
    return "worst", worst


def _status_code(status: str, reason: str | None) -> int:
    code = _STATUS[status]
    if code == 1 and reason is not None and reason.startswith(NOT_REPORTED):
        return NOT_REPORTED_CODE
    return code


_STATUS_REASON = attrgetter("status", "reason")


class _Codes(dict[tuple[str, str | None], int]):
    """(status, reason) -> status code, computed once per pair (reasons repeat a lot)."""

    def __missing__(self, key: tuple[str, str | None]) -> int:
        code = self[key] = _status_code(*key)
        return code


@dataclass
class ScoreTable:
    """``values[i, j]`` is case i's value for metric j (NaN unless its status is ok);
    ``status[i, j]`` is 0 ok, 1 skipped, 2 failed, 3 absent, 4 skipped because the target did
    not report what the metric reads (``metrics.base.NOT_REPORTED``)."""

    case_ids: list[str]
    metrics: list[str]
    values: npt.NDArray[np.float64]
    status: npt.NDArray[np.int8]
    # metric -> how its failed cases were counted in its value (count_failed_as)
    failed_as: dict[str, str] = field(default_factory=dict)

    def count_failed_as(self, metrics: list[Metric], policy: str) -> None:
        """Give failed cases a value (``failed_as`` policy ``zero`` or ``worst``) so they stay
        in the denominator; they stay counted as failed, and coverage still leaves them out.
        Only metrics with a scale and a mean or sum take part: a latency or a count has no
        worst value, and an AUC no per-case one."""
        if policy == "exclude":
            return
        by_name = {metric.name: metric for metric in metrics}
        for j, name in enumerate(self.metrics):
            applied = failed_value(by_name[name], policy) if name in by_name else None
            if applied is None:
                continue
            label, value = applied
            failed = self.status[:, j] == 2
            if failed.any():
                self.values[failed, j] = value
                self.failed_as[name] = label

    @classmethod
    def from_scores(
        cls, scores: list[Score], metrics: list[str], case_ids: list[str] | None = None
    ) -> ScoreTable:
        if case_ids is None:
            case_ids = list(dict.fromkeys(s.case_id for s in scores))
        case_index = {case_id: i for i, case_id in enumerate(case_ids)}
        metric_index = {name: j for j, name in enumerate(metrics)}
        n, m = len(case_ids), len(metrics)
        values = np.full((n, m), np.nan)
        status = np.full((n, m), MISSING, dtype=np.int8)
        count = len(scores)
        if count:
            rows = np.fromiter(
                map(case_index.get, map(_CASE_ID, scores), repeat(-1)), np.intp, count
            )
            cols = np.fromiter(
                map(metric_index.get, map(_METRIC, scores), repeat(-1)), np.intp, count
            )
            codes = np.fromiter(
                map(_Codes().__getitem__, map(_STATUS_REASON, scores)), np.int8, count
            )
            vals = np.array(list(map(_VALUE, scores)), dtype=np.float64)  # None -> NaN
            keep = (rows >= 0) & (cols >= 0)
            rows, cols, codes, vals = rows[keep], cols[keep], codes[keep], vals[keep]
            status[rows, cols] = codes
            values[rows, cols] = np.where(codes == 0, vals, np.nan)
        return cls(case_ids, metrics, values, status)

    def column(self, metric: str) -> npt.NDArray[np.float64]:
        return self.values[:, self.metrics.index(metric)]

"""Per-case scores as a dense case x metric table (NumPy), the input of every aggregate."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter

import numpy as np
import numpy.typing as npt

from ragmeter.models import Score

_STATUS = {"ok": 0, "skipped": 1, "failed": 2}
MISSING = 3
_CASE_ID, _METRIC = attrgetter("case_id"), attrgetter("metric")
_STATUS_OF, _VALUE = (
    attrgetter("status"),
    attrgetter("value"),
)  # no score row at all for this case and metric


@dataclass
class ScoreTable:
    """``values[i, j]`` is case i's value for metric j (NaN unless its status is ok);
    ``status[i, j]`` is 0 ok, 1 skipped, 2 failed, 3 absent."""

    case_ids: list[str]
    metrics: list[str]
    values: npt.NDArray[np.float64]
    status: npt.NDArray[np.int8]

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
            codes = np.fromiter(map(_STATUS.__getitem__, map(_STATUS_OF, scores)), np.int8, count)
            vals = np.array(list(map(_VALUE, scores)), dtype=np.float64)  # None -> NaN
            keep = (rows >= 0) & (cols >= 0)
            rows, cols, codes, vals = rows[keep], cols[keep], codes[keep], vals[keep]
            status[rows, cols] = codes
            values[rows, cols] = np.where(codes == 0, vals, np.nan)
        return cls(case_ids, metrics, values, status)

    def column(self, metric: str) -> npt.NDArray[np.float64]:
        return self.values[:, self.metrics.index(metric)]

    def ok_values(self, metric: str) -> dict[str, float]:
        """case id -> value, for the cases this metric scored."""
        column = self.column(metric)
        return {
            case_id: float(value)
            for case_id, value in zip(self.case_ids, column, strict=True)
            if not np.isnan(value)
        }

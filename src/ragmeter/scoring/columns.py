"""A run's scores gathered batch by batch as compact columns, for aggregation without holding
a ``Score`` per case and metric.

Each metric keeps a value column (float64, NaN unless ok) and a status column (int8, the codes
of :class:`~ragmeter.scoring.table.ScoreTable`); a detector metric also keeps its labels. What
the aggregation needs of each case (its id, the id it repeats, its breakdown labels) is kept
as well, labels as small integer codes. Columns stay in memory until they pass
``SPILL_CELLS`` cells, then go to temporary files and are read back a few metrics at a time.
"""

from __future__ import annotations

import tempfile
from array import array
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragmeter.metrics.base import Metric
from ragmeter.models import Case, Score
from ragmeter.repeat_ids import REPEAT_KEY
from ragmeter.scoring.breakdowns import labels_by_case
from ragmeter.scoring.roc import is_roc
from ragmeter.scoring.table import ScoreTable

# cells (cases x metrics) held in memory before the columns go to files: 2 M cells are ~18 MB
SPILL_CELLS = 2_000_000


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


class FieldLabels:
    """One breakdown field's label of every case: a code per case while each case has one
    label, the lists themselves once a case has several (tags)."""

    def __init__(self, field: str) -> None:
        self.field = field
        self.names: dict[str, int] = {}
        self.codes = array("i")
        self.lists: list[list[str]] | None = None

    def add(self, labels: list[list[str]]) -> None:
        if self.lists is None and all(len(found) == 1 for found in labels):
            names = self.names
            self.codes.extend(names.setdefault(found[0], len(names)) for found in labels)
            return
        if self.lists is None:
            by_code = list(self.names)
            self.lists = [[by_code[code]] for code in self.codes]
        self.lists.extend(labels)

    def per_case(self) -> list[list[str]] | tuple[list[str], npt.NDArray[np.intp]]:
        """The label lists, or (label names, each case's code) when every case has one."""
        if self.lists is not None:
            return self.lists
        return list(self.names), np.frombuffer(self.codes, dtype=np.int32).astype(np.intp)


class ScoreColumns:
    """The columns of a run's scores, added one batch of cases at a time."""

    def __init__(self, metrics: list[Metric], fields: list[str] | tuple[str, ...] = ()) -> None:
        self.metrics = [metric.name for metric in metrics]
        self.detectors = [metric for metric in metrics if is_roc(metric.aggregation)]
        self.case_ids: list[str] = []
        self.repeat_of: dict[str, str] = {}
        self.fields = [FieldLabels(field) for field in fields]
        self._values: list[npt.NDArray[np.float64]] = []  # per batch: cases x metrics
        self._status: list[npt.NDArray[np.int8]] = []
        self._labels: dict[str, list[npt.NDArray[np.float64]]] = {
            d.name: [] for d in self.detectors
        }
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._cells = 0

    @property
    def cases(self) -> int:
        return len(self.case_ids)

    def add(self, cases: list[Case], scores: list[Score]) -> None:
        """Add a batch: its cases (in run order) and every score of theirs."""
        ids = [case.case_id for case in cases]
        self.case_ids.extend(ids)
        for case in cases:
            repeated = case.metadata.get(REPEAT_KEY)
            if repeated:
                self.repeat_of[case.case_id] = str(repeated)
        for labels in self.fields:
            labels.add(labels_by_case(cases, labels.field))
        table = ScoreTable.from_scores(scores, self.metrics, ids)
        self._values.append(table.values)
        self._status.append(table.status)
        if self.detectors:
            found = detector_labels(scores, self.detectors, ids)
            for name, parts in self._labels.items():
                parts.append(found[name])
        self._cells += table.values.size
        if self._folder is not None or self._cells > SPILL_CELLS:
            self._spill()

    def _spill(self) -> None:
        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix="ragmeter-scores-")
        folder = Path(self._folder.name)
        for values, status in zip(self._values, self._status, strict=True):
            for j in range(len(self.metrics)):
                with (folder / f"{j}.values").open("ab") as out:
                    out.write(np.ascontiguousarray(values[:, j]).tobytes())
                with (folder / f"{j}.status").open("ab") as out:
                    out.write(np.ascontiguousarray(status[:, j]).tobytes())
        self._values.clear()
        self._status.clear()

    def table(self, names: list[str]) -> ScoreTable:
        """The columns of ``names`` (metrics of this run) over every case."""
        columns = [self.metrics.index(name) for name in names]
        n = self.cases
        if self._folder is None:
            values = (
                np.concatenate(self._values)[:, columns]
                if self._values
                else np.full((0, len(columns)), np.nan)
            )
            status = (
                np.concatenate(self._status)[:, columns]
                if self._status
                else np.full((0, len(columns)), 3, dtype=np.int8)
            )
            return ScoreTable(list(self.case_ids), list(names), values, status)
        folder = Path(self._folder.name)
        values = np.empty((n, len(columns)))
        status = np.empty((n, len(columns)), dtype=np.int8)
        for c, j in enumerate(columns):
            values[:, c] = np.fromfile(folder / f"{j}.values", dtype=np.float64)
            status[:, c] = np.fromfile(folder / f"{j}.status", dtype=np.int8)
        return ScoreTable(list(self.case_ids), list(names), values, status)

    def labels(self) -> dict[str, npt.NDArray[np.float64]]:
        """Each detector metric's label per case (1 positive, 0 negative, NaN unknown)."""
        return {
            name: np.concatenate(parts) if parts else np.empty(0)
            for name, parts in self._labels.items()
        }

    def close(self) -> None:
        self._values.clear()
        self._status.clear()
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None

    def __enter__(self) -> ScoreColumns:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

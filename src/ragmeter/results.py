"""A finished run as the Python API returns it: :class:`Run`, the typed run file (the run record:
scorecard with intervals and counts, weighted score, goals; and every case with its scores),
with the path of its JSON file and ``to_pandas()`` for analysis in a notebook."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import PrivateAttr

from ragmeter.errors import RagmeterError
from ragmeter.run_record import MetricSummary
from ragmeter.runfile import RunFile

if TYPE_CHECKING:
    from ragmeter.runner.engine import RunOutcome

__all__ = ["PANDAS_HINT", "MissingDependencyError", "Run"]

PANDAS_HINT = "pip install pandas"
FrameRows = Literal["cases", "scores", "metrics"]


class MissingDependencyError(RagmeterError, ImportError):
    """An optional package a call needs is not installed; the message says how to add it."""


class Run(RunFile):
    """A completed (or interrupted) run: the run record's fields (``id``, ``status``,
    ``scorecard``, ``weighted_score``, ``goals``, ``question_count``, ``error_count``, ...)
    and ``cases``, one :class:`~ragmeter.runfile.CaseOutcome` a case."""

    _path: Path | None = PrivateAttr(default=None)

    @classmethod
    def from_outcome(cls, outcome: RunOutcome) -> Run:
        run = cls.from_run(outcome.record, outcome.results, outcome.scores)
        assert isinstance(run, Run)
        run._path = outcome.run_file
        return run

    @classmethod
    def load(cls, path: Path | str) -> Run:
        """A run file read back (``RunFile.read``) as a :class:`Run`."""
        read = RunFile.read(path)
        run = cls.model_construct(**dict(read))
        run._path = Path(path)
        return run

    def __repr__(self) -> str:
        # short: a run holds every case's scores, and pytest prints fixtures' values
        metrics = len(self.scorecard.metrics) if self.scorecard is not None else 0
        return (
            f"Run(id={self.id!r}, status={self.status!r}, datasets={self.datasets!r}, "
            f"questions={self.question_count}, errors={self.error_count}, metrics={metrics})"
        )

    @property
    def path(self) -> Path | None:
        """The run's JSON file (None when the run wrote none)."""
        return self._path

    @property
    def metric_names(self) -> list[str]:
        return [m.name for m in self.scorecard.metrics] if self.scorecard is not None else []

    def metric(self, name: str) -> MetricSummary:
        """One metric's aggregate (value, ``ci_low``/``ci_high``, ``n_scored``/``n_skipped``/
        ``n_failed``, coverage); KeyError naming the run's metrics when it has no such one."""
        summary = self.scorecard.get(name) if self.scorecard is not None else None
        if summary is None:
            raise KeyError(
                f"run {self.id} has no metric {name!r}; it has: {', '.join(self.metric_names)}"
            )
        return summary

    def to_pandas(self, rows: FrameRows = "cases") -> Any:  # a pandas.DataFrame
        """The run as a pandas DataFrame (``pip install pandas``):

        - ``"cases"``: a row a case (``case_id``, ``status``, ``error_type``, ``latency_ms``) and
          a column a metric, NaN where the metric skipped or failed;
        - ``"scores"``: a row a case and metric: ``value``, ``status`` (ok, skipped, failed),
          ``reason``;
        - ``"metrics"``: the scorecard, a row a metric with its interval and counts.
        """
        try:
            import pandas  # type: ignore[import-untyped,unused-ignore]
        except ImportError as exc:
            raise MissingDependencyError(
                f"Run.to_pandas() needs pandas, which is not installed: {PANDAS_HINT}"
            ) from exc
        return pandas.DataFrame(self._rows(rows))

    def _rows(self, rows: FrameRows) -> list[dict[str, Any]]:
        if rows == "metrics":
            fields = ("name", "group", "value", "ci_low", "ci_high", "n_scored", "n_skipped")
            extra = ("n_failed", "coverage", "unit", "kind", "higher_is_better", "aggregation")
            metrics = self.scorecard.metrics if self.scorecard is not None else []
            return [{key: getattr(m, key) for key in fields + extra} for m in metrics]
        if rows not in ("cases", "scores"):
            raise ValueError(f"to_pandas: rows {rows!r} is not one of cases, scores, metrics")
        table: list[dict[str, Any]] = []
        for case in self.cases or []:
            if rows == "scores":
                for metric, score in case.scores.items():
                    if isinstance(score, int | float):
                        value, status, reason = float(score), "ok", None
                    else:
                        value, status, reason = None, score["status"], score.get("reason")
                    table.append(
                        {
                            "case_id": case.case_id,
                            "metric": metric,
                            "value": value,
                            "status": status,
                            "reason": reason,
                        }
                    )
                continue
            row: dict[str, Any] = {
                "case_id": case.case_id,
                "status": case.status,
                "error_type": case.error_type,
                "latency_ms": case.latency_ms,
            }
            for metric in self.metric_names:
                found = case.scores.get(metric)
                row[metric] = float(found) if isinstance(found, int | float) else float("nan")
            table.append(row)
        return table

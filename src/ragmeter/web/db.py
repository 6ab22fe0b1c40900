"""Read-only queries over a run store for the web UI.

The store is opened with ``mode=ro`` (a SQLite URI) and ``PRAGMA query_only``: browsing never
writes to it. Each request opens its own connection (cheap; a connection is not shared between
the server's threads). Lists are paged in SQL, so a store of thousands of runs or a run of tens
of thousands of cases costs one page's rows a request.
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ragmeter.errors import StoreError
from ragmeter.metrics.base import lowers_coverage
from ragmeter.models import Case, CaseResult, Score
from ragmeter.repeat_ids import base_id
from ragmeter.reports.case_details import is_low
from ragmeter.run_record import MetricSummary, RunRecord
from ragmeter.store import rows
from ragmeter.store.lock import holder_pid

RUNS_PER_PAGE = 50
CASES_PER_PAGE = 100
_RUN_COLUMNS = (
    "id, name, status, created_at, completed_at, schema_version, config_json, datasets_json,"
    " question_count, error_count, scorecard_json, extras_json, index_stats_json"
)


class NotFound(Exception):
    """An unknown run or case (the server answers 404 with the message)."""


def connect(path: Path) -> sqlite3.Connection:
    """A read-only connection to the store at ``path`` (StoreError if it is not a store)."""
    if not path.is_file():
        raise StoreError(f"no run store at {path}; run `ragmeter eval` first or pass --store")
    try:
        db = sqlite3.connect(
            f"file:{quote(str(path.absolute()))}?mode=ro",
            uri=True,
            check_same_thread=False,
            timeout=10.0,
        )
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA query_only=1")
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the run store {path} read-only: {exc}") from exc
    if "runs" not in tables:
        db.close()
        raise StoreError(f"{path} is not a ragmeter run store (no runs table)")
    return db


@dataclass
class Page:
    items: list[Any]
    total: int
    page: int
    per_page: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))

    def meta(self) -> dict[str, int]:
        return {
            "total": self.total,
            "page": self.page,
            "per_page": self.per_page,
            "pages": self.pages,
        }


@dataclass
class CaseRow:
    """One row of a run's case table."""

    case_id: str
    position: int
    question: str
    category: str | None
    status: str  # ok, error, or "not answered"
    latency_ms: float | None
    error_type: str | None
    failed: list[str] = field(default_factory=list)  # metrics whose score failed
    low: list[str] = field(default_factory=list)  # metrics scored in the bad part of the scale

    def as_json(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "position": self.position,
            "question": self.question,
            "category": self.category,
            "status": self.status,
            "latency_ms": self.latency_ms,
            "error_type": self.error_type,
            "failed_metrics": self.failed,
            "low_metrics": self.low,
        }


class ReadOnlyStore:
    """The queries of the web UI over one read-only connection."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = connect(path)

    def close(self) -> None:
        self.db.close()

    # runs -------------------------------------------------------------------------------------
    def list_runs(
        self,
        *,
        status: str | None = None,
        dataset: str | None = None,
        search: str | None = None,
        page: int = 1,
        per_page: int = RUNS_PER_PAGE,
    ) -> Page:
        where, args = ["1=1"], []
        if status:
            where.append("status = ?")
            args.append(status)
        if dataset:
            where.append("EXISTS (SELECT 1 FROM json_each(runs.datasets_json) WHERE value = ?)")
            args.append(dataset)
        if search:
            pattern = "%" + search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            where.append("(name LIKE ? ESCAPE '\\' OR id LIKE ? ESCAPE '\\')")
            args += [pattern + "%", pattern + "%"]
        clause = " AND ".join(where)
        total = self.db.execute(f"SELECT COUNT(*) FROM runs WHERE {clause}", args).fetchone()[0]
        # the list needs the weighted score and the goals, not the scorecard: read those two
        # out of the extras in SQL (a run's extras hold every breakdown, slow to validate)
        found = self.db.execute(
            "SELECT id, name, status, created_at, completed_at, datasets_json, question_count,"
            " error_count, CASE WHEN json_valid(extras_json) THEN"
            " json_extract(extras_json, '$.weighted_score.score') END AS weighted,"
            " CASE WHEN json_valid(extras_json) THEN coalesce(json_extract(extras_json, '$.goals'),"
            " json_extract(extras_json, '$.targets')) END AS goals"  # "targets": an older row
            " FROM runs WHERE id IN"  # the page's ids first: no JSON read
            f" (SELECT id FROM runs WHERE {clause} ORDER BY created_at DESC, id LIMIT ? OFFSET ?)"
            " ORDER BY created_at DESC, id",
            [*args, per_page, (page - 1) * per_page],
        ).fetchall()
        return Page([_run_row(row) for row in found], int(total), page, per_page)

    def datasets(self) -> list[str]:
        found = self.db.execute(
            "SELECT DISTINCT value FROM runs, json_each(runs.datasets_json) ORDER BY value"
        )
        return [str(row[0]) for row in found]

    def get_run(self, run_id: str) -> RunRecord:
        row = self.db.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise NotFound(f"no run {run_id!r} in the store")
        return rows.record_from_row(row, self.path)

    def driven(self, run_id: str) -> bool:
        """True when a live process holds the run's lock (the run is in flight)."""
        return holder_pid(self.path, run_id) is not None

    def progress(self, record: RunRecord) -> dict[str, Any]:
        answered = self.db.execute(
            "SELECT COUNT(*), SUM(status != 'ok') FROM responses WHERE run_id = ?", (record.id,)
        ).fetchone()
        scored = self.db.execute(  # one primary-key probe a case
            "SELECT COUNT(*) FROM cases c WHERE c.run_id = ? AND EXISTS"
            " (SELECT 1 FROM scores s WHERE s.run_id = c.run_id AND s.case_id = c.case_id)",
            (record.id,),
        ).fetchone()[0]
        return {
            "run_id": record.id,
            "status": record.status,
            "live": record.status == "running" and self.driven(record.id),
            "questions": record.question_count,
            "answered": int(answered[0]),
            "errors": int(answered[1] or 0),
            "scored": int(scored),
        }

    def latencies(self, run_id: str) -> list[float]:
        """The answered cases' latencies (as the scorecard reads them: a failure's is not one)."""
        found = self.db.execute(
            "SELECT latency_ms FROM responses"
            " WHERE run_id = ? AND status = 'ok' AND latency_ms IS NOT NULL",
            (run_id,),
        )
        return [v for v in (float(row[0]) for row in found) if math.isfinite(v)]

    def judge_cost(self, run_id: str) -> dict[str, Any]:
        row = self.db.execute(
            "SELECT COUNT(*) AS calls, SUM(cached) AS cached, SUM(prompt_tokens) AS prompt,"
            " SUM(completion_tokens) AS completion, SUM(cost_usd) AS usd,"
            " SUM(cost_usd IS NULL AND cached = 0) AS unpriced"
            " FROM judge_calls WHERE run_id = ?",
            (run_id,),
        ).fetchone()
        return rows.judge_cost_from_row(row)

    def categories(self, run_id: str) -> list[str]:
        found = self.db.execute(
            "SELECT DISTINCT json_extract(case_json, '$.category') AS c FROM cases"
            " WHERE run_id = ? AND c IS NOT NULL ORDER BY c",
            (run_id,),
        )
        return [str(row[0]) for row in found]

    # the case table ---------------------------------------------------------------------------
    def case_page(
        self,
        record: RunRecord,
        *,
        page: int = 1,
        per_page: int = CASES_PER_PAGE,
        status: str | None = None,
        category: str | None = None,
        failing: str | None = None,
    ) -> Page:
        """A page of the run's cases in order. ``failing``: ``any`` (no answer or a failed
        score), or a metric name (that metric failed or scored low on the case)."""
        where, args = ["c.run_id = ?"], [record.id]
        if status == "not answered":
            where.append("r.status IS NULL")
        elif status:
            where.append("r.status = ?")
            args.append(status)
        if category:
            where.append("json_extract(c.case_json, '$.category') = ?")
            args.append(category)
        if failing == "any":
            where.append(
                "(r.status IS NOT NULL AND r.status != 'ok' OR c.case_id IN"
                " (SELECT case_id FROM scores WHERE run_id = ? AND status = 'failed'))"
            )
            args.append(record.id)
        elif failing:
            condition, extra = _low_condition(_summary(record, failing))
            where.append(  # one primary-key lookup a case
                "EXISTS (SELECT 1 FROM scores s WHERE s.run_id = c.run_id"
                " AND s.case_id = c.case_id AND s.metric = ?"
                f" AND (s.status = 'failed' OR {condition}))"
            )
            args += [failing, *extra]
        clause = " AND ".join(where)
        source = (
            "FROM cases c LEFT JOIN responses r ON r.run_id = c.run_id AND r.case_id = c.case_id"
        )
        total = self.db.execute(f"SELECT COUNT(*) {source} WHERE {clause}", args).fetchone()[0]
        found = self.db.execute(
            "SELECT c.case_id, c.position, json_extract(c.case_json, '$.question') AS question,"
            " json_extract(c.case_json, '$.category') AS category, r.status, r.latency_ms,"
            f" r.error_type {source} WHERE {clause} ORDER BY c.position LIMIT ? OFFSET ?",
            [*args, per_page, (page - 1) * per_page],
        ).fetchall()
        items = [
            CaseRow(
                case_id=str(row["case_id"]),
                position=int(row["position"]),
                question=str(row["question"] or ""),
                category=row["category"] if isinstance(row["category"], str) else None,
                status=row["status"] or "not answered",
                latency_ms=row["latency_ms"],
                error_type=row["error_type"],
            )
            for row in found
        ]
        self._mark(record, items)
        return Page(items, int(total), page, per_page)

    def _mark(self, record: RunRecord, items: list[CaseRow]) -> None:
        """Each case's failed and low metrics (the page's scores only)."""
        if not items:
            return
        summaries = {m.name: m for m in record.scorecard.metrics} if record.scorecard else {}
        by_id = {item.case_id: item for item in items}
        marks = ",".join("?" * len(by_id))
        found = self.db.execute(
            "SELECT case_id, metric, value, status FROM scores"
            f" WHERE run_id = ? AND case_id IN ({marks}) ORDER BY rowid",
            [record.id, *by_id],
        )
        for case_id, metric, value, status in found:
            item = by_id[case_id]
            if status == "failed":
                item.failed.append(metric)
            elif is_low(Score(case_id, metric, value, status), summaries.get(metric)):
                item.low.append(metric)

    # one case ---------------------------------------------------------------------------------
    def case(self, run_id: str, case_id: str) -> tuple[Case, CaseResult | None, list[Score]]:
        row = self.db.execute(
            "SELECT case_id, case_json FROM cases WHERE run_id = ? AND case_id = ?",
            (run_id, case_id),
        ).fetchone()
        if row is None:
            raise NotFound(f"no case {case_id!r} in run {run_id!r}")
        case = rows.case_from_row(row, self.path, run_id)
        answer = self.db.execute(
            "SELECT * FROM responses WHERE run_id = ? AND case_id = ?", (run_id, case_id)
        ).fetchone()
        result = rows.result_from_row(answer) if answer is not None else None
        found = self.db.execute(
            "SELECT * FROM scores WHERE run_id = ? AND case_id = ? ORDER BY rowid",
            (run_id, case_id),
        ).fetchall()
        return case, result, [rows.score_from_row(r) for r in found]

    def judge_calls(self, run_id: str, case_id: str) -> list[dict[str, Any]]:
        found = self.db.execute(
            "SELECT id, created_at, purpose, model, prompt_name, prompt_version, params_json,"
            " messages_json, output_text, finish_reason, prompt_tokens, completion_tokens,"
            " cost_usd, latency_ms, cached, status, error FROM judge_calls"
            " WHERE run_id = ? AND case_id = ? ORDER BY id",
            (run_id, case_id),
        ).fetchall()
        calls = []
        for row in found:
            call = dict(row)
            for column in ("params_json", "messages_json"):
                text = call.pop(column)
                try:
                    call[column.removesuffix("_json")] = json.loads(text) if text else None
                except ValueError:
                    call[column.removesuffix("_json")] = text
            call["cached"] = bool(call["cached"])
            calls.append(call)
        return calls

    # comparisons ------------------------------------------------------------------------------
    def values(self, run_id: str) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, bool]]]:
        """The run's ok per-case values by metric, and the detector labels in their details."""
        values: dict[str, dict[str, float]] = {}
        labels: dict[str, dict[str, bool]] = {}
        found = self.db.execute(
            "SELECT case_id, metric, value, CASE WHEN details_json LIKE '%\"label\"%'"
            " AND json_valid(details_json) THEN json_type(details_json, '$.label') END"
            " FROM scores"
            " WHERE run_id = ? AND status = 'ok' AND value IS NOT NULL ORDER BY rowid",
            (run_id,),
        )
        for case_id, metric, value, label in found:
            if not math.isfinite(value):  # Inf (older or foreign stores): not a value
                continue
            values.setdefault(metric, {})[case_id] = float(value)
            if label in ("true", "false"):
                labels.setdefault(metric, {})[case_id] = label == "true"
        return values, labels

    def missed(self, run_id: str) -> dict[str, set[str]]:
        """Metric -> the cases (repeats folded to their case) it failed on or the target did not
        report for: what a comparison of the scored cases leaves out, as
        :meth:`ragmeter.scoring.compare.CaseValues.from_store` reads them."""
        missed: dict[str, set[str]] = {}
        found = self.db.execute(
            "SELECT case_id, metric, status, reason FROM scores WHERE run_id = ? AND NOT"
            " (status = 'ok' AND value IS NOT NULL) ORDER BY rowid",
            (run_id,),
        )
        for case_id, metric, status, reason in found:
            if lowers_coverage(status, reason):
                missed.setdefault(metric, set()).add(base_id(case_id))
        return missed


def _json_list(text: Any) -> list[Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def _run_row(row: sqlite3.Row) -> dict[str, Any]:
    """A runs-list row: the run's header, weighted score and goals' verdicts."""
    goals = [t for t in _json_list(row["goals"]) if isinstance(t, dict)]
    weighted = row["weighted"]
    return {
        "id": str(row["id"]),
        "name": str(row["name"]),
        "status": str(row["status"]),
        "created_at": str(row["created_at"]),
        "completed_at": row["completed_at"],
        "datasets": [str(d) for d in _json_list(row["datasets_json"])],
        "question_count": int(row["question_count"] or 0),
        "error_count": int(row["error_count"] or 0),
        "weighted_score": float(weighted) if isinstance(weighted, int | float) else None,
        "goals_passed": sum(t.get("status") == "pass" for t in goals),
        "goals_failed": [str(t.get("metric")) for t in goals if t.get("status") == "fail"],
        "goals_not_measured": [
            str(t.get("metric"))
            for t in goals
            if t.get("status") == "not_measured" and not t.get("optional")
        ],
        "goals_optional_not_measured": sum(
            t.get("status") == "not_measured" and bool(t.get("optional")) for t in goals
        ),
    }


def _summary(record: RunRecord, metric: str) -> MetricSummary | None:
    return record.scorecard.get(metric) if record.scorecard else None


def _low_condition(summary: MetricSummary | None) -> tuple[str, list[Any]]:
    """SQL for "an ok value in the bad part of its scale" (is_low in case_details)."""
    if summary is None or summary.aggregation in ("auc", "tpr_at_fpr_1", "tpr_at_fpr_5"):
        return "0", []
    kind, scale = summary.value_kind(), summary.value_scale()
    if kind in ("binary", "proportion", "score") and scale is not None:
        middle = scale[0] + 0.5 * (scale[1] - scale[0])
        operator = "<" if summary.higher_is_better else ">"
        return f"(s.status = 'ok' AND s.value {operator} ?)", [middle]
    if kind == "count" and not summary.higher_is_better:
        return "(s.status = 'ok' AND s.value > 0)", []
    return "0", []

"""Rows of the run store and the models they hold, both ways.

Each ``INSERT_*`` statement sits beside the function that builds its parameters, so columns
and values stay in step. Reading back, a row that no longer validates is reported: a run or a
case as a :class:`~ragmeter.errors.StoreError` naming the field, an answer as an error result.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragmeter.errors import StoreError
from ragmeter.models import RUN_FILE_VERSION, Case, CaseResult, Response, Score
from ragmeter.run_record import RunAggregates, RunRecord, Scorecard
from ragmeter.store.errors import describe, unreadable_run

# the parts of a run record stored together as ``runs.extras_json``
EXTRAS = tuple(RunAggregates.model_fields)


# runs -------------------------------------------------------------------------------------------
INSERT_RUN = (
    "INSERT INTO runs (id, name, status, created_at, schema_version,"
    " config_json, datasets_json, question_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def run_row(record: RunRecord, question_count: int) -> tuple[Any, ...]:
    return (
        record.id,
        record.name,
        record.status,
        record.created_at,
        str(RUN_FILE_VERSION),  # the run's version (the column is the store's first)
        json.dumps(record.config),
        json.dumps(record.datasets),
        question_count,
    )


def extras_json(aggregates: RunAggregates | None) -> str | None:
    if aggregates is None:
        return None
    if isinstance(aggregates, RunRecord):  # a record holds its header too
        aggregates = aggregates.aggregates()
    return aggregates.model_dump_json()


def record_from_row(row: sqlite3.Row, path: Path, lenient: bool = False) -> RunRecord:
    """The run of a ``runs`` row; ``lenient`` leaves out the scorecard and extras.

    Raises StoreError naming the field that does not validate."""
    run_id = row["id"]

    def load(column: str) -> Any:
        try:
            return json.loads(row[column]) if row[column] else None
        except (TypeError, ValueError) as exc:
            raise unreadable_run(
                path, run_id, f"{column.removesuffix('_json')} is not valid JSON ({exc})"
            ) from None

    fields: dict[str, Any] = {
        "id": run_id,
        "name": row["name"],
        "status": row["status"],
        "created_at": row["created_at"],
        "completed_at": row["completed_at"],
        "config": load("config_json"),
        "datasets": load("datasets_json"),
        "question_count": row["question_count"],
        "error_count": row["error_count"],
    }
    if not lenient:
        extras = load("extras_json") or {}
        if not isinstance(extras, dict):
            raise unreadable_run(path, run_id, "extras is not a JSON object")
        # "targets": the goals of a row stored before they had that name
        fields.update({k: v for k, v in extras.items() if k in EXTRAS or k == "targets"})
        fields["index_stats"] = load("index_stats_json")
        if row["scorecard_json"]:
            try:
                fields["scorecard"] = Scorecard.model_validate_json(row["scorecard_json"])
            except ValidationError as exc:
                raise unreadable_run(path, run_id, describe(exc, "scorecard.")) from None
    try:
        return RunRecord.model_validate(fields)
    except ValidationError as exc:
        raise unreadable_run(path, run_id, describe(exc)) from None


# cases ------------------------------------------------------------------------------------------
INSERT_CASE = "INSERT INTO cases (run_id, case_id, position, case_json) VALUES (?, ?, ?, ?)"


def case_rows(run_id: str, cases: Iterable[Case], first: int = 0) -> Iterator[tuple[Any, ...]]:
    """The rows of ``cases``, numbered from position ``first``."""
    return ((run_id, c.case_id, i, c.model_dump_json()) for i, c in enumerate(cases, first))


def case_from_row(row: sqlite3.Row, path: Path, run_id: str) -> Case:
    try:
        return Case.model_validate_json(row["case_json"])
    except ValidationError as exc:
        raise StoreError(
            f"run {run_id} in {path}: stored case {row['case_id']!r} cannot be"
            f" read: {describe(exc)}"
        ) from None


# responses --------------------------------------------------------------------------------------
INSERT_RESPONSE = (
    "INSERT OR IGNORE INTO responses (run_id, case_id, status, error_type,"
    " error_message, latency_ms, attempts, response_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def response_row(run_id: str, r: CaseResult) -> tuple[Any, ...]:
    return (
        run_id,
        r.case_id,
        r.status,
        r.error_type,
        r.error_message,
        r.latency_ms,
        r.attempts,
        r.response.model_dump_json() if r.response is not None else None,
    )


def result_from_row(row: sqlite3.Row) -> CaseResult:
    """The answer of a ``responses`` row, or (if it no longer validates) an error result
    (``unreadable_response``) naming the case and the field."""
    try:
        return CaseResult(
            case_id=row["case_id"],
            status=row["status"],
            error_type=row["error_type"],
            error_message=row["error_message"],
            latency_ms=row["latency_ms"],
            attempts=row["attempts"],
            response=Response.model_validate_json(row["response_json"])
            if row["response_json"]
            else None,
        )
    except ValidationError as exc:
        case_id = str(row["case_id"])
        return CaseResult(
            case_id=case_id,
            status="error",
            error_type="unreadable_response",
            error_message=(
                f"the stored response of case {case_id!r} no longer validates"
                f" ({describe(exc)}); it counts as an error"
            ),
            latency_ms=_number(row["latency_ms"]),
            attempts=row["attempts"] if isinstance(row["attempts"], int) else 1,
        )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


# scores -----------------------------------------------------------------------------------------
INSERT_SCORE = (
    "INSERT INTO scores (run_id, case_id, metric, value, status, reason, details_json)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def score_row(run_id: str, s: Score) -> tuple[Any, ...]:
    return (
        run_id,
        s.case_id,
        s.metric,
        s.value,
        s.status,
        s.reason,
        json.dumps(s.details) if s.details else None,
    )


def score_from_row(row: sqlite3.Row) -> Score:
    return Score(
        case_id=row["case_id"],
        metric=row["metric"],
        value=row["value"],
        status=row["status"],
        reason=row["reason"],
        details=_details(row["details_json"]),
    )


def _details(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        details = json.loads(text)
    except ValueError:
        return {"unreadable": text}
    return details if isinstance(details, dict) else {"value": details}


# summaries ------------------------------------------------------------------------------------
def judge_cost_from_row(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "calls": int(row["calls"]),
        "cached": int(row["cached"] or 0),
        "prompt_tokens": int(row["prompt"] or 0),
        "completion_tokens": int(row["completion"] or 0),
        "total_usd": float(row["usd"]) if row["usd"] is not None else None,
        "unpriced_calls": int(row["unpriced"] or 0),
    }

"""The run store: SQLite in WAL mode with numbered migrations.

Tables: ``runs`` (one row a run, config snapshot and scorecard as JSON), ``cases`` (the cases of
a run, in order), ``responses`` (one row a case once asked: response or error) and ``scores``
(one row a case and metric). Responses are committed as they arrive, so a killed run loses at
most the cases that were in flight, and ``--resume`` asks only the cases with no response.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ragmeter.models import Case, CaseResult, Response, RunRecord, Score, Scorecard

MIGRATIONS: list[str] = [
    # 1: initial schema
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        completed_at TEXT,
        schema_version TEXT NOT NULL,
        config_json TEXT NOT NULL,
        datasets_json TEXT NOT NULL,
        scorecard_json TEXT,
        question_count INTEGER NOT NULL DEFAULT 0,
        error_count INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE cases (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        case_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        case_json TEXT NOT NULL,
        PRIMARY KEY (run_id, case_id)
    );
    CREATE TABLE responses (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        case_id TEXT NOT NULL,
        status TEXT NOT NULL,
        error_type TEXT,
        error_message TEXT,
        latency_ms REAL,
        attempts INTEGER NOT NULL DEFAULT 1,
        response_json TEXT,
        PRIMARY KEY (run_id, case_id)
    );
    CREATE TABLE scores (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        case_id TEXT NOT NULL,
        metric TEXT NOT NULL,
        value REAL,
        status TEXT NOT NULL,
        reason TEXT,
        details_json TEXT,
        PRIMARY KEY (run_id, case_id, metric)
    );
    CREATE INDEX scores_by_metric ON scores (run_id, metric);
    """,
    # 2: the primary key serves the lookups; the extra index only slowed writes
    """
    DROP INDEX scores_by_metric;
    """,
    # 3: breakdowns, weighted score, targets and performance summary of a run (JSON)
    """
    ALTER TABLE runs ADD COLUMN extras_json TEXT;
    """,
    # 4: judge calls (every LLM judge request and reply; the judge cache reads it by key)
    """
    CREATE TABLE judge_calls (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        cache_key TEXT NOT NULL,
        created_at TEXT NOT NULL,
        run_id TEXT,
        case_id TEXT,
        purpose TEXT NOT NULL,
        model TEXT NOT NULL,
        prompt_name TEXT NOT NULL,
        prompt_version TEXT NOT NULL,
        params_json TEXT NOT NULL,
        messages_json TEXT NOT NULL,
        output_text TEXT,
        finish_reason TEXT,
        prompt_tokens INTEGER,
        completion_tokens INTEGER,
        cost_usd REAL,
        latency_ms REAL,
        cached INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL,
        error TEXT
    );
    CREATE INDEX judge_calls_by_key ON judge_calls (cache_key);
    """,
]

_EXTRAS = ("breakdowns", "weighted_score", "targets", "performance", "judge_reliability")


class RunNotFoundError(KeyError):
    def __str__(self) -> str:
        return f"no run {self.args[0]!r} in the store"


class RunStore:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.execute("PRAGMA busy_timeout=5000")
        self._migrate()

    def _migrate(self) -> None:
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)"
        )
        done = {row[0] for row in self.db.execute("SELECT version FROM schema_migrations")}
        for version, script in enumerate(MIGRATIONS, start=1):
            if version in done:
                continue
            with self.transaction():
                for statement in script.split(";"):
                    if statement.strip():
                        self.db.execute(statement)
                self.db.execute("INSERT INTO schema_migrations (version) VALUES (?)", (version,))

    @property
    def schema_version(self) -> int:
        row = self.db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()

    # runs -----------------------------------------------------------------------------------
    def create_run(self, record: RunRecord, cases: list[Case]) -> None:
        with self.transaction():
            self.db.execute(
                "INSERT INTO runs (id, name, status, created_at, schema_version, config_json,"
                " datasets_json, question_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.id,
                    record.name,
                    record.status,
                    record.created_at,
                    record.schema_version,
                    json.dumps(record.config),
                    json.dumps(record.datasets),
                    len(cases),
                ),
            )
            self.db.executemany(
                "INSERT INTO cases (run_id, case_id, position, case_json) VALUES (?, ?, ?, ?)",
                [(record.id, c.case_id, i, c.model_dump_json()) for i, c in enumerate(cases)],
            )

    def finish_run(
        self,
        run_id: str,
        scorecard: Scorecard,
        completed_at: str,
        error_count: int,
        extras: RunRecord | None = None,
    ) -> None:
        """Mark a run completed with its scorecard; ``extras`` (a record) supplies breakdowns,
        weighted score, targets and performance summary."""
        extras_json = extras.model_dump_json(include=set(_EXTRAS)) if extras else None
        with self.transaction():
            self.db.execute(
                "UPDATE runs SET status='completed', completed_at=?, scorecard_json=?,"
                " error_count=?, extras_json=? WHERE id=?",
                (completed_at, scorecard.model_dump_json(), error_count, extras_json, run_id),
            )

    def mark_interrupted(self, run_id: str) -> None:
        self.db.execute(
            "UPDATE runs SET status='interrupted' WHERE id=? AND status='running'", (run_id,)
        )

    def get_run(self, run_id: str) -> RunRecord:
        row = self.db.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            matches = self.db.execute(
                "SELECT * FROM runs WHERE id LIKE ?", (f"{run_id}%",)
            ).fetchall()
            if len(matches) != 1:
                raise RunNotFoundError(run_id)
            row = matches[0]
        return self._record(row)

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        rows = self.db.execute("SELECT * FROM runs ORDER BY created_at DESC LIMIT ?", (limit,))
        return [self._record(row) for row in rows]

    @staticmethod
    def _record(row: sqlite3.Row) -> RunRecord:
        extras = json.loads(row["extras_json"]) if row["extras_json"] else {}
        return RunRecord(
            **{key: value for key, value in extras.items() if key in _EXTRAS},
            schema_version=row["schema_version"],
            id=row["id"],
            name=row["name"],
            status=row["status"],
            created_at=row["created_at"],
            completed_at=row["completed_at"],
            config=json.loads(row["config_json"]),
            datasets=json.loads(row["datasets_json"]),
            scorecard=Scorecard.model_validate_json(row["scorecard_json"])
            if row["scorecard_json"]
            else None,
            question_count=row["question_count"],
            error_count=row["error_count"],
        )

    # cases and responses ----------------------------------------------------------------------
    def get_cases(self, run_id: str) -> list[Case]:
        rows = self.db.execute(
            "SELECT case_json FROM cases WHERE run_id=? ORDER BY position", (run_id,)
        )
        return [Case.model_validate_json(row[0]) for row in rows]

    def answered_case_ids(self, run_id: str) -> set[str]:
        return {
            row[0]
            for row in self.db.execute("SELECT case_id FROM responses WHERE run_id=?", (run_id,))
        }

    def save_results(self, run_id: str, results: Iterable[CaseResult]) -> None:
        rows = [
            (
                run_id,
                r.case_id,
                r.status,
                r.error_type,
                r.error_message,
                r.latency_ms,
                r.attempts,
                r.response.model_dump_json() if r.response is not None else None,
            )
            for r in results
        ]
        with self.transaction():
            self.db.executemany(
                "INSERT OR IGNORE INTO responses (run_id, case_id, status, error_type,"
                " error_message, latency_ms, attempts, response_json)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def get_results(self, run_id: str) -> list[CaseResult]:
        rows = self.db.execute(
            "SELECT r.* FROM responses r"
            " JOIN cases c ON c.run_id = r.run_id AND c.case_id = r.case_id"
            " WHERE r.run_id=? ORDER BY c.position",
            (run_id,),
        )
        return [
            CaseResult(
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
            for row in rows
        ]

    # scores -------------------------------------------------------------------------------------
    def replace_scores(self, run_id: str, scores: list[Score]) -> None:
        with self.transaction():
            self.db.execute("DELETE FROM scores WHERE run_id=?", (run_id,))
            self.db.executemany(
                "INSERT INTO scores (run_id, case_id, metric, value, status, reason, details_json)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        run_id,
                        s.case_id,
                        s.metric,
                        s.value,
                        s.status,
                        s.reason,
                        json.dumps(s.details) if s.details else None,
                    )
                    for s in scores
                ],
            )

    def get_scores(self, run_id: str) -> list[Score]:
        rows = self.db.execute("SELECT * FROM scores WHERE run_id=? ORDER BY rowid", (run_id,))
        return [
            Score(
                case_id=row["case_id"],
                metric=row["metric"],
                value=row["value"],
                status=row["status"],
                reason=row["reason"],
                details=json.loads(row["details_json"]) if row["details_json"] else {},
            )
            for row in rows
        ]

    def judge_cost(self, run_id: str) -> dict[str, Any]:
        """Calls, cache hits, tokens and USD of the LLM judge calls recorded for a run."""
        row = self.db.execute(
            "SELECT COUNT(*) AS calls, SUM(cached) AS cached, SUM(prompt_tokens) AS prompt,"
            " SUM(completion_tokens) AS completion, SUM(cost_usd) AS usd,"
            " SUM(cost_usd IS NULL AND cached = 0) AS unpriced"
            " FROM judge_calls WHERE run_id=?",
            (run_id,),
        ).fetchone()
        return {
            "calls": int(row["calls"]),
            "cached": int(row["cached"] or 0),
            "prompt_tokens": int(row["prompt"] or 0),
            "completion_tokens": int(row["completion"] or 0),
            "total_usd": float(row["usd"]) if row["usd"] is not None else None,
            "unpriced_calls": int(row["unpriced"] or 0),
        }

    def counts(self, run_id: str) -> dict[str, Any]:
        row = self.db.execute(
            "SELECT COUNT(*) AS answered, SUM(status != 'ok') AS errors"
            " FROM responses WHERE run_id=?",
            (run_id,),
        ).fetchone()
        return {"answered": int(row["answered"]), "errors": int(row["errors"] or 0)}

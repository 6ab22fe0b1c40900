"""The run store's schema, as named migrations applied in the order they are registered.

A migration is a function of the connection, registered with ``@migration``; its name (the
function's name) is recorded in ``schema_migrations`` once it has run. Each migration runs in
its own write transaction together with its record, so a migration that fails leaves the store
exactly as the previous one left it: no half-made table, no record. A new table or column is a
new function at the end; a registered function never changes and is never renamed.

Stores made before migrations had names recorded them by number (``schema_migrations`` with a
``version`` column); they are converted once, under the write lock, by :data:`LEGACY_VERSIONS`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime

from ragmeter.errors import StoreError

TABLE = "schema_migrations"


@dataclass(frozen=True)
class Migration:
    name: str
    apply: Callable[[sqlite3.Connection], None]


MIGRATIONS: list[Migration] = []

# the numbers the store recorded before migrations had names (frozen: those stores exist)
LEGACY_VERSIONS: dict[int, str] = {
    1: "m001_initial",
    2: "m002_drop_scores_by_metric",
    3: "m003_runs_extras_json",
    4: "m004_judge_calls",
}


def migration(
    function: Callable[[sqlite3.Connection], None],
) -> Callable[[sqlite3.Connection], None]:
    """Register ``function`` as the next migration, under its own name."""
    name = function.__name__
    if any(known.name == name for known in MIGRATIONS):
        raise ValueError(f"a migration named {name!r} is already registered")
    MIGRATIONS.append(Migration(name, function))
    return function


def _execute(db: sqlite3.Connection, *statements: str) -> None:
    # one statement at a time: ``executescript`` would commit the open transaction first
    for statement in statements:
        db.execute(statement)


# the migrations ---------------------------------------------------------------------------------
@migration
def m001_initial(db: sqlite3.Connection) -> None:
    _execute(
        db,
        """CREATE TABLE runs (
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
        )""",
        """CREATE TABLE cases (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            case_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            case_json TEXT NOT NULL,
            PRIMARY KEY (run_id, case_id)
        )""",
        """CREATE TABLE responses (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            case_id TEXT NOT NULL,
            status TEXT NOT NULL,
            error_type TEXT,
            error_message TEXT,
            latency_ms REAL,
            attempts INTEGER NOT NULL DEFAULT 1,
            response_json TEXT,
            PRIMARY KEY (run_id, case_id)
        )""",
        """CREATE TABLE scores (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            case_id TEXT NOT NULL,
            metric TEXT NOT NULL,
            value REAL,
            status TEXT NOT NULL,
            reason TEXT,
            details_json TEXT,
            PRIMARY KEY (run_id, case_id, metric)
        )""",
        "CREATE INDEX scores_by_metric ON scores (run_id, metric)",
    )


@migration
def m002_drop_scores_by_metric(db: sqlite3.Connection) -> None:
    # the primary key serves the lookups; the extra index only slowed writes
    _execute(db, "DROP INDEX scores_by_metric")


@migration
def m003_runs_extras_json(db: sqlite3.Connection) -> None:
    # breakdowns, weighted score, goals and performance summary of a run (JSON)
    _execute(db, "ALTER TABLE runs ADD COLUMN extras_json TEXT")


@migration
def m004_judge_calls(db: sqlite3.Connection) -> None:
    # every LLM judge request and reply; the judge cache reads it by key
    _execute(
        db,
        """CREATE TABLE judge_calls (
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
        )""",
        "CREATE INDEX judge_calls_by_key ON judge_calls (cache_key)",
    )


@migration
def m005_validity(db: sqlite3.Connection) -> None:
    # ``ragmeter validity``: a run's metrics against a labels file, one row a metric and file
    # (labels_json: the file's part of the report; result_json: the metric's statistics)
    _execute(
        db,
        """CREATE TABLE validity (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            metric TEXT NOT NULL,
            labels_sha256 TEXT NOT NULL,
            labels_path TEXT NOT NULL,
            created_at TEXT NOT NULL,
            labels_json TEXT NOT NULL,
            result_json TEXT NOT NULL,
            PRIMARY KEY (run_id, metric, labels_sha256)
        )""",
    )


@migration
def m006_runs_index_stats(db: sqlite3.Connection) -> None:
    # the target's index statistics, fetched once per run (targets/index_stats.py; JSON)
    _execute(db, "ALTER TABLE runs ADD COLUMN index_stats_json TEXT")


@migration
def m007_cases_by_position(db: sqlite3.Connection) -> None:
    # a run's cases are read in batches by position (store/streams.py): without this index
    # each batch would scan and sort every case of the run
    _execute(db, "CREATE INDEX cases_by_position ON cases (run_id, position)")


# applying them --------------------------------------------------------------------------------
def _columns(db: sqlite3.Connection) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({TABLE})")}


def recorded(db: sqlite3.Connection) -> set[str]:
    """The names of the migrations the store has had (none if it has no named records yet)."""
    if "name" not in _columns(db):
        return set()
    return {row[0] for row in db.execute(f"SELECT name FROM {TABLE}")}


def applied_count(db: sqlite3.Connection) -> int:
    """How many of the registered migrations the store has had."""
    done = recorded(db)
    return sum(1 for known in MIGRATIONS if known.name in done)


def _prepare_table(db: sqlite3.Connection, where: str) -> None:
    """Create the records table, or convert numbered records to names (in a transaction)."""
    columns = _columns(db)
    if "name" in columns:
        return
    names: list[str] = []
    if columns:  # numbered records of a store made before migrations had names
        versions = [row[0] for row in db.execute(f"SELECT version FROM {TABLE} ORDER BY 1")]
        unknown = [version for version in versions if version not in LEGACY_VERSIONS]
        if unknown:
            raise StoreError(
                f"{where} records migration {unknown[0]}, which this ragmeter does not know"
                " (the store was made by a newer version); use that version"
            )
        names = [LEGACY_VERSIONS[version] for version in versions]
        db.execute(f"DROP TABLE {TABLE}")
    # applied_at is NULL for the records converted from numbers: when they ran is not known
    db.execute(f"CREATE TABLE {TABLE} (name TEXT PRIMARY KEY, applied_at TEXT)")
    db.executemany(f"INSERT INTO {TABLE} (name) VALUES (?)", [(name,) for name in names])


def migrate(
    db: sqlite3.Connection,
    transaction: Callable[[], AbstractContextManager[None]],
    where: str = "the run store",
) -> list[str]:
    """Apply the registered migrations the store has not had, in order, each in its own
    ``transaction()`` with its record; return the names applied. Several processes may open a
    new store at once: each decision is taken again under the write lock."""
    if not _missing(recorded(db)):
        return []  # the usual case: nothing to write, no write lock taken
    with transaction():
        _prepare_table(db, where)
    applied = []
    for known in _missing(recorded(db)):
        with transaction():
            if known.name in recorded(db):  # another process applied it meanwhile
                continue
            known.apply(db)
            db.execute(
                f"INSERT INTO {TABLE} (name, applied_at) VALUES (?, ?)",
                (known.name, datetime.now(UTC).isoformat(timespec="seconds")),
            )
        applied.append(known.name)
    return applied


def _missing(done: set[str]) -> list[Migration]:
    return [known for known in MIGRATIONS if known.name not in done]

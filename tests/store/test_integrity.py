"""The run store at its edges: unreadable rows, paths that are not stores, concurrent writers,
run locks and answers that must survive a SIGKILL. Real SQLite files in tmp_path throughout."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import ragmeter.store.migrations as migrations_module
import ragmeter.store.sqlite as store_module
from ragmeter.errors import EXIT_BAD_INPUT, InputError, RagmeterError, RunLockedError, StoreError
from ragmeter.models import Case, CaseResult, Response, Score
from ragmeter.run_record import MetricSummary, RunRecord, Scorecard
from ragmeter.store.migrations import LEGACY_VERSIONS, Migration, migration
from ragmeter.store.sqlite import MIGRATIONS, RunNotFoundError, RunStore


def _record(run_id: str = "run1") -> RunRecord:
    return RunRecord(
        id=run_id, name="n", created_at="2026-01-01T00:00:00+00:00", config={}, datasets=["d"]
    )


def _store_with_run(path: Path, n: int = 3, run_id: str = "run1") -> RunStore:
    store = RunStore(path)
    store.create_run(_record(run_id), [Case(case_id=f"c{i}", question="q") for i in range(n)])
    return store


def _scorecard() -> Scorecard:
    summary = MetricSummary(name="m", group="g", value=0.5, n_scored=1, n_skipped=0, n_failed=0)
    return Scorecard(metrics=[summary], by_group={"g": ["m"]})


def _run_python(code: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# reading back ---------------------------------------------------------------------------------
def test_a_stored_response_that_no_longer_validates_comes_back_as_an_error(
    tmp_path: Path,
) -> None:
    store = _store_with_run(tmp_path / "runs.db")
    store.save_results(
        "run1", [CaseResult(case_id="c0", status="ok", response=Response(answer="fine"))]
    )
    # old runs stored NaN as null
    store.db.execute(
        "INSERT INTO responses (run_id, case_id, status, latency_ms, attempts, response_json)"
        " VALUES ('run1', 'c1', 'ok', 12.5, 2, ?)",
        ('{"answer": "a", "latency_ms": {"generate": null}}',),
    )
    store.db.execute(
        "INSERT INTO responses (run_id, case_id, status, response_json)"
        " VALUES ('run1', 'c2', 'ok', '{not json')"
    )

    results = store.get_results("run1")

    assert [r.case_id for r in results] == ["c0", "c1", "c2"]
    assert results[0].status == "ok" and results[0].response is not None
    bad = results[1]
    assert (bad.status, bad.error_type, bad.response) == ("error", "unreadable_response", None)
    assert bad.error_message is not None
    assert "'c1'" in bad.error_message and "latency_ms.generate" in bad.error_message
    assert (bad.latency_ms, bad.attempts) == (12.5, 2)
    assert results[2].error_type == "unreadable_response"
    assert results[2].error_message is not None and "'c2'" in results[2].error_message
    assert store.counts("run1") == {"answered": 3, "errors": 0}  # the rows themselves are kept


def test_a_run_whose_scorecard_or_extras_no_longer_validate_gives_a_store_error(
    tmp_path: Path,
) -> None:
    store = _store_with_run(tmp_path / "runs.db")
    store.finish_run("run1", _scorecard(), "2026-01-01T00:01:00+00:00", 0)
    assert store.get_run("run1").scorecard == _scorecard()

    store.db.execute('UPDATE runs SET scorecard_json=\'{"metrics": [{"name": 1}]}\'')
    with pytest.raises(StoreError, match=r"run run1 .* cannot be read: scorecard\.metrics\.0"):
        store.get_run("run1")

    store.db.execute(
        'UPDATE runs SET scorecard_json=NULL, extras_json=\'{"weighted_score": {"score": 1}}\''
    )
    with pytest.raises(StoreError, match=r"run run1 .* cannot be read: weighted_score\."):
        store.get_run("run")  # by prefix too

    store.db.execute("UPDATE runs SET extras_json='[1, 2'")
    with pytest.raises(StoreError, match=r"run run1 .* extras is not valid JSON"):
        store.get_run("run1")
    # the listing still shows the run, without the parts that cannot be read
    assert [(r.id, r.scorecard) for r in store.list_runs()] == [("run1", None)]


def test_a_stored_case_that_no_longer_validates_gives_a_store_error(tmp_path: Path) -> None:
    store = _store_with_run(tmp_path / "runs.db")
    store.db.execute("UPDATE cases SET case_json='{\"case_id\": \"c1\"}' WHERE case_id='c1'")
    with pytest.raises(StoreError, match=r"run run1 .* case 'c1' cannot be read: question"):
        store.get_cases("run1")


# opening ----------------------------------------------------------------------------------------
def _truncated(tmp_path: Path, keep: float) -> Path:
    path = tmp_path / "real.db"
    store = _store_with_run(path, n=2000)
    store.save_results(
        "run1",
        [
            CaseResult(case_id=f"c{i}", status="ok", response=Response(answer="x" * 200))
            for i in range(2000)
        ],
    )
    store.close()
    data = path.read_bytes()
    assert data[:16] == b"SQLite format 3\x00" and not Path(f"{path}-wal").exists()
    broken = tmp_path / "broken.db"
    broken.write_bytes(data[: int(len(data) * keep)])
    return broken


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        ("folder", "it is a folder"),
        ("text", "file is not a database"),
        ("truncated_half", "malformed"),
        ("truncated_header", "malformed"),
        ("other_sqlite", "without ragmeter's tables"),
    ],
)
def test_a_path_that_is_not_a_run_store_gives_a_store_error(
    tmp_path: Path, kind: str, why: str
) -> None:
    if kind == "folder":
        path = tmp_path / "runs"
        path.mkdir()
    elif kind == "text":
        path = tmp_path / "notes.txt"
        path.write_text("these are my notes\n" * 50)
    elif kind == "truncated_half":
        path = _truncated(tmp_path, 0.5)
    elif kind == "truncated_header":
        path = _truncated(tmp_path, 0.00002)  # a few dozen bytes of the header
    else:
        path = tmp_path / "app.db"
        other = sqlite3.connect(path)
        other.execute("CREATE TABLE users (name TEXT)")
        other.commit()
        other.close()
    before = path.read_bytes() if path.is_file() else None

    with pytest.raises(StoreError) as error:
        RunStore(path)

    message = str(error.value)
    assert message.startswith(f"{path} is not a ragmeter run store (")
    assert why in message and "pass --store a new or existing .db file" in message
    assert not isinstance(error.value, sqlite3.Error)
    if before is not None:
        assert path.read_bytes() == before  # nothing written into somebody else's file


def test_create_false_opens_only_an_existing_store(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "runs.db"
    with pytest.raises(StoreError, match=r"no run store at .*runs\.db; run `ragmeter eval` first"):
        RunStore(missing, create=False)
    assert not missing.exists() and not missing.parent.exists()

    path = tmp_path / "runs.db"
    _store_with_run(path).close()
    reopened = RunStore(path, create=False)
    assert [r.id for r in reopened.list_runs()] == ["run1"]


@pytest.mark.parametrize("other_records", ["numbered", "named"])
def test_a_store_created_by_two_processes_at_once_is_migrated_once(
    tmp_path: Path, other_records: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.db"
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("PRAGMA journal_mode=WAL")
    if other_records == "numbered":  # the other process runs a ragmeter from before names
        other.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY)")
    else:
        other.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    other.execute("BEGIN IMMEDIATE")  # the other process is migrating right now
    outcome: list[object] = []
    asking = threading.Event()  # set when the opener asks for the write lock
    transaction = RunStore.transaction

    @contextmanager
    def noticed(store: RunStore) -> Iterator[None]:
        asking.set()
        with transaction(store):
            yield

    monkeypatch.setattr(RunStore, "transaction", noticed)

    def open_store() -> None:
        try:
            outcome.append(RunStore(path))
        except Exception as exc:
            outcome.append(exc)

    opener = threading.Thread(target=open_store)
    opener.start()
    # it has seen no migration applied and waits for the write lock
    assert asking.wait(60), "the opener never asked for the write lock"
    assert outcome == []
    if other_records == "numbered":
        _legacy_migrate(other, len(LEGACY_SCRIPTS))
    else:
        for known in MIGRATIONS:
            known.apply(other)
            other.execute("INSERT INTO schema_migrations (name) VALUES (?)", (known.name,))
    other.execute("COMMIT")
    opener.join(30)

    assert len(outcome) == 1 and isinstance(outcome[0], RunStore), outcome
    assert outcome[0].schema_version == len(MIGRATIONS)
    assert _records(path) == [m.name for m in MIGRATIONS]


# migrations -------------------------------------------------------------------------------------
# the numbered migrations as ragmeter ran them before migrations had names: a list of scripts
# split on ";", recorded in schema_migrations (version). Frozen here: stores made so exist.
LEGACY_SCRIPTS = [
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
    """
    DROP INDEX scores_by_metric;
    """,
    """
    ALTER TABLE runs ADD COLUMN extras_json TEXT;
    """,
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


def _legacy_migrate(db: sqlite3.Connection, upto: int) -> None:
    """What the old ``RunStore._migrate`` did inside its transaction."""
    for version, script in enumerate(LEGACY_SCRIPTS[:upto], start=1):
        for statement in script.split(";"):
            if statement.strip():
                db.execute(statement)
        db.execute("INSERT INTO schema_migrations (version) VALUES (?)", (version,))


def _legacy_store(path: Path, upto: int = len(LEGACY_SCRIPTS)) -> None:
    """A store as a ragmeter with ``upto`` numbered migrations left it, with one run in it."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)")
    db.execute("BEGIN IMMEDIATE")
    _legacy_migrate(db, upto)
    db.execute("COMMIT")
    if upto >= 1:
        record = _record()
        db.execute(
            "INSERT INTO runs (id, name, status, created_at, completed_at, schema_version,"
            " config_json, datasets_json, scorecard_json, question_count)"
            " VALUES ('run1', 'n', 'completed', ?, ?, ?, '{}', '[\"d\"]', ?, 2)",
            (
                record.created_at,
                record.created_at,
                "1",  # the version an older ragmeter wrote
                _scorecard().model_dump_json(),
            ),
        )
        for position in range(2):
            case = Case(case_id=f"c{position}", question="q")
            db.execute(
                "INSERT INTO cases VALUES ('run1', ?, ?, ?)",
                (case.case_id, position, case.model_dump_json()),
            )
        db.execute(
            "INSERT INTO responses (run_id, case_id, status, latency_ms, response_json)"
            " VALUES ('run1', 'c0', 'ok', 3.5, ?)",
            (Response(answer="old answer").model_dump_json(),),
        )
        db.execute("INSERT INTO scores VALUES ('run1', 'c0', 'm', 0.5, 'ok', NULL, NULL)")
    if upto >= 4:
        db.execute(
            "INSERT INTO judge_calls (cache_key, created_at, run_id, purpose, model,"
            " prompt_name, prompt_version, params_json, messages_json, cost_usd, status)"
            " VALUES ('k', 'now', 'run1', 'p', 'm', 'n', 'v1', '{}', '[]', 0.25, 'ok')"
        )
    db.close()


def _records(path: Path) -> list[str]:
    """The migration names recorded in the store at ``path``, in the order they were applied."""
    db = sqlite3.connect(path)
    try:
        return [row[0] for row in db.execute("SELECT name FROM schema_migrations ORDER BY rowid")]
    finally:
        db.close()


def _schema(path: Path) -> set[tuple[str, str]]:
    """The (type, name) of every table and index, and the columns of ``runs`` as ("column", ..)."""
    db = sqlite3.connect(path)
    try:
        found = {(row[0], row[1]) for row in db.execute("SELECT type, name FROM sqlite_master")}
        return found | {("column", row[1]) for row in db.execute("PRAGMA table_info(runs)")}
    finally:
        db.close()


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the migrations applied from now on (the registered ones, watched)."""
    names: list[str] = []

    def watched(known: Migration) -> Migration:
        def apply(db: sqlite3.Connection) -> None:
            names.append(known.name)
            known.apply(db)

        return Migration(known.name, apply)

    monkeypatch.setattr(migrations_module, "MIGRATIONS", [watched(m) for m in MIGRATIONS])
    return names


def test_migrations_are_named_in_order_and_a_name_is_registered_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = [m.name for m in MIGRATIONS]
    # the numbered ones first, as they were; the named ones after them
    assert names[: len(LEGACY_VERSIONS)] == list(LEGACY_VERSIONS.values())
    assert names == sorted(names)
    assert all(isinstance(m, Migration) and callable(m.apply) for m in MIGRATIONS)
    monkeypatch.setattr(migrations_module, "MIGRATIONS", list(MIGRATIONS))
    with pytest.raises(ValueError, match="'m001_initial' is already registered"):
        migration(migrations_module.m001_initial)

    def m005_next(db: sqlite3.Connection) -> None:
        pass

    assert migration(m005_next) is m005_next
    assert [m.name for m in migrations_module.MIGRATIONS] == [*names, "m005_next"]


def test_a_new_store_records_each_migration_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ran: list[str]
) -> None:
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        db = connect(*args, **kwargs)
        db.set_trace_callback(statements.append)
        return db

    monkeypatch.setattr(store_module.sqlite3, "connect", traced)
    path = tmp_path / "runs.db"
    store = RunStore(path)
    assert ran == [m.name for m in MIGRATIONS] == _records(path)
    assert store.schema_version == len(MIGRATIONS)
    # one transaction to create the records table, then one a migration with its record
    assert statements.count("BEGIN IMMEDIATE") == statements.count("COMMIT") == 1 + len(ran)
    applied_at = store.db.execute("SELECT applied_at FROM schema_migrations").fetchall()
    assert all(row[0] and row[0].startswith("20") for row in applied_at)
    store.close()

    statements.clear()
    reopened = RunStore(path)
    assert ran == [m.name for m in MIGRATIONS]  # nothing ran again
    assert reopened.schema_version == len(MIGRATIONS)
    assert "BEGIN IMMEDIATE" not in statements  # an up-to-date store is opened without a write


@pytest.mark.parametrize("upto", [4, 3, 2, 1, 0])
def test_a_store_with_numbered_migrations_keeps_its_data_and_runs_only_the_missing_ones(
    tmp_path: Path, ran: list[str], upto: int
) -> None:
    path = tmp_path / "old.db"
    _legacy_store(path, upto)

    store = RunStore(path)

    names = [m.name for m in MIGRATIONS]
    assert ran == names[upto:]  # each missing migration once, none of those already recorded
    assert _records(path) == names and store.schema_version == len(MIGRATIONS)
    columns = [row[1] for row in store.db.execute("PRAGMA table_info(schema_migrations)")]
    assert columns == ["name", "applied_at"]  # the numbered records were converted
    converted = store.db.execute(
        "SELECT name FROM schema_migrations WHERE applied_at IS NULL ORDER BY rowid"
    ).fetchall()
    assert [row[0] for row in converted] == names[:upto]
    if upto:
        run = store.get_run("run1")
        assert (run.status, run.scorecard, run.question_count) == ("completed", _scorecard(), 2)
        assert [c.case_id for c in store.get_cases("run1")] == ["c0", "c1"]
        (answer,) = store.get_results("run1")
        assert answer.response is not None and answer.response.answer == "old answer"
        assert [(s.case_id, s.metric, s.value) for s in store.get_scores("run1")] == [
            ("c0", "m", 0.5)
        ]
        assert store.judge_cost("run1")["calls"] == (1 if upto == 4 else 0)
    # the store takes new runs, and opening it again migrates nothing
    store.create_run(_record("run2"), [Case(case_id="k", question="q")])
    store.finish_run("run2", _scorecard(), "2026-01-01T00:02:00+00:00", 0, _record("run2"))
    store.close()
    again = RunStore(path)
    assert ran == names[upto:] and _records(path) == names
    assert {r.id for r in again.list_runs()} == ({"run1", "run2"} if upto else {"run2"})


def test_a_store_recording_an_unknown_numbered_migration_is_refused_untouched(
    tmp_path: Path,
) -> None:
    path = tmp_path / "future.db"
    _legacy_store(path)
    db = sqlite3.connect(path)
    db.execute("INSERT INTO schema_migrations (version) VALUES (5)")
    db.commit()
    db.close()
    before = _schema(path)
    with pytest.raises(StoreError, match=r"future\.db records migration 5, .* newer version"):
        RunStore(path)
    assert _schema(path) == before
    with sqlite3.connect(path) as db:
        assert [row[0] for row in db.execute("SELECT version FROM schema_migrations")] == [
            1,
            2,
            3,
            4,
            5,
        ]


@pytest.mark.parametrize("failure", ["exception", "sqlite"])
@pytest.mark.parametrize("start", ["new store", "store with a run"])
def test_a_migration_that_fails_midway_leaves_the_store_at_the_previous_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str, start: str
) -> None:
    path = tmp_path / "runs.db"
    if start == "store with a run":
        _store_with_run(path).close()
    first, *rest = MIGRATIONS
    done = [first] if start == "new store" else list(MIGRATIONS)
    before = _schema(path) if path.exists() else None

    def m900_broken(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE half_done (x INTEGER)")
        db.execute("ALTER TABLE runs ADD COLUMN half TEXT")
        db.execute("INSERT INTO half_done VALUES (1)")
        if failure == "exception":
            raise RuntimeError("migration bug")
        db.execute("CREATE TABLE half_done (x INTEGER)")  # a SQLite error: it exists

    def m901_later(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE later (x INTEGER)")

    broken, later = Migration("m900_broken", m900_broken), Migration("m901_later", m901_later)
    remaining = rest if start == "new store" else []
    monkeypatch.setattr(migrations_module, "MIGRATIONS", [*done, broken, *remaining, later])

    with pytest.raises(RuntimeError if failure == "exception" else StoreError) as error:
        RunStore(path)

    if failure == "sqlite":
        assert "half_done already exists" in str(error.value)
    schema = _schema(path)
    assert ("table", "half_done") not in schema and ("column", "half") not in schema
    assert ("table", "later") not in schema  # nothing after the failure ran either
    assert _records(path) == [m.name for m in done]
    if start == "new store":
        assert ("index", "scores_by_metric") in schema  # m002 has not run
        assert ("table", "judge_calls") not in schema
    else:
        assert schema == before
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT COUNT(*) FROM cases").fetchone()[0] == 3

    # once the broken migration is fixed (here: dropped), the store migrates the rest
    monkeypatch.setattr(migrations_module, "MIGRATIONS", [*done, *remaining, later])
    store = RunStore(path)
    assert _records(path) == [m.name for m in [*done, *remaining, later]]
    assert ("table", "later") in _schema(path) and ("table", "judge_calls") in _schema(path)
    assert store.schema_version == len(MIGRATIONS) + 1
    if start == "store with a run":
        assert len(store.get_cases("run1")) == 3


def test_a_missing_run_is_an_input_error_and_still_a_key_error(tmp_path: Path) -> None:
    store = _store_with_run(tmp_path / "runs.db")
    store.create_run(_record("run2"), [])
    with pytest.raises(RunNotFoundError) as missing:
        store.get_run("nope")
    error = missing.value
    assert isinstance(error, InputError) and isinstance(error, RagmeterError)
    assert isinstance(error, KeyError) and isinstance(error, ValueError)
    assert error.exit_code == EXIT_BAD_INPUT == 2
    assert str(error) == "no run 'nope' in the store" and error.args == ("nope",)

    with pytest.raises(KeyError) as ambiguous:
        store.get_run("run")
    assert isinstance(ambiguous.value, RunNotFoundError)
    assert sorted(ambiguous.value.candidates) == ["run1", "run2"]
    assert str(ambiguous.value).startswith("run id prefix 'run' is ambiguous: it starts run")
    assert str(ambiguous.value).endswith("; give more")

    from ragmeter.store import RunNotFoundError as exported
    from ragmeter.store.errors import RunNotFoundError as defined

    assert exported is defined is RunNotFoundError is store_module.RunNotFoundError


# writing ------------------------------------------------------------------------------------------
def test_writers_wait_a_minute_and_a_busy_store_gives_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.db"
    store = _store_with_run(path)
    assert store_module.BUSY_TIMEOUT_S >= 60
    assert store.db.execute("PRAGMA busy_timeout").fetchone()[0] >= 60_000

    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.2)
    impatient = RunStore(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    with pytest.raises(StoreError, match=r"runs\.db is busy: another process held its write"):
        impatient.save_result("run1", CaseResult(case_id="c0", status="ok"))
    holder.execute("ROLLBACK")
    impatient.save_result("run1", CaseResult(case_id="c0", status="ok"))
    assert store.answered_case_ids("run1") == {"c0"}


def test_big_writes_commit_in_chunks_and_a_rescore_does_not_duplicate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "WRITE_CHUNK_ROWS", 7)
    store = RunStore(tmp_path / "runs.db")
    statements: list[str] = []
    store.db.set_trace_callback(statements.append)

    store.create_run(_record(), [Case(case_id=f"c{i}", question="q") for i in range(20)])
    assert statements.count("BEGIN IMMEDIATE") >= 3  # 20 cases in chunks of 7
    assert [c.case_id for c in store.get_cases("run1")] == [f"c{i}" for i in range(20)]
    assert store.get_run("run1").question_count == 20

    statements.clear()
    store.save_results("run1", [CaseResult(case_id=f"c{i}", status="ok") for i in range(20)])
    assert statements.count("BEGIN IMMEDIATE") == 3
    assert len(store.get_results("run1")) == 20

    first = [Score(f"c{i}", m, 0.0) for i in range(20) for m in ("a", "b", "c")]
    store.replace_scores("run1", first)
    statements.clear()
    second = [Score(f"c{i}", m, 1.0) for i in range(20) for m in ("a", "b")]
    store.replace_scores("run1", second)

    assert statements.count("BEGIN IMMEDIATE") >= 40 // 7 + 60 // 7  # deletes and inserts
    assert statements.count("COMMIT") == statements.count("BEGIN IMMEDIATE")
    stored = store.get_scores("run1", unfinished=True)  # a running run: read anyway
    assert len(stored) == 40 and {(s.case_id, s.metric) for s in stored} == {
        (s.case_id, s.metric) for s in second
    }
    assert {s.value for s in stored} == {1.0}


def test_create_run_refuses_an_existing_id_and_shows_a_run_only_when_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "WRITE_CHUNK_ROWS", 5)
    store = _store_with_run(tmp_path / "runs.db", n=12)
    with pytest.raises(StoreError, match="run run1 already exists"):
        store.create_run(_record(), [Case(case_id="x", question="q")])
    assert len(store.get_cases("run1")) == 12

    def cases_then_die() -> Iterator[Case]:
        for i in range(12):
            if i == 7:  # the process dies after the first chunk was committed
                raise KeyboardInterrupt
            yield Case(case_id=f"k{i}", question="q")

    class Dying(list[Case]):
        def __iter__(self) -> Iterator[Case]:
            return cases_then_die()

        def __len__(self) -> int:
            return 12

    with pytest.raises(KeyboardInterrupt):
        store.create_run(_record("run2"), Dying())
    assert [r.id for r in store.list_runs()] == ["run1"]  # no half-made run2 is visible
    with pytest.raises(store_module.RunNotFoundError):
        store.get_run("run2")
    store.create_run(_record("run2"), [Case(case_id=f"k{i}", question="q") for i in range(3)])
    assert [c.case_id for c in store.get_cases("run2")] == ["k0", "k1", "k2"]


def test_an_answer_saved_one_at_a_time_survives_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    _store_with_run(path, n=5).close()
    child = _run_python(
        f"""
        import os, signal
        from ragmeter.models import CaseResult
        from ragmeter.store.sqlite import RunStore
        store = RunStore({str(path)!r})
        for i in range(3):
            store.save_result("run1", CaseResult(case_id=f"c{{i}}", status="ok"))
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    assert RunStore(path).answered_case_ids("run1") == {"c0", "c1", "c2"}


# run locks -----------------------------------------------------------------------------------
def test_a_run_is_driven_by_one_holder_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    first, second = _store_with_run(path), RunStore(path)
    lock_file = tmp_path / "runs.db.locks" / "run1.lock"

    with first.lock_run("run1"):
        assert lock_file.read_text().strip() == str(os.getpid())
        assert first.run_driver_pid("run1") == os.getpid()
        with pytest.raises(RunLockedError) as error, second.lock_run("run1"):
            pass
        assert str(error.value) == (
            f"run run1 is being driven by another process (pid {os.getpid()}); wait for it to"
            " finish or stop it, then `ragmeter eval --resume run1`"
        )
        with second.lock_run("run2"):  # other runs are free
            pass
    assert not lock_file.exists() and second.run_driver_pid("run1") is None
    with second.lock_run("run1"):
        pass

    memory = RunStore(":memory:")
    with memory.lock_run("run1"), memory.lock_run("run1"):
        assert memory.run_driver_pid("run1") is None
    assert not Path(":memory:.locks").exists()


def test_a_run_lock_held_by_a_killed_process_is_free(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = _store_with_run(path)
    child = _run_python(
        f"""
        import sys, time
        from ragmeter.store.sqlite import RunStore
        store = RunStore({str(path)!r})
        with store.lock_run("run1"):
            print("locked", flush=True)
            time.sleep(120)
        """
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "locked"
        with pytest.raises(RunLockedError, match=rf"another process \(pid {child.pid}\)"):
            store.lock_run("run1").acquire()
        assert store.run_driver_pid("run1") == child.pid

        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)

        assert store.run_driver_pid("run1") is None
        with store.lock_run("run1"):
            assert (tmp_path / "runs.db.locks" / "run1.lock").read_text().strip() == str(
                os.getpid()
            )
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


# validity reports (m005_validity) ----------------------------------------------------------------
def _validity_report(run_id: str, metric: str, sha: str, value: float) -> tuple[str, str]:
    from ragmeter.scoring.validity_report import MetricValidity, Statistic, ValidityReport

    report = ValidityReport(
        run_id=run_id, labels_path=f"{sha}.jsonl", labels_sha256=sha, label_form="binary",
        created_at="2026-01-01T00:00:00+00:00", n_labels=3, n_unknown=0, resamples=10, seed=0,
        level=0.95, min_cases=1,
    )  # fmt: skip
    result = MetricValidity(
        metric=metric, higher_is_better=True, n_labelled=3, n_scored=3, n_skipped=0,
        n_failed=0, n_unscored=0, measured=True, statistics={"auc": Statistic(value=value)},
    )  # fmt: skip
    return report.model_dump_json(exclude={"metrics"}), result.model_dump_json()


@pytest.mark.parametrize("upto", [4, 0])
def test_an_older_store_gets_the_validity_table_and_keeps_its_runs(
    tmp_path: Path, ran: list[str], upto: int
) -> None:
    path = tmp_path / "old.db"
    _legacy_store(path, upto)
    store = RunStore(path)
    assert "m005_validity" in ran and ("table", "validity") in _schema(path)
    if upto:
        assert store.get_run("run1").scorecard == _scorecard()
        assert store.get_validity("run1") == []
    store.close()


def test_validity_rows_are_keyed_by_run_metric_and_labels_hash(tmp_path: Path) -> None:
    from ragmeter.reports.validity import stored_reports

    store = _store_with_run(tmp_path / "runs.db")
    store.create_run(_record("run2"), [Case(case_id="c0", question="q")])

    def save(sha: str, day: int, results: dict[str, float]) -> None:
        rows = {m: _validity_report("run1", m, sha, v) for m, v in results.items()}
        context = next(iter(rows.values()))[0]
        created = f"2026-01-0{day}T00:00:00+00:00"
        results_json = {m: row[1] for m, row in rows.items()}
        store.save_validity("run1", sha, f"{sha}.jsonl", created, context, results_json)

    save("aaa", 1, {"m": 0.6, "n": 0.7})
    save("aaa", 2, {"m": 0.9})  # the same labels file again: replaces its row of m
    save("bbb", 3, {"m": 0.3})  # another labels file: rows of its own
    assert store.db.execute("SELECT COUNT(*) FROM validity").fetchone()[0] == 3
    assert store.get_validity("run2") == []

    newest, oldest = stored_reports(store, "run1")
    assert newest.labels_sha256 == "bbb" and oldest.labels_sha256 == "aaa"
    auc = {m.metric: m.statistics["auc"].value for m in oldest.metrics}
    assert auc == {"m": 0.9, "n": 0.7}

    store.db.execute("UPDATE validity SET result_json='{' WHERE labels_sha256='bbb'")
    with pytest.raises(StoreError, match="a stored validity report no longer reads"):
        stored_reports(store, "run1")
    store.close()


@contextmanager
def read_only_folder(folder: Path) -> Iterator[None]:
    """``folder`` made read-only for real: its mode bits, or (for root, whom they do not stop)
    the immutable attribute; skipped where neither holds."""
    folder.chmod(0o555)
    immutable = False
    try:
        probe = folder / "probe"
        try:
            probe.touch()
        except OSError:
            pass  # the mode bits hold
        else:
            probe.unlink()
            made = subprocess.run(["chattr", "+i", str(folder)], capture_output=True)
            if made.returncode != 0:
                pytest.skip(f"cannot make {folder} read-only here: {made.stderr!r}")
            immutable = True
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


def test_a_store_in_a_read_only_folder_says_so(tmp_path: Path) -> None:
    # issue 30: "unable to open database file", as if the path were wrong
    folder = tmp_path / "shared"
    folder.mkdir()
    _store_with_run(folder / "runs.db").close()
    with read_only_folder(folder):
        result = subprocess.run(
            [sys.executable, "-m", "ragmeter", "runs", "--store", str(folder / "runs.db")],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert result.returncode == EXIT_BAD_INPUT, result.stderr
    assert f"is in a read-only folder ({folder}" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr

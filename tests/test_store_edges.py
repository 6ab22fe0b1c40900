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
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import ragmeter.store.sqlite as store_module
from ragmeter.errors import RunLockedError, StoreError
from ragmeter.models import (
    Case,
    CaseResult,
    MetricSummary,
    Response,
    RunRecord,
    Score,
    Scorecard,
)
from ragmeter.store.sqlite import MIGRATIONS, RunStore


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


def test_a_store_created_by_two_processes_at_once_is_migrated_once(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("PRAGMA journal_mode=WAL")
    other.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY)")
    other.execute("BEGIN IMMEDIATE")  # the other process is migrating right now
    outcome: list[object] = []

    def open_store() -> None:
        try:
            outcome.append(RunStore(path))
        except Exception as exc:
            outcome.append(exc)

    opener = threading.Thread(target=open_store)
    opener.start()
    time.sleep(0.5)  # it has seen no migration applied and waits for the write lock
    for version, script in enumerate(MIGRATIONS, start=1):
        for statement in script.split(";"):
            if statement.strip():
                other.execute(statement)
        other.execute("INSERT INTO schema_migrations (version) VALUES (?)", (version,))
    other.execute("COMMIT")
    opener.join(30)

    assert len(outcome) == 1 and isinstance(outcome[0], RunStore), outcome
    assert outcome[0].schema_version == len(MIGRATIONS)


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
    stored = store.get_scores("run1")
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

"""The run store: migrations, WAL, a round trip of a run, and no duplicate answers."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ragmeter.config import REDACTED
from ragmeter.models import CaseResult, Response
from ragmeter.run_record import RunRecord
from ragmeter.store.sqlite import MIGRATIONS, RunNotFoundError, RunStore


def test_store_migrations_wal_roundtrip_and_no_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = RunStore(path)
    assert store.schema_version == len(MIGRATIONS)
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    from ragmeter.models import Case

    cases = [Case(case_id=f"c{i}", question="q") for i in range(3)]
    record = RunRecord(
        id="run1",
        name="n",
        created_at="2026-01-01T00:00:00+00:00",
        config={"target": {"headers": {"Authorization": REDACTED}}},
        datasets=["d"],
    )
    store.create_run(record, cases)
    result = CaseResult(case_id="c1", status="ok", response=Response(answer="a"), latency_ms=1.0)
    store.save_results("run1", [result])
    store.save_results(
        "run1", [result, CaseResult(case_id="c0", status="error", error_type="timeout")]
    )
    assert store.answered_case_ids("run1") == {"c0", "c1"}
    assert [r.case_id for r in store.get_results("run1")] == ["c0", "c1"]
    assert store.get_run("run").id == "run1"
    with pytest.raises(RunNotFoundError):
        store.get_run("nope")
    store.close()
    reopened = RunStore(path)
    assert reopened.schema_version == len(MIGRATIONS)
    assert reopened.counts("run1") == {"answered": 2, "errors": 1}
    raw = sqlite3.connect(path).execute("SELECT config_json FROM runs").fetchone()[0]
    assert REDACTED in raw

"""Two `ragmeter eval` processes write a 6,000-case run each into one store at the same time:
neither may die on the store's write lock, and both runs must be whole."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from ragmeter.store.sqlite import WRITE_CHUNK_ROWS, RunStore

pytestmark = pytest.mark.integration

CASES = 6_000
METRICS = "retrieval,lexical,performance"
# the most rows the evals may write while another writer cannot get the store's write lock: a
# few chunks (WRITE_CHUNK_ROWS, 10,000 rows, a transaction each). A writer that held the lock
# through the ~250,000 score rows of a run in one transaction would show as all of them. Counted
# in rows, not seconds: a loaded machine writes fewer rows a second, not more rows a lock.
MAX_ROWS_LOCKED_OUT = 10 * WRITE_CHUNK_ROWS
# every table a run's rows go to, each with a rowid that only grows as rows are inserted
TABLES = ("cases", "responses", "scores")


def rows_written(db: sqlite3.Connection) -> int:
    """How many rows the store's tables have had inserted (the sum of their highest rowids)."""
    total = 0
    for table in TABLES:
        try:
            (highest,) = db.execute(f"SELECT MAX(rowid) FROM {table}").fetchone()
        except sqlite3.OperationalError:  # the store is not migrated yet
            return 0
        total += highest or 0
    return total


class LockProbe(threading.Thread):
    """Takes and drops the store's write lock every millisecond (no wait, nothing written)
    and keeps the most rows the evals wrote between two times it got the lock, and (shown
    only) the longest stretch during which it could not."""

    def __init__(self, store: Path) -> None:
        super().__init__(daemon=True)
        self.store = store
        self.stop = threading.Event()
        self.longest = 0.0
        self.most_rows = 0
        self.acquired = 0

    def run(self) -> None:
        while not self.store.exists() and not self.stop.is_set():
            time.sleep(0.01)
        uri = f"file:{quote(str(self.store))}?mode=rw"
        db = sqlite3.connect(uri, uri=True, timeout=0, isolation_level=None)
        busy_since: float | None = None
        rows_then: int | None = None
        while not self.stop.is_set():
            now = time.monotonic()
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError:
                busy_since = now if busy_since is None else busy_since
            else:
                try:
                    rows = rows_written(db)
                finally:
                    db.execute("ROLLBACK")
                self.acquired += 1
                if rows_then is not None:
                    self.most_rows = max(self.most_rows, rows - rows_then)
                rows_then = rows
                if busy_since is not None:
                    self.longest = max(self.longest, now - busy_since)
                busy_since = None
            time.sleep(0.001)
        db.close()


def write_inputs(folder: Path, n: int) -> tuple[Path, Path]:
    """A dataset of ``n`` cases and a replay file answering each of them."""
    dataset, replay = folder / "D.jsonl", folder / "R.jsonl"
    with dataset.open("w", encoding="utf-8") as cases, replay.open("w", encoding="utf-8") as out:
        for i in range(n):
            cases.write(
                json.dumps(
                    {
                        "case_id": f"q{i}",
                        "question": f"What is item {i}?",
                        "reference_answer": f"item {i} is a widget",
                        "gold_passages": [{"doc_id": f"doc{i}"}],
                    }
                )
                + "\n"
            )
            retrieved = [
                {"id": f"q{i}-{k}", "doc_id": f"doc{(i + k) % n}", "text": f"about item {i + k}"}
                for k in range(5)
            ]
            answer = {"answer": f"item {i} is a widget", "retrieved": retrieved}
            out.write(json.dumps({"case_id": f"q{i}", "response": answer}) + "\n")
    return dataset, replay


def test_two_evals_write_big_runs_into_one_store_at_once(tmp_path: Path) -> None:
    dataset, replay = write_inputs(tmp_path, CASES)
    store = tmp_path / "S.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGMETER_")}
    command = [
        sys.executable,
        "-m",
        "ragmeter",
        "eval",
        "--dataset",
        str(dataset),
        "--target",
        f"replay:{replay}",
        "--metrics",
        METRICS,
        "--store",
        str(store),
        "--no-progress",
    ]
    started = time.monotonic()
    probe = LockProbe(store)
    probe.start()
    evals = [
        subprocess.Popen(
            [*command, "--output-dir", str(tmp_path / f"O{i}")],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    outputs = []
    try:
        for process in evals:
            outputs.append(process.communicate(timeout=900))
    finally:
        probe.stop.set()
        for process in evals:
            if process.poll() is None:
                process.kill()
                process.wait()
    probe.join(10)
    elapsed = time.monotonic() - started

    for process, (out, err) in zip(evals, outputs, strict=True):
        assert process.returncode == 0, f"exit {process.returncode} after {elapsed:.0f}s\n{err}"
        assert "Traceback" not in out + err and "database is locked" not in out + err
    # between two chunks of a big write another writer gets the lock
    print(
        f"two evals: {elapsed:.0f}s; longest write-lock hold seen {probe.longest:.2f}s, "
        f"{probe.most_rows} rows written meanwhile at most"
    )
    assert probe.acquired > 100
    assert probe.most_rows < MAX_ROWS_LOCKED_OUT, (
        f"{probe.most_rows} rows were written while the probe could not get the write lock"
    )

    runs = RunStore(store, create=False)
    records = runs.list_runs()
    assert len(records) == 2 and {r.status for r in records} == {"completed"}
    raw = sqlite3.connect(store)
    metric_sets = []
    for record in records:
        assert record.question_count == CASES and record.error_count == 0
        assert record.scorecard is not None
        metrics = {m.name for m in record.scorecard.metrics}
        assert {"recall_at_5", "token_f1", "latency_p50"} <= metrics
        metric_sets.append(metrics)
        # one run's scores are more rows than the bound: holding the lock for all of them fails
        assert CASES * len(metrics) > 2 * MAX_ROWS_LOCKED_OUT
        responses = raw.execute(
            "SELECT COUNT(*), SUM(status = 'ok') FROM responses WHERE run_id=?", (record.id,)
        ).fetchone()
        assert responses == (CASES, CASES)
        per_metric = dict(
            raw.execute(
                "SELECT metric, COUNT(*) FROM scores WHERE run_id=? GROUP BY metric", (record.id,)
            ).fetchall()
        )
        assert per_metric == dict.fromkeys(metrics, CASES)  # one row a case and metric
        assert len(runs.get_scores(record.id)) == CASES * len(metrics)
    assert metric_sets[0] == metric_sets[1]
    raw.close()
    runs.close()

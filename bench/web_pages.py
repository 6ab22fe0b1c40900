"""``ragmeter serve`` page times: a store of 1,000 runs and one 10,000-case run.

Builds the store once (cheaply): the demo run through the real CLI, then copies in SQL: 999
more run rows (the runs list does not read cases), and one run whose cases, answers and
scores are the demo's repeated to 10,005 cases (~1M score rows, as many metrics as the demo).
Then times each page through the app (Starlette's TestClient, in process: the server's own
work, no network), median of ``--repeat`` (default 5), and prints seconds per page.

    python bench/web_pages.py [--runs 1000] [--cases 10000] [--repeat 5] [--store PATH]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from starlette.testclient import TestClient

from ragmeter.web.app import create_app

BIG = "big10k"


def build(folder: Path, runs: int, cases: int) -> tuple[Path, str]:
    store = folder / "runs.db"
    subprocess.run(
        [sys.executable, "-m", "ragmeter", "eval", "--store", str(store), "--output-dir",
         str(folder / "out"), "--no-progress", "--name", "demo"],
        check=True, capture_output=True, cwd=folder,
    )  # fmt: skip
    db = sqlite3.connect(store)
    (demo,) = db.execute("SELECT id FROM runs").fetchone()
    columns = [row[1] for row in db.execute("PRAGMA table_info(runs)")]
    rest = ", ".join(c for c in columns if c not in ("id", "name", "created_at"))
    with db:
        for i in range(runs - 1):
            db.execute(
                f"INSERT INTO runs (id, name, created_at, {rest}) SELECT ?, ?,"
                f" printf('2026-01-01T00:%02d:%02d+00:00', ? / 60 % 60, ? % 60), {rest}"
                " FROM runs WHERE id = ?",
                (f"copy{i:06d}", f"copy {i}", i, i, demo),
            )
    n = db.execute("SELECT COUNT(*) FROM cases WHERE run_id = ?", (demo,)).fetchone()[0]
    copies = -(-cases // n)
    with db:
        db.execute(
            f"INSERT INTO runs (id, name, created_at, {rest}) SELECT ?, ?, created_at, {rest}"
            " FROM runs WHERE id = ?",
            (BIG, "10k cases", demo),
        )
        db.execute("UPDATE runs SET question_count = ? WHERE id = ?", (copies * n, BIG))
        for k in range(copies):
            suffix = f"-r{k:03d}"
            db.execute(
                "INSERT INTO cases (run_id, case_id, position, case_json) SELECT ?,"
                " case_id || ?, position + ?, json_set(case_json, '$.case_id', case_id || ?)"
                " FROM cases WHERE run_id = ?",
                (BIG, suffix, k * n, suffix, demo),
            )
            db.execute(
                "INSERT INTO responses (run_id, case_id, status, error_type, error_message,"
                " latency_ms, attempts, response_json) SELECT ?, case_id || ?, status,"
                " error_type, error_message, latency_ms * (1 + ? / 50.0), attempts,"
                " response_json FROM responses WHERE run_id = ?",
                (BIG, suffix, k % 7, demo),
            )
            db.execute(
                "INSERT INTO scores (run_id, case_id, metric, value, status, reason,"
                " details_json) SELECT ?, case_id || ?, metric, value, status, reason,"
                " details_json FROM scores WHERE run_id = ?",
                (BIG, suffix, demo),
            )
    db.execute("VACUUM")
    db.close()
    return store, f"{demo}"


def median_seconds(client: TestClient, url: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        reply = client.get(url)
        times.append(time.perf_counter() - start)
        assert reply.status_code == 200, (url, reply.status_code, reply.text[:200])
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--store", help="reuse (or keep) the store at this path")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        if args.store and Path(args.store).exists():
            store = Path(args.store)
        else:
            started = time.perf_counter()
            store, _ = build(Path(scratch), args.runs, args.cases)
            if args.store:
                Path(args.store).write_bytes(store.read_bytes())
                store = Path(args.store)
            print(f"store built in {time.perf_counter() - started:.1f} s: {store}")
        db = sqlite3.connect(store)
        counts = (
            db.execute("SELECT COUNT(*) FROM runs").fetchone()[0],
            db.execute("SELECT COUNT(*) FROM cases WHERE run_id = ?", (BIG,)).fetchone()[0],
            db.execute("SELECT COUNT(*) FROM scores WHERE run_id = ?", (BIG,)).fetchone()[0],
        )
        case_id = db.execute(
            "SELECT case_id FROM cases WHERE run_id = ? ORDER BY position DESC LIMIT 1", (BIG,)
        ).fetchone()[0]
        db.close()
        print(f"{counts[0]} runs; run {BIG}: {counts[1]} cases, {counts[2]} scores")
        client = TestClient(create_app(store), base_url="http://127.0.0.1:8765")  # a local Host
        pages = [
            ("runs list (page 1 of 1,000 runs)", "/"),
            ("runs list JSON", "/api/runs"),
            ("runs list, search", "/?q=copy%2099"),
            ("run detail, 10k cases", f"/runs/{BIG}"),
            ("run detail, last case page", f"/runs/{BIG}?page={-(-counts[1] // 100)}"),
            ("run detail, failing token_f1", f"/runs/{BIG}?failing=token_f1"),
            ("run detail JSON", f"/api/runs/{BIG}"),
            ("case page", f"/runs/{BIG}/cases/{case_id}"),
            ("case JSON", f"/api/runs/{BIG}/cases/{case_id}"),
            ("progress JSON", f"/api/runs/{BIG}/progress"),
        ]
        print(f"median of {args.repeat}, seconds per page:")
        for label, url in pages:
            print(f"  {label:34s} {median_seconds(client, url, args.repeat):7.3f}")


if __name__ == "__main__":
    main()

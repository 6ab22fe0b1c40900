"""Fault injection: a misbehaving HTTP server, a server that dies mid-run, a SIGKILLed run that
is resumed, and a Python target that raises. Every expectation below is worked out by hand from
the script of ``faulty_server.py`` and the retry rules of ``targets/http.py``."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.config import EvalConfig, TargetConfig
from ragmeter.models import Case, CaseResult
from ragmeter.runner.engine import RunOutcome
from ragmeter.runner.run import evaluate
from ragmeter.targets.python import PythonTarget

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from faulty_server import FaultyServer  # noqa: E402

pytestmark = pytest.mark.integration

# case_id -> question; the keyword in the question picks the server's behaviour.
MIXED = {
    "ok-1": "What is the leave policy?",
    "ok-2": "How many office locations are there?",
    "ok-3": "Who approves expenses?",
    "ok-4": "When are performance reviews held?",
    "fail-1": "FAIL500 what is the travel policy?",
    "fail-2": "FAIL500 what is the equipment budget?",
    "garbage-1": "GARBAGE what are the working hours?",
    "garbage-2": "GARBAGE what is remote work?",
    "hang-1": "HANG what is the security policy?",
    "flaky-1": "FLAKY what are the benefits?",
    "flaky-2": "FLAKY what is onboarding?",
    "rate-1": "RATE what is the code of conduct?",
    "rate-2": "RATE where is the company based?",
}
FAILING = {"fail-1", "fail-2", "garbage-1", "garbage-2", "hang-1"}


def write_dataset(path: Path, questions: dict[str, str]) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for case_id, question in questions.items():
            handle.write(json.dumps({"case_id": case_id, "question": question}) + "\n")
    return path


def as_cases(questions: dict[str, str]) -> list[Case]:
    return [Case(case_id=case_id, question=question) for case_id, question in questions.items()]


def run_cli(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


def metric_value(outcome_or_doc: Any, name: str) -> float | None:
    metrics = outcome_or_doc["scorecard"]["metrics"]
    return next(m["value"] for m in metrics if m["name"] == name)


# a HANG question holds its request this long (until the server stops at the test's end):
# far longer than any client timeout below, and than run_cli's own timeout
HANG_S = 900.0


@pytest.fixture
def server() -> Iterator[FaultyServer]:
    with FaultyServer(hang_s=HANG_S) as running:
        yield running


RETRIED_OK = ("flaky-1", "flaky-2", "rate-1", "rate-2")


def check_mixed(results: dict[str, Any], hang_error: str, server: FaultyServer) -> None:
    """Shared expectations for the MIXED dataset; ``results`` maps case_id to a dict."""
    assert set(results) == set(MIXED)
    for case_id in ("ok-1", "ok-2", "ok-3", "ok-4"):
        assert results[case_id]["status"] == "ok", results[case_id]
        assert results[case_id]["attempts"] == 1
        assert server.requests_for(MIXED[case_id]) == 1
    for case_id in RETRIED_OK:
        # first answer 500 / 429, retried once, then a valid answer
        assert results[case_id]["status"] == "ok", results[case_id]
        assert results[case_id]["attempts"] == 2, results[case_id]
        assert results[case_id]["error_type"] is None
        assert server.requests_for(MIXED[case_id]) == 2
    for case_id in ("fail-1", "fail-2"):
        assert results[case_id]["status"] == "error"
        assert results[case_id]["error_type"] == "http_5xx"
        assert results[case_id]["attempts"] == 3  # 1 + max_retries (2)
        assert server.requests_for(MIXED[case_id]) == 3
        assert "HTTP 500" in results[case_id]["error_message"]
    for case_id in ("garbage-1", "garbage-2"):
        assert results[case_id]["status"] == "error"
        assert results[case_id]["error_type"] == "invalid_json"
        assert results[case_id]["attempts"] == 1  # a 200 with a bad body is not retried
        assert server.requests_for(MIXED[case_id]) == 1
    assert results["hang-1"]["status"] == "error"
    assert results["hang-1"]["error_type"] == hang_error
    assert results["hang-1"]["attempts"] == 1  # timeouts are not retried
    assert server.requests_for(MIXED["hang-1"]) == 1


def test_cli_run_against_faulty_server(server: FaultyServer, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "mixed.jsonl", MIXED)
    store, out = tmp_path / "runs.db", tmp_path / "runs"
    started = time.monotonic()
    proc = run_cli(
        "eval",
        "--dataset",
        str(dataset),
        "--target",
        server.url,
        "--store",
        str(store),
        "--output-dir",
        str(out),
        "--no-progress",
        "--timeout",
        "1",
        "--concurrency",
        "4",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    # a hang guard: HANG holds its request for 900 s; the 1 s read timeout must cut it short
    # (no waiting for the server)
    assert time.monotonic() - started < 300

    files = list(out.glob("*.json"))
    assert len(files) == 1
    document = json.loads(files[0].read_text(encoding="utf-8"))
    assert document["status"] == "completed"
    assert document["question_count"] == len(MIXED) == 13
    assert document["error_count"] == len(FAILING) == 5
    results = {case["case_id"]: case for case in document["cases"]}
    # --timeout 1 sets the HTTP read timeout to 1 s and the case timeout to 3 s: httpx fires first
    check_mixed(results, hang_error="timeout", server=server)
    assert metric_value(document, "error_rate") == pytest.approx(5 / 13)

    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        ((run_id, status, errors, count),) = db.execute(
            "SELECT id, status, error_count, question_count FROM runs"
        ).fetchall()
        assert (status, errors, count) == ("completed", 5, 13)
        assert run_id == document["id"]
        rows = db.execute(
            "SELECT COUNT(*), COUNT(DISTINCT case_id), SUM(status != 'ok')"
            " FROM responses WHERE run_id=?",
            (run_id,),
        ).fetchone()
        assert rows == (13, 13, 5)


def test_api_run_case_timeout(server: FaultyServer, tmp_path: Path) -> None:
    # The case timeout (0.5 s) is shorter than the HTTP timeout (10 s): the engine's wait_for
    # cancels the hung query and records case_timeout.
    config = EvalConfig(
        target=TargetConfig(type="http", url=server.url, timeout_s=10, backoff_s=0.01),
        case_timeout_s=1.0,
        concurrency=3,
        store=str(tmp_path / "runs.db"),
        output_dir=str(tmp_path / "runs"),
        progress=False,
        bootstrap_resamples=50,
    )
    outcome: RunOutcome = evaluate(config, cases=as_cases(MIXED))
    assert len(outcome.results) == 13
    results = {r.case_id: r.model_dump() for r in outcome.results}
    check_mixed(results, hang_error="case_timeout", server=server)
    assert outcome.record.status == "completed"
    assert outcome.record.question_count == 13
    assert outcome.record.error_count == 5
    assert outcome.record.scorecard is not None
    error_rate = outcome.record.scorecard.get("error_rate")
    assert error_rate is not None and error_rate.value == pytest.approx(5 / 13)
    assert error_rate.n_scored == 13
    assert outcome.run_file is not None
    document = json.loads(outcome.run_file.read_text(encoding="utf-8"))
    assert (document["question_count"], document["error_count"]) == (13, 5)


def test_retried_success_records_attempts(server: FaultyServer, tmp_path: Path) -> None:
    retried = {case_id: MIXED[case_id] for case_id in RETRIED_OK}
    config = EvalConfig(
        target=TargetConfig(type="http", url=server.url, timeout_s=5, backoff_s=0.01),
        concurrency=2,
        store=str(tmp_path / "runs.db"),
        output_dir=str(tmp_path / "runs"),
        progress=False,
        bootstrap_resamples=0,
    )
    outcome = evaluate(config, cases=as_cases(retried))
    for result in outcome.results:
        assert result.status == "ok"
        assert server.requests_for(retried[result.case_id]) == 2
    assert {r.case_id: r.attempts for r in outcome.results} == dict.fromkeys(RETRIED_OK, 2)


def test_server_dies_mid_run(tmp_path: Path) -> None:
    n, served = 12, 5
    questions = {f"q{i:02d}": f"Ordinary question number {i}?" for i in range(n)}
    with FaultyServer(die_after=served) as dying:
        config = EvalConfig(
            target=TargetConfig(
                type="http", url=dying.url, timeout_s=2, max_retries=1, backoff_s=0.01
            ),
            case_timeout_s=5,
            concurrency=2,
            store=str(tmp_path / "runs.db"),
            output_dir=str(tmp_path / "runs"),
            progress=False,
            bootstrap_resamples=50,
        )
        outcome = evaluate(config, cases=as_cases(questions))
        assert dying.dead
    assert len(outcome.results) == n  # no case lost
    assert {r.case_id for r in outcome.results} == set(questions)
    ok = [r for r in outcome.results if r.status == "ok"]
    failed = [r for r in outcome.results if r.status != "ok"]
    # exactly the first `served` requests are answered; every other case is dropped or refused
    assert len(ok) == served
    assert len(failed) == n - served
    for result in failed:
        assert result.error_type == "connection_error", result
        assert result.attempts == 2  # 1 + max_retries (1)
    assert outcome.record.status == "completed"
    assert outcome.record.error_count == n - served
    assert outcome.record.scorecard is not None
    error_rate = outcome.record.scorecard.get("error_rate")
    assert error_rate is not None and error_rate.value == pytest.approx((n - served) / n)


def _count_responses(store: Path) -> int:
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=1) as db:
            return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    except sqlite3.Error:  # the file or the table does not exist yet
        return 0


@pytest.fixture
def holding_server() -> Iterator[FaultyServer]:
    """Answers the first 10 queries; later ones wait until ``release()`` (or the end)."""
    with FaultyServer(hold_after=10) as running:
        yield running


def test_sigkill_then_resume(holding_server: FaultyServer, tmp_path: Path) -> None:
    n = 60
    questions = {f"k{i:03d}": f"Slow question number {i}?" for i in range(n)}
    dataset = write_dataset(tmp_path / "slow.jsonl", questions)
    store, out = tmp_path / "runs.db", tmp_path / "runs"
    common = ["--store", str(store), "--output-dir", str(out), "--no-progress"]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ragmeter",
            "eval",
            "--dataset",
            str(dataset),
            "--target",
            holding_server.url,
            "--timeout",  # the held queries wait for the kill, not for a timeout
            "300",
            "--concurrency",
            "2",
            *common,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    try:
        # the 10 answers are stored and the run is still asking (its next queries are held)
        deadline = time.monotonic() + 300  # a hang guard
        while _count_responses(store) < 10:
            assert proc.poll() is None, f"eval exited early: {proc.communicate()}"
            assert time.monotonic() < deadline, "no 10 responses stored within 300 s"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
    holding_server.release()  # the resumed run is answered

    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        ((run_id, status, count),) = db.execute(
            "SELECT id, status, question_count FROM runs"
        ).fetchall()
        answered_before = db.execute(
            "SELECT COUNT(*) FROM responses WHERE run_id=?", (run_id,)
        ).fetchone()[0]
    assert status == "running"  # killed: nobody could mark it interrupted
    assert count == n
    assert answered_before == 10

    resumed = run_cli("eval", "--resume", run_id, *common, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr + resumed.stdout

    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1  # no new run
        status, errors, count = db.execute(
            "SELECT status, error_count, question_count FROM runs WHERE id=?", (run_id,)
        ).fetchone()
        assert (status, errors, count) == ("completed", 0, n)
        total, distinct, ok = db.execute(
            "SELECT COUNT(*), COUNT(DISTINCT case_id), SUM(status = 'ok') FROM responses"
            " WHERE run_id=?",
            (run_id,),
        ).fetchone()
        assert (total, distinct, ok) == (n, n, n)
        scored = {
            row[0]
            for row in db.execute("SELECT DISTINCT case_id FROM scores WHERE run_id=?", (run_id,))
        }
        assert scored == set(questions)
        error_rate = db.execute(
            "SELECT value FROM scores WHERE run_id=? AND metric='error_rate'", (run_id,)
        ).fetchall()
        assert len(error_rate) == n and all(value == 0.0 for (value,) in error_rate)
    files = list(out.glob(f"{run_id}_*.json"))
    assert len(files) == 1
    document = json.loads(files[0].read_text(encoding="utf-8"))
    assert (document["question_count"], document["error_count"]) == (n, 0)
    assert len(document["cases"]) == n


def test_python_target_that_raises(tmp_path: Path) -> None:
    calls: list[str] = []

    def answer(question: str) -> dict[str, Any]:
        calls.append(question)
        if "BOOM" in question:
            raise ValueError(f"cannot answer {question!r}")
        if "KEYERR" in question:
            raise KeyError("missing")
        return {"answer": f"answer to {question}", "retrieved": [], "citations": []}

    questions = {f"p{i}": (f"BOOM {i}" if i % 3 == 0 else f"fine {i}") for i in range(9)}
    questions["p9"] = "KEYERR 9"
    target = PythonTarget(TargetConfig(type="python"), function=answer)
    config = EvalConfig(
        target=TargetConfig(type="python"),
        concurrency=3,
        store=str(tmp_path / "runs.db"),
        output_dir=str(tmp_path / "runs"),
        progress=False,
        bootstrap_resamples=50,
    )
    outcome = evaluate(config, cases=as_cases(questions), target=target)

    assert len(calls) == 10  # every case asked once, the run went on
    results: dict[str, CaseResult] = {r.case_id: r for r in outcome.results}
    assert set(results) == set(questions)
    for case_id in ("p0", "p3", "p6"):
        assert results[case_id].status == "error"
        assert results[case_id].error_type == "exception:ValueError"
        assert results[case_id].error_message == f"cannot answer 'BOOM {case_id[1:]}'"
        assert results[case_id].attempts == 1
    assert results["p9"].error_type == "exception:KeyError"
    for case_id in ("p1", "p2", "p4", "p5", "p7", "p8"):
        assert results[case_id].status == "ok"
        assert results[case_id].response is not None
        assert results[case_id].response.answer == f"answer to fine {case_id[1:]}"
    assert outcome.record.status == "completed"
    assert outcome.record.error_count == 4
    assert outcome.record.scorecard is not None
    error_rate = outcome.record.scorecard.get("error_rate")
    assert error_rate is not None and error_rate.value == pytest.approx(4 / 10)

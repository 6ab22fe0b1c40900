"""Ctrl-C, SIGTERM and SIGKILL at every stage of a real ``ragmeter eval``, then ``--resume``:
exactly N cases, the same scores as an uninterrupted run, and no completed answer asked twice.
The server runs in this process so the test can count every request it received."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from edge_server import EdgeServer  # noqa: E402
from faulty_server import FaultyServer  # noqa: E402

pytestmark = pytest.mark.integration

N = 40


def write_cases(path: Path, n: int = N) -> dict[str, str]:
    questions = {f"q{i:03d}": f"What does section {i} of the handbook say?" for i in range(n)}
    with path.open("w", encoding="utf-8") as handle:
        for case_id, question in questions.items():
            case = {
                "case_id": case_id,
                "question": question,
                "reference_answer": f"An answer to: {question}",
                "gold_passages": [{"doc_id": "doc-a"}],
            }
            handle.write(json.dumps(case) + "\n")
    return questions


def start_eval(tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ragmeter",
            "eval",
            "-d",
            str(tmp_path / "cases.jsonl"),
            "--store",
            str(tmp_path / "runs.db"),
            "--output-dir",
            str(tmp_path / "runs"),
            "--no-progress",
            "--concurrency",
            "2",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )


def cli(tmp_path: Path, *args: str, store: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args, "--store", str(store or tmp_path / "runs.db")],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )


def query(store: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5) as db:
            return db.execute(sql, params).fetchall()
    except sqlite3.Error:  # not created yet
        return []


def wait_for(condition: Callable[[], bool], proc: subprocess.Popen[str], what: str) -> None:
    deadline = time.monotonic() + 300
    while not condition():
        assert proc.poll() is None, f"eval exited before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"no {what} within 300 s"
        time.sleep(0.02)


def answered(store: Path) -> set[str]:
    return {row[0] for row in query(store, "SELECT case_id FROM responses")}


def comparable_scores(store: Path) -> dict[tuple[str, str], tuple[str, Any]]:
    rows = query(store, "SELECT case_id, metric, status, value FROM scores")
    return {
        (case_id, metric): (status, None if value is None else round(value, 9))
        for case_id, metric, status, value in rows
        if "latency" not in metric and "throughput" not in metric
    }


@pytest.fixture(scope="module")
def slow_server() -> Iterator[FaultyServer]:
    with FaultyServer(delay_s=0.05) as running:
        yield running


@pytest.fixture(scope="module")
def reference_scores(
    slow_server: FaultyServer, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[tuple[str, str], tuple[str, Any]]]:
    """Scores of uninterrupted runs (offline metrics; the default set) over the same cases."""
    out: dict[str, dict[tuple[str, str], tuple[str, Any]]] = {}
    for label, metrics in (("offline", ["--metrics", "retrieval,lexical"]), ("default", [])):
        folder = tmp_path_factory.mktemp(f"reference-{label}")
        write_cases(folder / "cases.jsonl")
        proc = start_eval(folder, "--target", slow_server.url, *metrics)
        _, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 0, stderr
        out[label] = comparable_scores(folder / "runs.db")
    return out


def finish_and_check(
    tmp_path: Path,
    proc: subprocess.Popen[str],
    code: int,
    server: FaultyServer,
    questions: dict[str, str],
    expected: dict[tuple[str, str], tuple[str, Any]],
) -> None:
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, (stdout, stderr)
    server.release()  # held requests (hold_after) may be answered now: the run has stopped
    store = tmp_path / "runs.db"
    ((run_id, status),) = query(store, "SELECT id, status FROM runs")
    assert status == "interrupted"
    assert f"ragmeter eval --resume {run_id}" in stderr
    assert "Traceback" not in stderr
    resume_and_check(tmp_path, run_id, server, questions, expected)


def resume_and_check(
    tmp_path: Path,
    run_id: str,
    server: FaultyServer,
    questions: dict[str, str],
    expected: dict[tuple[str, str], tuple[str, Any]],
) -> None:
    """``--resume``: exactly N answers, no stored answer asked again, the same scores as an
    uninterrupted run, and the run file in the run's own output folder."""
    store = tmp_path / "runs.db"
    kept = answered(store)
    asked_before = {case_id: server.requests_for(q) for case_id, q in questions.items()}
    resumed = cli(tmp_path, "eval", "--resume", run_id, "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert query(store, "SELECT status FROM runs") == [("completed",)]
    # the run file goes where the run's own --output-dir said
    assert len(list((tmp_path / "runs").glob(f"{run_id}_*.json"))) == 1
    assert not (tmp_path / ".ragmeter").exists()
    ((total, distinct),) = query(store, "SELECT COUNT(*), COUNT(DISTINCT case_id) FROM responses")
    assert total == distinct == len(questions)
    for case_id in kept:  # a stored answer is never asked again
        assert server.requests_for(questions[case_id]) == asked_before[case_id]
    assert comparable_scores(store) == expected


def test_sigint_while_asking_then_resume(
    slow_server: FaultyServer, reference_scores: Any, tmp_path: Path
) -> None:
    questions = write_cases(tmp_path / "cases.jsonl")
    # the server answers 8 questions and holds every later one until released: the run is
    # surely still asking when the second process reaches the lock and when the signal arrives
    with FaultyServer(hold_after=8) as held:
        proc = start_eval(tmp_path, "--target", held.url, "--metrics", "retrieval,lexical")
        store = tmp_path / "runs.db"
        wait_for(lambda: len(answered(store)) >= 8, proc, "8 answers")
        wait_for(lambda: held.query_count >= 9, proc, "a held request")
        ((run_id,),) = query(store, "SELECT id FROM runs")
        second = cli(tmp_path, "eval", "--resume", run_id, "--no-progress")
        assert proc.poll() is None, "the first run ended while its requests were held"
        assert second.returncode == 2 and "another process" in second.stderr, second.stderr
        proc.send_signal(signal.SIGINT)
        finish_and_check(tmp_path, proc, 130, held, questions, reference_scores["offline"])


def test_sigint_while_asking_and_scoring_at_once_then_resume(tmp_path: Path) -> None:
    """600 cases: the run is scored by a second process while it is asked (docs/runs.md,
    "Scoring while asking"). Ctrl-C stops both; the scores stored so far are removed, and the
    resumed run has the scores of a run scored after asking."""
    metrics = ["--metrics", "retrieval,lexical,context", "--concurrency", "4"]
    with FaultyServer(delay_s=0.02) as server:
        reference = tmp_path / "reference"
        reference.mkdir()
        write_cases(reference / "cases.jsonl", 600)
        env = {**os.environ, "RAGMETER_SCORE_WHILE_ASKING": "false"}
        done = subprocess.run(
            start_eval(reference, "--target", server.url, *metrics).args,
            capture_output=True,
            text=True,
            timeout=300,
            cwd=reference,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        expected = comparable_scores(reference / "runs.db")
        assert {metric for _, metric in expected} >= {"redundancy_tfidf", "token_f1", "mrr"}

    questions = write_cases(tmp_path / "cases.jsonl", 600)
    # 300 answers, then every request is held: the run is surely still asking while the second
    # process scores what it has
    with FaultyServer(hold_after=300) as held:
        proc = start_eval(tmp_path, "--target", held.url, *metrics)
        store = tmp_path / "runs.db"
        # scores stored while the run is still being asked: the second process is at work
        wait_for(lambda: bool(query(store, "SELECT 1 FROM scores LIMIT 1")), proc, "a score")
        assert len(answered(store)) <= 300
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
        held.release()
        assert proc.returncode == 130, (stdout, stderr)
        assert "Traceback" not in stderr
        assert query(store, "SELECT status FROM runs") == [("interrupted",)]
        assert query(store, "SELECT COUNT(*) FROM scores") == [(0,)]
        ((run_id,),) = query(store, "SELECT id FROM runs")
        resume_and_check(tmp_path, run_id, held, questions, expected)


def test_sigterm_while_scoring_then_resume(
    slow_server: FaultyServer, reference_scores: Any, tmp_path: Path
) -> None:
    questions = write_cases(tmp_path / "cases.jsonl")
    proc = start_eval(tmp_path, "--target", slow_server.url)
    store = tmp_path / "runs.db"
    wait_for(lambda: len(answered(store)) == N, proc, "every answer")
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    # stopped while scoring, not after it: interrupted (finish_and_check), no score kept
    assert query(store, "SELECT COUNT(*) FROM scores") == [(0,)]
    finish_and_check(tmp_path, proc, 143, slow_server, questions, reference_scores["default"])


def test_sigint_while_judging_stops_at_once(tmp_path: Path) -> None:
    write_cases(tmp_path / "cases.jsonl", 3)
    with EdgeServer(judge_hang_s=300) as server:
        proc = start_eval(
            tmp_path,
            "--target",
            server.url,
            "--metrics",
            "lexical,judged",
            "--judge",
            f"{server.url}/v1#judge-model",
            "--judge-timeout",
            "250",
        )
        wait_for(lambda: server.judge_requests >= 1, proc, "a judge request")
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
        # it did not wait for the hung judge's answer or its 250 s timeout
        assert time.monotonic() - started < 120
    assert proc.returncode == 130, (stdout, stderr)
    assert "while scoring" in stderr and "--resume" in stderr
    assert query(tmp_path / "runs.db", "SELECT status FROM runs") == [("interrupted",)]
    ((run_id,),) = query(tmp_path / "runs.db", "SELECT id FROM runs")
    rescored = cli(tmp_path, "rescore", run_id)  # half-answered: finish it first
    assert rescored.returncode == 2 and f"--resume {run_id}" in rescored.stderr


def test_sigkill_then_resume_asks_only_unanswered(
    slow_server: FaultyServer, reference_scores: Any, tmp_path: Path
) -> None:
    questions = write_cases(tmp_path / "cases.jsonl")
    with FaultyServer(hold_after=8) as held:  # the run is surely still asking when killed
        proc = start_eval(tmp_path, "--target", held.url, "--metrics", "retrieval,lexical")
        store = tmp_path / "runs.db"
        wait_for(lambda: len(answered(store)) >= 8, proc, "8 answers")
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        held.release()
        ((run_id, status),) = query(store, "SELECT id, status FROM runs")
        assert status == "running"  # nobody could mark it
        resume_and_check(tmp_path, run_id, held, questions, reference_scores["offline"])

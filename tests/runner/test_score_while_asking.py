"""Scoring while a run is asked (``runner.score_while_asking``): a second process scores the
answers as they are stored, and every number, store row and run file byte is the one scoring
after the last answer gives."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ragmeter.runfile import RunFileWriter
from ragmeter.runner import score_while_asking
from ragmeter.runner.records import new_run_record
from ragmeter.runner.run import evaluate
from ragmeter.store import streams
from ragmeter.store.errors import RunNotFoundError
from ragmeter.store.sqlite import RunStore
from tests.runner.test_streaming import _config, _replay_files, _without_ids


@pytest.fixture
def finishes(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """What each scoring process's ``finish`` said (True: it scored the run)."""
    said: list[bool] = []
    original = score_while_asking.ScoringProcess.finish

    async def recorded(self: score_while_asking.ScoringProcess) -> bool:
        outcome = await original(self)
        said.append(outcome)
        return outcome

    monkeypatch.setattr(score_while_asking.ScoringProcess, "finish", recorded)
    monkeypatch.setattr(score_while_asking, "MIN_CASES_TO_SCORE_WHILE_ASKING", 1)
    return said


def _rows(store: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(store) as db:
        return db.execute(
            "SELECT case_id, metric, value, status, reason, details_json FROM scores ORDER BY rowid"
        ).fetchall()


def _same_run(first: Any, second: Any) -> None:
    assert _rows(second.record.config["store"]) == _rows(first.record.config["store"])
    assert second.record.scorecard == first.record.scorecard
    assert second.record.breakdowns == first.record.breakdowns
    assert second.record.performance == first.record.performance
    assert second.record.weighted_score == first.record.weighted_score
    one = json.loads(first.run_file.read_text(encoding="utf-8"))
    two = json.loads(second.run_file.read_text(encoding="utf-8"))
    assert _without_ids(two) == _without_ids(one)


@pytest.mark.parametrize("chunk", [3, 250])
def test_a_run_scored_while_asked_equals_the_run_scored_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, finishes: list[bool], chunk: int
) -> None:
    dataset, replay = _replay_files(tmp_path, 2)  # 174 cases
    monkeypatch.setattr(score_while_asking, "CHUNK_CASES", chunk)
    after = evaluate(
        _config(tmp_path, dataset, replay, "after").model_copy(update={"score_while_asking": False})
    )
    assert finishes == []
    while_asked = evaluate(_config(tmp_path, dataset, replay, "while"))
    assert finishes == [True]  # scored by the second process

    _same_run(after, while_asked)
    values = {s.metric: s for s in while_asked.scores}
    assert values["redundancy_tfidf"].status == "ok"  # the run-wide statistic, filled in
    assert not any(s.reason == score_while_asking.PENDING_REASON for s in while_asked.scores)
    assert len(while_asked.scores) == 174 * len({s.metric for s in after.scores})


def test_a_scoring_process_that_dies_leaves_the_run_scored_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, finishes: list[bool]
) -> None:
    dataset, replay = _replay_files(tmp_path, 1)
    after = evaluate(
        _config(tmp_path, dataset, replay, "after").model_copy(update={"score_while_asking": False})
    )
    false = shutil.which("false")
    assert false is not None
    monkeypatch.setattr(sys, "executable", false)  # the "process" exits at once, saying nothing
    with pytest.warns(RuntimeWarning, match="scoring process ended without a reply"):
        recovered = evaluate(_config(tmp_path, dataset, replay, "recovered"))
    assert finishes == [False]
    assert recovered.record.status == "completed"
    _same_run(after, recovered)


def test_an_error_in_the_scoring_process_reaches_the_caller_and_the_run_stays_unfinished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, finishes: list[bool]
) -> None:
    dataset, replay = _replay_files(tmp_path, 1)
    original = score_while_asking.ScoringProcess.start.__func__  # type: ignore[attr-defined]

    def astray(cls: Any, config: Any, run_id: str, run_file: Path, spawned: Any = None) -> Any:
        # the process fails at the end
        return original(cls, config, "no-such-run", run_file, spawned)

    monkeypatch.setattr(score_while_asking.ScoringProcess, "start", classmethod(astray))
    config = _config(tmp_path, dataset, replay, "broken")
    with pytest.raises(RunNotFoundError, match="no-such-run"):
        evaluate(config)
    assert finishes == []  # finish raised the process's error
    with sqlite3.connect(config.store) as db:
        assert db.execute("SELECT status FROM runs").fetchall() == [("running",)]
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone() == (87,)


def test_ragmeter_eval_scores_while_asking_by_default(tmp_path: Path) -> None:
    """The real CLI, 522 replayed cases (over the 500 that start a scoring process): the run
    file and the store's score rows equal those of ``RAGMETER_SCORE_WHILE_ASKING=false``."""
    dataset, replay = _replay_files(tmp_path, 6)
    documents, rows = [], []
    for label, env in (("while", {}), ("after", {"RAGMETER_SCORE_WHILE_ASKING": "false"})):
        store, output = tmp_path / f"{label}.db", tmp_path / label
        command = [sys.executable, "-m", "ragmeter", "eval", "--dataset", str(dataset)]
        command += ["--target", f"replay:{replay}", "--store", str(store), "--no-progress"]
        command += ["--output-dir", str(output)]
        command += ["--metrics", "retrieval,lexical,context,grounding,citation,performance"]
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, **env},
        )
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr and "Warning" not in done.stderr
        (run_file,) = output.glob("*.json")
        documents.append(_without_ids(json.loads(run_file.read_text(encoding="utf-8"))))
        rows.append(_rows(str(store)))
    assert len(documents[0]["cases"]) == 522
    assert documents[0] == documents[1]
    assert rows[0] == rows[1]


def test_scoring_follows_answers_stored_out_of_order(tmp_path: Path) -> None:
    """``score_following`` while the answers arrive shuffled, a few at a time: it scores only
    answered cases with none unanswered before them, yet ends with the rows, scorecard and run
    file cases of scoring after asking."""
    following, after, store = _stored_run(tmp_path, "follow")
    config = after.record.config
    asked, stop = threading.Event(), threading.Event()
    outcome: dict[str, Any] = {}
    # batches saved, and the most saved before a look of the follower that found nothing new
    progress = {"saved": 0, "seen": 0}
    changed = threading.Condition()
    followed: list[str] = []  # the cases it took while the run was being asked, in turn

    def follow() -> None:
        own = RunStore(following.store)
        answered_run = own.answered_run

        def looked(*args: Any) -> Any:
            with changed:
                saved = progress["saved"]
            found = answered_run(*args)
            followed.extend(case.case_id for case in found[0])
            if not found[0]:  # it has scored every answer of those batches it could
                with changed:
                    progress["seen"] = saved
                    changed.notify_all()
            return found

        own.answered_run = looked  # type: ignore[method-assign]
        writer = RunFileWriter(tmp_path / "following.json")
        try:
            final = score_while_asking.score_following(
                own, "follow", following, stop, asked, writer.add, 3
            )
            outcome["path"] = writer.finish(final)
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            own.close()
            with changed:
                changed.notify_all()

    thread = threading.Thread(target=follow)
    thread.start()
    answers = list(after.results)
    random.Random(3).shuffle(answers)
    for start in range(0, len(answers), 5):
        store.save_results("follow", answers[start : start + 5])
        with changed:  # the follower catches up before the next answers arrive
            progress["saved"] += 1
            caught_up = changed.wait_for(
                lambda: progress["seen"] >= progress["saved"] or "error" in outcome, 120
            )
        assert caught_up, "the follower did not look at the store again"
    asked.set()
    thread.join(300)  # a hang guard
    assert "error" not in outcome, outcome.get("error")
    # every answer was taken while the answers arrived, each once and in case order
    assert followed == [case.case_id for case in after.cases]
    assert _rows(following.store) == _rows(config["store"])
    assert store.get_run("follow").scorecard == after.record.scorecard
    store.close()
    mine = json.loads(outcome["path"].read_text(encoding="utf-8"))["cases"]
    theirs = json.loads(after.run_file.read_text(encoding="utf-8"))["cases"]
    assert [{k: v for k, v in c.items() if k != "latency_ms"} for c in mine] == [
        {k: v for k, v in c.items() if k != "latency_ms"} for c in theirs
    ]


def test_the_answered_run_stops_at_the_first_unanswered_case(tmp_path: Path) -> None:
    _, done, store = _stored_run(tmp_path, "partial")
    store.save_results("partial", [done.results[i] for i in (0, 1, 3, 5)])
    cases, results, last = store.answered_run("partial", -1, 10)
    assert (
        [c.case_id for c in cases]
        == [r.case_id for r in results]
        == [c.case_id for c in done.cases[:2]]
    )
    assert last == 1
    assert store.answered_run("partial", last, 10) == ([], [], 1)  # case 2 is still asked
    cases, _, last = store.answered_after("partial", 1, 4)  # asking has ended: gaps skipped
    assert [c.case_id for c in cases] == [done.cases[3].case_id, done.cases[5].case_id]
    assert last == 5
    store.close()


def _stored_run(tmp_path: Path, run_id: str) -> tuple[Any, Any, RunStore]:
    """The demo's 87 replayed cases scored after asking (the outcome), and the same cases
    stored as run ``run_id`` in a store of their own, none answered yet (its config, store)."""
    dataset, replay = _replay_files(tmp_path, 1)
    config = _config(tmp_path, dataset, replay, "after").model_copy(
        update={"score_while_asking": False}
    )
    after = evaluate(config)
    copy = config.model_copy(update={"store": str(tmp_path / f"{run_id}.db")})
    store = RunStore(copy.store)
    store.add_cases(run_id, after.cases, 0)
    record = new_run_record(copy, [str(dataset)], len(after.cases), run_id=run_id)
    store.insert_run(record, len(after.cases))
    return copy, after, store


def _half_asked_run(tmp_path: Path) -> tuple[Any, Any]:
    """A stored run of the demo's 87 cases with 10 answered (still being asked), and its
    config."""
    half, after, store = _stored_run(tmp_path, "half")
    store.save_results("half", after.results[:10])
    store.close()
    return half, after


def _score_rows(store: str) -> int:
    with sqlite3.connect(store) as db:
        return int(db.execute("SELECT COUNT(*) FROM scores").fetchone()[0])


def test_a_scoring_process_whose_asker_is_gone_exits_and_leaves_its_scores(
    tmp_path: Path,
) -> None:
    """Its asker killed, the run's lock is gone with it: the scoring process exits at once and
    clears nothing (a resume that takes the lock replaces the scores itself)."""
    half, after = _half_asked_run(tmp_path)
    scoring = score_while_asking.ScoringProcess.start(half, "half", tmp_path / "half.json")
    assert scoring is not None
    deadline = time.monotonic() + 300  # a hang guard: the scoring process runs niced
    while _score_rows(half.store) < 10 * len(after.record.scorecard.metrics):
        assert time.monotonic() < deadline, "no scores from the scoring process"
        time.sleep(0.05)
    assert scoring.process.stdin is not None
    scoring.process.stdin.close()  # what the asker's death looks like from the other side
    assert scoring.process.wait(120) == 0  # a hang guard: it would wait for answers forever
    assert _score_rows(half.store) == 10 * len(after.record.scorecard.metrics)


def test_a_scoring_process_notices_its_asker_gone_though_a_fork_holds_the_pipe(
    tmp_path: Path,
) -> None:
    """A process forked from the asker (a ``python:`` target's worker) keeps the pipe open,
    so no end of input comes; the scoring process still sees its parent gone and exits."""
    half, _ = _half_asked_run(tmp_path)
    script = tmp_path / "asker.py"
    script.write_text(
        "import os, sqlite3, sys, time, pickle\n"
        "from pathlib import Path\n"
        "from ragmeter.runner.score_while_asking import ScoringProcess\n"
        "config = pickle.loads(Path(sys.argv[1]).read_bytes())\n"
        "scoring = ScoringProcess.start(config, 'half', Path(sys.argv[2]))\n"
        "Path(sys.argv[3]).write_text(str(scoring.process.pid))\n"
        "# it follows the run (its first scores are stored): it knows who its parent is\n"
        "deadline = time.monotonic() + 300\n"
        "while not sqlite3.connect(config.store).execute('SELECT COUNT(*) FROM scores')"
        ".fetchone()[0]:\n"
        "    if time.monotonic() > deadline:\n"
        "        os._exit(3)\n"
        "    time.sleep(0.05)\n"
        "fork = os.fork()\n"
        "if fork == 0:  # holds the scoring process's input, not the test's output\n"
        "    null = os.open(os.devnull, os.O_WRONLY)\n"
        "    os.dup2(null, 1)\n"
        "    os.dup2(null, 2)\n"
        "    time.sleep(300)\n"
        "    os._exit(0)\n"
        "Path(sys.argv[4]).write_text(str(fork))\n"
        "os._exit(0)\n",
        encoding="utf-8",
    )
    (tmp_path / "config.pickle").write_bytes(pickle.dumps(half))
    pid_file, fork_file = tmp_path / "scoring.pid", tmp_path / "fork.pid"
    # no pipes to the test: the scoring process and the fork inherit the asker's output
    arguments = [str(tmp_path / "config.pickle"), str(tmp_path / "h.json"), str(pid_file)]
    subprocess.run(
        [sys.executable, str(script), *arguments, str(fork_file)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=600,
        check=True,
    )
    scoring_pid, fork_pid = int(pid_file.read_text()), int(fork_file.read_text())
    try:
        # a hang guard: it looks for its parent between reads of the store (every 20 ms);
        # without that, it would wait for the fork to let go of the pipe (300 s)
        deadline = time.monotonic() + 60
        while _alive(scoring_pid):
            assert time.monotonic() < deadline, "the scoring process outlived its asker"
            time.sleep(0.1)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(fork_pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")  # a zombie has exited


def test_embedding_metrics_scored_in_chunks_equal_those_scored_in_one_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, finishes: list[bool]
) -> None:
    """``semantic`` and grounding's word-piece alignment prepare (embed) a chunk at a time
    while the run is asked, a batch at a time after: the values are the same."""
    pytest.importorskip("onnxruntime")
    dataset, replay = _replay_files(tmp_path, 2)
    monkeypatch.setattr(score_while_asking, "CHUNK_CASES", 3)
    families = {"metrics": ["semantic", "grounding"], "grounding_model": "auto"}
    after = evaluate(
        _config(tmp_path, dataset, replay, "after").model_copy(
            update={**families, "score_while_asking": False}
        )
    )
    while_asked = evaluate(_config(tmp_path, dataset, replay, "while").model_copy(update=families))
    assert finishes == [True]
    values = {s.metric for s in after.scores if s.status == "ok"}
    assert {"semantic_similarity", "bertscore_f1", "grounding_score"} <= values
    _same_run(after, while_asked)


def test_a_run_of_more_than_one_batch_is_scored_after_asking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, finishes: list[bool]
) -> None:
    """Scores held for the run-wide statistic would grow with the run: a run of more than one
    batch is scored batch by batch after asking, in one process."""
    dataset, replay = _replay_files(tmp_path, 1)  # 87 cases
    monkeypatch.setattr(streams, "BATCH_CASES", 50)
    outcome = evaluate(_config(tmp_path, dataset, replay, "two-batches"))
    assert finishes == []  # no scoring process
    assert outcome.record.status == "completed" and len(outcome.results) == 87

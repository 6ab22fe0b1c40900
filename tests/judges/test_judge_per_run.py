"""The judge is an object each run carries, never process state: two runs gathered in one event
loop keep their own judges, a spot check leaves the first judge alone, and ``evaluate()`` works
from inside a running event loop."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from ragmeter import EvalConfig, evaluate, evaluate_async
from ragmeter.judges.cache import JudgeStore
from ragmeter.run_record import RunRecord
from tests.judges.servers import smart_judge

CASES = 3


def config_for(tmp_path: Path, judge_url: str, **extra: Any) -> EvalConfig:
    return EvalConfig(
        store=str(tmp_path / "runs.db"),
        output_dir=str(tmp_path / "out"),
        progress=False,
        samples=CASES,
        seed=1,
        metrics=["lexical"],
        judge=f"{judge_url}/v1#{'model-' + judge_url.rsplit(':', 1)[1]}",
        **extra,
    )


def judge_models(record: RunRecord, store: Path) -> set[str]:
    return {row["model"] for row in JudgeStore(store).calls() if row["run_id"] == record.id}


def test_two_runs_in_one_loop_each_use_their_own_judge(judge_servers: Any, tmp_path: Path) -> None:
    first, second, spot = (
        judge_servers(smart_judge),
        judge_servers(smart_judge),
        judge_servers(smart_judge),
    )
    config_a = config_for(tmp_path / "a", first.url)
    config_b = config_for(
        tmp_path / "b", second.url, spot_check=2, second_judge=f"{spot.url}/v1#spot"
    )

    async def both() -> list[Any]:
        return list(await asyncio.gather(evaluate_async(config_a), evaluate_async(config_b)))

    run_a, run_b = asyncio.run(both())
    # every judge request of a run went to its own server, and each server saw every case
    asked_a = {r["model"] for r in first.requests}
    asked_b = {r["model"] for r in second.requests}
    assert asked_a == {config_a.judge.rsplit("#", 1)[1]}  # type: ignore[union-attr]
    assert asked_b == {config_b.judge.rsplit("#", 1)[1]}  # type: ignore[union-attr]
    assert {r["model"] for r in spot.requests} == {"spot"}
    assert len(first.requests) >= CASES and len(second.requests) >= CASES
    # each run records its own judge: config snapshot, pre-flight snapshot, judge calls
    for run, config, store in ((run_a, config_a, "a"), (run_b, config_b, "b")):
        assert run.record.config["judge"] == config.judge
        assert run.record.config["judge_info"]["judge"]["judge_model"] == config.judge
        models = judge_models(run.record, tmp_path / store / "runs.db")
        scored = {s.details.get("judge_model") for s in run.scores if s.status == "ok"}
        assert config.judge in models and config.judge in scored
    # the spot check judged with the second judge, and the first judge's scores stand
    report = run_b.record.judge_reliability
    assert report is not None and report.second_judge == f"{spot.url}/v1#spot"
    stored_b = judge_models(run_b.record, tmp_path / "b" / "runs.db")
    assert stored_b == {config_b.judge, f"{spot.url}/v1#spot"}
    judged_models = {
        s.details.get("judge_model")
        for s in run_b.scores
        if s.status == "ok" and "judge_model" in s.details
    }
    assert judged_models == {config_b.judge}
    run_file = json.loads(Path(run_b.run_file).read_text())
    assert run_file["config"]["judge"] == config_b.judge


def test_evaluate_inside_a_running_event_loop(judge_servers: Any, tmp_path: Path) -> None:
    judge = judge_servers(smart_judge)
    config = config_for(tmp_path, judge.url)

    async def notebook_cell() -> Any:
        assert asyncio.get_running_loop() is not None
        return evaluate(config)  # as a notebook user would call it

    outcome = asyncio.run(notebook_cell())
    assert outcome.record.status == "completed"
    assert outcome.record.question_count == CASES
    assert any(s.metric == "correctness" and s.status == "ok" for s in outcome.scores)
    assert judge.requests


SLOW_TARGET = """
import asyncio, itertools, os, signal, sys, threading, time
from ragmeter import EvalConfig, evaluate
from ragmeter.runner.engine import RunInterruptedError

CALLS = itertools.count(1)
INTERRUPTED_AT: list[float] = []

def slow(question: str) -> dict:
    call = next(CALLS)
    if call == 3:  # two answers are stored: Ctrl-C while the run is surely asking
        INTERRUPTED_AT.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2 if call < 3 else 2.0)
    return {"answer": "I don't know."}

async def cell() -> None:
    import slowtarget

    try:
        evaluate(EvalConfig(store=sys.argv[1], output_dir=sys.argv[2], progress=False,
                            metrics=["lexical"], concurrency=1,
                            target={"type": "python", "callable": "slowtarget:slow"}))
    except RunInterruptedError as exc:
        (interrupted_at,) = slowtarget.INTERRUPTED_AT
        print("INTERRUPTED", exc.run_id, round(time.perf_counter() - interrupted_at, 1))

# as in a terminal: a job a shell starts in the background (CI may) inherits Ctrl-C ignored,
# and asyncio.run handles Ctrl-C only where Python's default handler is in place
signal.signal(signal.SIGINT, signal.default_int_handler)
asyncio.run(cell())
"""


def test_ctrl_c_stops_evaluate_inside_a_running_loop(tmp_path: Path) -> None:
    import subprocess
    import sys

    from ragmeter.store.sqlite import RunStore

    (tmp_path / "slowtarget.py").write_text(SLOW_TARGET.split("async def cell")[0])
    (tmp_path / "cell.py").write_text(SLOW_TARGET)
    done = subprocess.run(
        [sys.executable, "cell.py", str(tmp_path / "r.db"), str(tmp_path / "out")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert "INTERRUPTED" in done.stdout, done.stdout + done.stderr
    _, run_id, seconds = done.stdout.split()
    # a hang guard: from the Ctrl-C; the 67 cases left would take 2 s each (over 2 minutes)
    assert float(seconds) < 30
    store = RunStore(tmp_path / "r.db")
    record = store.get_run(run_id)
    assert record.status == "interrupted"
    assert 2 <= len(store.answered_case_ids(run_id)) < 69


def test_evaluate_with_a_target_object_inside_a_loop_points_to_evaluate_async() -> None:
    from ragmeter.errors import RagmeterError
    from ragmeter.targets import build_target

    target = build_target(EvalConfig().target)

    async def cell() -> None:
        evaluate(EvalConfig(), target=target)

    with pytest.raises(RagmeterError, match="evaluate_async"):
        asyncio.run(cell())

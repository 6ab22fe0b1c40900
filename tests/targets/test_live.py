"""Audit fixes of the live targets, driven through the real CLI: a Python target's own worker
threads and call-only latency, its confidence checked, an HTTP URL's credentials beside an
Authorization header refused, an HTTP reply that is a JSON list named as one."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from ragmeter.cli.main import main
from ragmeter.config import TargetConfig
from ragmeter.models import Case
from ragmeter.targets.python import PythonTarget
from tests.targets.servers import (
    Script,
    Server,
    json_reply,
    on_post,
    serve,
)
from tests.targets.test_replay import metric, run_document

__all__ = ["serve"]  # the fixture, used by name

N = 40  # more cases in flight than asyncio's default pool ever has threads (at most 32)


def write_cases(path: Path, count: int) -> Path:
    rows = [{"case_id": f"c{i}", "question": f"question {i}?"} for i in range(count)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def run_eval(tmp_path: Path, target: str, count: int, *extra: str) -> Result:
    args = [
        "eval",
        "--no-progress",
        "--dataset",
        str(write_cases(tmp_path / "cases.jsonl", count)),
        "--target",
        target,
        "--store",
        str(tmp_path / "runs.db"),
        "--output-dir",
        str(tmp_path / "out"),
        *extra,
    ]
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


# ---------------------------------------------------------------------------------------------
# 1. the Python target's threads and latency

# a clock per thread: it moves only when the function under test moves it, so a latency is
# exactly the time the function "took" and waiting anywhere else counts for nothing
_CLOCK = threading.local()


def _fake_perf_counter() -> float:
    return float(getattr(_CLOCK, "now", 0.0))


def barrier_target(folder: Path) -> str:
    """A sync function that returns only once N calls run at the same time, then 'takes'
    0.5 s on its thread's clock."""
    module = folder / "barrier_rag.py"
    module.write_text(
        "import threading\n"
        "from tests.targets.test_live import _CLOCK\n"
        f"BARRIER = threading.Barrier({N}, timeout=30)\n"
        "def answer(question):\n"
        "    BARRIER.wait()\n"
        "    _CLOCK.now = getattr(_CLOCK, 'now', 0.0) + 0.5\n"
        "    return {'answer': 'fine', 'confidence': 0.9}\n",
        encoding="utf-8",
    )
    return f"{module}:answer"


def test_every_case_in_flight_gets_a_thread_and_latency_is_the_calls_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "perf_counter", _fake_perf_counter)
    target = barrier_target(tmp_path)
    result = run_eval(tmp_path, target, N, "--concurrency", str(N), "--metrics", "performance")
    assert result.exit_code == 0, result.output
    document = run_document(tmp_path)
    assert document["error_count"] == 0, [c["error_message"] for c in document["cases"]][:3]
    for name in ("latency_p50", "latency_p95", "latency_p99"):
        summary = metric(document, name)
        assert (summary["value"], summary["n_scored"]) == (500.0, N)


def test_a_call_that_timed_out_does_not_hold_up_the_next_case() -> None:
    release = threading.Event()

    def answer(question: str) -> str:
        if question == "hang":
            release.wait(300)  # let go at the end: a next case waiting for it fails at 30 s
        return "fine"

    target = PythonTarget(TargetConfig(type="python"), function=answer, concurrency=1)

    async def run() -> str:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await target.query(Case(case_id="h", question="hang"))
        try:
            async with asyncio.timeout(30):
                return (await target.query(Case(case_id="n", question="next"))).answer
        finally:
            release.set()
            await target.aclose()

    assert asyncio.run(run()) == "fine"


def test_a_reported_total_latency_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    def answer(question: str) -> dict[str, Any]:
        return {"answer": "fine", "latency_ms": {"total": 42, "retrieve": 2}}

    target = PythonTarget(TargetConfig(type="python"), function=answer)

    async def run() -> dict[str, float]:
        try:
            return (await target.query(Case(case_id="c", question="q"))).latency_ms
        finally:
            await target.aclose()

    assert asyncio.run(run()) == {"total": 42.0, "retrieve": 2.0}
    # the case's own latency (stats, case pages, CSV) is that same total, not the wall time
    from ragmeter.runner.executors import ask as ask_case

    again = PythonTarget(TargetConfig(type="python"), function=answer)
    result = asyncio.run(ask_case(again, Case(case_id="c", question="q"), 5.0))
    asyncio.run(again.aclose())
    assert result.latency_ms == 42.0


# ---------------------------------------------------------------------------------------------
# 3. a Python target's confidence outside 0-1


def test_a_python_confidence_outside_0_1_is_invalid_response(tmp_path: Path) -> None:
    module = tmp_path / "sure_rag.py"
    module.write_text(
        "def answer(question):\n    return {'answer': 'fine', 'confidence': 1.5}\n",
        encoding="utf-8",
    )
    result = run_eval(tmp_path, f"{module}:answer", 1, "--metrics", "pipeline")
    assert result.exit_code == 3, result.output  # its one case failed: stored, exit 3
    [case] = run_document(tmp_path)["cases"]
    assert case["error_type"] == "invalid_response"
    assert case["error_message"] == (
        "returned dict does not fit the contract: confidence: Input should be less than or "
        "equal to 1"
    )


# ---------------------------------------------------------------------------------------------
# 6. URL credentials and an Authorization header


def test_url_credentials_beside_an_authorization_header_are_refused(
    tmp_path: Path, serve: Callable[[Script], Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUDIT_KEY", "tok-abcdef123456")
    server = serve(lambda request: None)
    url = f"http://alice:pw-s3cr3t@127.0.0.1:{server.port}"
    header = "Authorization: Bearer ${AUDIT_KEY}"
    result = run_eval(tmp_path, url, 1, "--header", header, "--metrics", "performance")
    assert result.exit_code == 2, result.output
    assert "use one or the other" in result.output
    assert "pw-s3cr3t" not in result.output and "tok-abcdef123456" not in result.output
    assert server.requests == []  # refused before the first request, health check included


def test_url_credentials_alone_still_authenticate(
    tmp_path: Path, serve: Callable[[Script], Server]
) -> None:
    server = serve(lambda request: None)
    url = f"http://alice:pw-s3cr3t@127.0.0.1:{server.port}"
    result = run_eval(tmp_path, url, 1, "--metrics", "performance")
    assert result.exit_code == 0, result.output
    assert {r.headers.get("Authorization", "")[:6] for r in server.requests} == {"Basic "}


# ---------------------------------------------------------------------------------------------
# 7. an HTTP reply that is a JSON list


@pytest.mark.parametrize(
    ("payload", "kind"), [([{"answer": "fine"}], "list"), (7, "number"), (None, "null")]
)
def test_an_http_reply_that_is_not_an_object_says_what_it_is(
    tmp_path: Path, serve: Callable[[Script], Server], payload: Any, kind: str
) -> None:
    server = serve(on_post(lambda request: json_reply(payload)))
    result = run_eval(tmp_path, f"http://127.0.0.1:{server.port}", 1, "--metrics", "performance")
    assert result.exit_code == 3, result.output  # its one case failed: stored, exit 3
    [case] = run_document(tmp_path)["cases"]
    assert case["error_type"] == "invalid_response"
    assert case["error_message"].startswith(
        f"the reply is a JSON {kind}; expected a JSON object in the response contract"
    )


def test_a_call_cancelled_before_its_thread_took_it_frees_its_slot() -> None:
    import threading

    from ragmeter.targets.python import WorkerThreads

    threads = WorkerThreads(1)
    release = threading.Event()
    blocker = threads.pool.submit(release.wait)  # the one thread is taken, outside ``run``

    async def cancelled_call() -> None:
        call = asyncio.ensure_future(threads.run(lambda x: x, 1))
        await asyncio.sleep(0.05)  # queued behind the blocker: it has not started
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(cancelled_call())
    release.set()
    blocker.result(timeout=5)
    assert threads.busy == 0  # the slot is free again: the next call gets a pooled thread
    threads.close()

"""Throughput benchmark: ragmeter's HTTP evaluation against a bare httpx client.

A no-op RAG server (a minimal HTTP/1.1 keep-alive server on asyncio, in its own process so it
does not share the GIL with the clients) answers ``POST /query`` with a fixed small response in
the ragmeter contract and ``GET /health`` with 200. In one run this script measures

(a) a bare ``httpx.AsyncClient`` posting the same N questions with the same concurrency (a pool
    of workers, the same connection limits, every response body parsed as JSON), and
(b) ``ragmeter.evaluate`` on the same N cases with the same concurrency: default
    metrics scored, results stored in a temporary SQLite file, run file written, progress off,

alternating (a) and (b) ``--repeat`` times, and prints the median cases/s of each and the ratio
ragmeter / bare. ``--profile`` adds a cProfile of one ragmeter evaluation, every thread
included (scoring runs in a thread of its own), printed per thread group.

    python bench/harness.py [--cases 2000] [--concurrency 8] [--repeat 3] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import json
import pstats
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

RESPONSE: dict[str, Any] = {
    "answer": "Employees get 25 days of paid leave per year.",
    "retrieved": [
        {
            "id": "doc-a#0",
            "doc_id": "doc-a",
            "rank": 1,
            "score": 0.91,
            "text": "Employees get 25 days of paid leave per year, plus public holidays.",
        },
        {
            "id": "doc-b#0",
            "doc_id": "doc-b",
            "rank": 2,
            "score": 0.52,
            "text": "Remote work is allowed up to three days a week.",
        },
    ],
    "citations": [],
    "abstained": False,
}


# --- the no-op server (runs in a child process) ---------------------------------------------------
def _http_response(status: str, body: bytes) -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
    ).encode() + body


QUERY_REPLY = _http_response("200 OK", json.dumps(RESPONSE).encode())
HEALTH_REPLY = _http_response("200 OK", b'{"status": "ok"}')
NOT_FOUND_REPLY = _http_response("404 Not Found", b'{"error": "no route"}')


class NoopProtocol(asyncio.Protocol):
    """Just enough HTTP/1.1: request line + headers + Content-Length body, keep-alive."""

    def __init__(self) -> None:
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.buffer += data
        replies = []
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                break
            head = self.buffer[:end]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            total = end + 4 + length
            if len(self.buffer) < total:
                break
            method, path = head.split(b" ", 2)[:2]
            self.buffer = self.buffer[total:]
            if method == b"POST" and path == b"/query":
                replies.append(QUERY_REPLY)
            elif method == b"GET" and path == b"/health":
                replies.append(HEALTH_REPLY)
            else:
                replies.append(NOT_FOUND_REPLY)
        if replies:
            self.transport.write(b"".join(replies))


async def serve(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(NoopProtocol, "127.0.0.1", port, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def start_server_process() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    port = proc.stdout.readline().strip()
    if not port.isdigit():
        proc.kill()
        raise RuntimeError(f"no-op server did not start ({port!r})")
    return proc, f"http://127.0.0.1:{port}"


# --- the two clients ------------------------------------------------------------------------------
def make_cases(n: int) -> list[dict[str, Any]]:
    return [
        {
            "case_id": f"c{i:05d}",
            "question": f"How many days of paid leave do employees get? ({i})",
            "reference_answer": "25 days of paid leave per year",
            "gold_passages": [{"doc_id": "doc-a"}],
        }
        for i in range(n)
    ]


async def bare_httpx(url: str, questions: list[str], concurrency: int, top_k: int = 5) -> float:
    """Seconds for a bare httpx worker pool to post every question and parse every answer."""
    async with httpx.AsyncClient(
        base_url=url,
        timeout=httpx.Timeout(30.0),
        limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
    ) as client:
        (await client.get("/health")).raise_for_status()
        pending = iter(questions)
        answers = 0

        async def worker() -> None:
            nonlocal answers
            for question in pending:
                reply = await client.post("/query", json={"question": question, "top_k": top_k})
                reply.raise_for_status()
                reply.json()
                answers += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    assert answers == len(questions)
    return elapsed


def run_bare(url: str, raw_cases: list[dict[str, Any]], concurrency: int) -> float:
    return asyncio.run(bare_httpx(url, [c["question"] for c in raw_cases], concurrency))


def run_ragmeter(
    url: str,
    raw_cases: list[dict[str, Any]],
    concurrency: int,
    workdir: Path,
    metrics: list[str] | None = None,
) -> tuple[float, float]:
    """(total seconds, seconds until the last answer) for one ragmeter evaluation."""
    from ragmeter.config import EvalConfig, TargetConfig
    from ragmeter.models import Case
    from ragmeter.runner.run import evaluate

    cases = [Case.model_validate(c) for c in raw_cases]
    folder = Path(tempfile.mkdtemp(dir=workdir))
    config = EvalConfig(
        target=TargetConfig(kind="http", url=url),
        concurrency=concurrency,
        store=str(folder / "runs.db"),
        output_dir=str(folder / "runs"),
        progress=False,
        **({"metrics": metrics} if metrics else {}),
    )
    last_answer = 0.0

    def on_progress(done: int, total: int) -> None:
        nonlocal last_answer
        if done == total:
            last_answer = time.perf_counter()

    started = time.perf_counter()
    outcome = evaluate(config, cases=cases, on_progress=on_progress)
    elapsed = time.perf_counter() - started
    assert len(outcome.results) == len(cases), "ragmeter lost cases"
    assert outcome.record.error_count == 0, f"{outcome.record.error_count} errors"
    return elapsed, (last_answer - started if last_answer else elapsed)


def profile_one(
    url: str,
    raw_cases: list[dict[str, Any]],
    concurrency: int,
    workdir: Path,
    metrics: list[str] | None,
) -> str:
    """cProfile of one ragmeter evaluation, every Python thread included: scoring runs in a
    thread of its own (``runner.background``), which a profiler of the main thread alone does
    not see. The main thread (querying, run file) and the other threads (scoring, store) are
    printed apart, then together."""
    thread_profiles: list[cProfile.Profile] = []

    def start_thread_profile(*_: Any) -> None:
        sys.setprofile(None)
        profile = cProfile.Profile()
        thread_profiles.append(profile)
        profile.enable()

    main_profile = cProfile.Profile()
    threading.setprofile(start_thread_profile)
    try:
        main_profile.enable()
        run_ragmeter(url, raw_cases, concurrency, workdir, metrics)
        main_profile.disable()
    finally:
        threading.setprofile(None)  # type: ignore[arg-type]
    out = io.StringIO()
    out.write("=== main thread (querying, storing responses, run file) ===\n")
    stats = pstats.Stats(main_profile, stream=out)
    stats.sort_stats("tottime").print_stats(15)
    stats.sort_stats("cumulative").print_stats(20)
    if thread_profiles:
        out.write("=== other threads (scoring, aggregation, storing scores) ===\n")
        others = pstats.Stats(thread_profiles[0], stream=out)
        for profile in thread_profiles[1:]:
            others.add(profile)
        others.sort_stats("tottime").print_stats(25)
        others.sort_stats("cumulative").print_stats(35)
    return out.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="Also cProfile one ragmeter evaluation and print the top functions.",
    )
    parser.add_argument(
        "--metrics",
        help="Comma-separated metric families (default: ragmeter's default offline set).",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(args.port))
        return 0

    raw_cases = make_cases(args.cases)
    families = [m.strip() for m in args.metrics.split(",")] if args.metrics else None
    server, url = start_server_process()
    try:
        with tempfile.TemporaryDirectory(prefix="ragmeter-bench-") as tmp:
            workdir = Path(tmp)
            # warm-up: imports, first connections, page cache
            run_bare(url, raw_cases[:200], args.concurrency)
            run_ragmeter(url, raw_cases[:200], args.concurrency, workdir, families)
            bare: list[float] = []
            ours: list[float] = []
            ours_query: list[float] = []
            for round_ in range(1, args.repeat + 1):
                b = run_bare(url, raw_cases, args.concurrency)
                r, q = run_ragmeter(url, raw_cases, args.concurrency, workdir, families)
                bare.append(args.cases / b)
                ours.append(args.cases / r)
                ours_query.append(args.cases / q)
                print(
                    f"round {round_}: bare httpx {args.cases / b:8.1f} cases/s · ragmeter "
                    f"{args.cases / r:8.1f} cases/s end to end ({args.cases / q:8.1f} cases/s "
                    f"to the last answer; scoring+store+report {r - q:.2f} s)",
                    flush=True,
                )
            bare_median = statistics.median(bare)
            ours_median = statistics.median(ours)
            print()
            print(
                f"cases={args.cases} concurrency={args.concurrency} repeat={args.repeat} "
                f"(medians; server: asyncio no-op in a separate process)"
            )
            print(f"bare httpx:        {bare_median:8.1f} cases/s")
            print(
                f"ragmeter evaluate: {ours_median:8.1f} cases/s "
                f"(query stage alone {statistics.median(ours_query):8.1f} cases/s)"
            )
            ratio = ours_median / bare_median
            print(
                f"ratio ragmeter/bare: {ratio:.2f} (target >= 0.5) -> "
                f"{'OK' if ratio >= 0.5 else 'BELOW TARGET'}"
            )

            if args.profile:
                print(profile_one(url, raw_cases, args.concurrency, workdir, families))
    finally:
        server.kill()
        server.wait(timeout=5)
    return 0


if __name__ == "__main__":
    sys.exit(main())

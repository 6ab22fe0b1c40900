"""Speed on two oversized inputs whose tests only check the outcome (issue 28 moved the timing
here: a test must not depend on the machine's speed).

1. ``keyword_coverage`` on a long answer (``"switzerland " * N`` words against a two-keyword
   reference, as ``tests/metrics/test_offline.py`` scores it) through ``score_case``. The peer
   is the plain-Python reading of the same metric (lower-case, split on non-word characters,
   set membership), so the ratio is ragmeter's overhead over the bare job. ragmeter's text caches
   are cleared before each of its timings. Sizes 2,000 / 20,000 /
   200,000 words: a linear cost keeps the ratio flat, a quadratic one does not.
2. The numbers of a long reply (``"7 and seven, " * N``: N digits and N number words) through
   ``extract_numbers`` (grounding's number check reads every answer and chunk this way), against
   ``re.findall`` of the digits alone as the peer. Reading them was quadratic in their count
   until issue 28 (8,000 numbers: 6 s); the ratio must stay flat as N grows.
3. An HTTP reply of 20 MB (sent in 1 MB chunks, no Content-Length) against the default limit of
   10,000,000 bytes (``tests/targets/test_misbehaving.py``). ragmeter's ``HttpTarget`` refuses it
   (``invalid_response``); the peer is a bare ``httpx`` client streaming the same reply and
   stopping at the same limit. One local server, pairs interleaved (ragmeter, peer, ragmeter,
   ...), medians of ``--repeat`` pairs.

The load average is printed beside every figure: other jobs on the machine slow the wall clock.

    python bench/edge_inputs.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from offline_metrics import clear_text_caches  # bench/ is on sys.path when the script runs
from ragmeter.config import TargetConfig
from ragmeter.metrics import MetricSettings, resolve_metrics, score_case
from ragmeter.metrics.numbers import extract_numbers
from ragmeter.models import Case, CaseResult, Response
from ragmeter.targets.base import TargetError
from ragmeter.targets.http import HttpTarget

REFERENCE = "Zürich is in Switzerland"
LIMIT_BYTES = 10_000_000
CHUNK = b"x" * 1_000_000


def keyword_metric() -> Any:
    metrics = resolve_metrics(["lexical"], MetricSettings())
    (metric,) = [m for m in metrics if m.name == "keyword_coverage"]
    return metric


def ragmeter_keyword_coverage(metric: Any, answer: str) -> float | None:
    case = Case(case_id="c", question="q", reference_answer=REFERENCE)
    result = CaseResult(case_id="c", status="ok", response=Response(answer=answer))
    return score_case(metric, case, result).value


def plain_keyword_coverage(answer: str) -> float:
    keywords = {"zürich", "switzerland"}
    words = set(re.findall(r"\w+", answer.lower()))
    return len(keywords & words) / len(keywords)


def timed(call: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    value = call()
    return time.perf_counter() - started, value


def bench_keywords(repeat: int) -> None:
    metric = keyword_metric()
    print("keyword_coverage on a long answer (median of pairs, interleaved)")
    for words in (2_000, 20_000, 200_000):
        answer = "switzerland " * words
        ours: list[float] = []
        peers: list[float] = []
        for _ in range(repeat):
            clear_text_caches()  # ragmeter keeps a text's keywords for the process
            seconds, value = timed(lambda text=answer: ragmeter_keyword_coverage(metric, text))
            ours.append(seconds)
            peer_seconds, peer_value = timed(lambda text=answer: plain_keyword_coverage(text))
            peers.append(peer_seconds)
            assert value == peer_value == 0.5, (value, peer_value)
        mine, theirs = statistics.median(ours), statistics.median(peers)
        print(
            f"  {words:>7,} words: ragmeter {mine * 1000:8.1f} ms, plain Python "
            f"{theirs * 1000:7.1f} ms, ratio {mine / theirs:5.1f}x; load {os.getloadavg()[0]:.1f}"
        )


def bench_numbers(repeat: int) -> None:
    print("numbers of a long reply (median of pairs, interleaved)")
    for count in (2_000, 20_000, 100_000):
        text = "7 and seven, " * count
        ours: list[float] = []
        peers: list[float] = []
        for _ in range(repeat):
            clear_text_caches()
            seconds, found = timed(lambda text=text: extract_numbers(text))
            ours.append(seconds)
            peer_seconds, digits = timed(lambda text=text: re.findall(r"\d+", text))
            peers.append(peer_seconds)
            assert len(found) == 2 * count and len(digits) == count
        mine, theirs = statistics.median(ours), statistics.median(peers)
        print(
            f"  {count:>7,} x2 numbers: ragmeter {mine * 1000:8.1f} ms, re.findall "
            f"{theirs * 1000:7.1f} ms, ratio {mine / theirs:5.1f}x; load {os.getloadavg()[0]:.1f}"
        )


class HugeReplyServer:
    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    self.wfile.write(b'{"answer": "')
                    for _ in range(20):
                        self.wfile.write(CHUNK)
                    self.wfile.write(b'"}')
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_POST = _reply

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


async def ragmeter_refuses(url: str) -> str:
    target = HttpTarget(TargetConfig(kind="http", url=url, info_path=None, max_retries=0))
    try:
        await target.query(Case(case_id="c1", question="What is the leave policy?"))
    except TargetError as error:
        return error.error_type
    finally:
        await target.aclose()
    raise AssertionError("a 20 MB reply was accepted")


async def httpx_stops_at_limit(url: str) -> str:
    async with (
        httpx.AsyncClient() as client,
        client.stream("POST", url, json={"question": "q"}) as reply,
    ):
        read = 0
        async for part in reply.aiter_bytes():
            read += len(part)
            if read > LIMIT_BYTES:
                return "invalid_response"
    raise AssertionError("the reply ended under the limit")


def bench_huge_reply(repeat: int) -> None:
    server = HugeReplyServer()
    url = server.url
    try:
        ours: list[float] = []
        peers: list[float] = []
        for _ in range(repeat):
            seconds, outcome = timed(lambda: asyncio.run(ragmeter_refuses(url)))
            ours.append(seconds)
            peer_seconds, peer_outcome = timed(lambda: asyncio.run(httpx_stops_at_limit(url)))
            peers.append(peer_seconds)
            assert outcome == peer_outcome == "invalid_response", (outcome, peer_outcome)
    finally:
        server.stop()
    mine, theirs = statistics.median(ours), statistics.median(peers)
    print("a 20 MB reply against the 10,000,000-byte limit (median of pairs, interleaved)")
    print(
        f"  ragmeter refuses it in {mine * 1000:.0f} ms, bare httpx stops at the limit in "
        f"{theirs * 1000:.0f} ms, ratio {mine / theirs:.2f}x; load {os.getloadavg()[0]:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    bench_keywords(options.repeat)
    bench_numbers(options.repeat)
    bench_huge_reply(options.repeat)


if __name__ == "__main__":
    main()

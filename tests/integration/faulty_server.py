"""A scripted, misbehaving RAG server for fault-injection tests.

It speaks the same contract as ``ragmeter reference-server``: ``POST /query`` answers
``{"answer", "retrieved": [{"id", "doc_id", "rank", "score", "text"}], "citations": [],
"abstained": false}``, ``GET /health`` is 200 and ``GET /models/info`` describes the server.

What a query gets depends on a keyword in its question (or its ``case_id``, when the request
template sends one):

- ``FAIL500``  always HTTP 500
- ``GARBAGE``  HTTP 200 with a body that is not JSON
- ``HANG``     sleeps ``hang_s`` seconds (longer than the client's timeout), then answers
- ``FLAKY``    HTTP 500 the first time that question is asked, a valid answer afterwards
- ``RATE``     HTTP 429 with ``Retry-After: 0`` the first time, a valid answer afterwards
- anything else: a valid answer

Server-wide modes:

- ``delay_s`` (mode ``slow``): every answer is delayed (default 50 ms in slow mode)
- ``die_after=N`` (mode ``die``): the first N ``POST /query`` requests are served; then the
  listening socket is closed and every later request, including ones on kept-alive
  connections, is dropped without a response (clients see connection errors)
- ``hold_after=N``: the first N ``POST /query`` requests are answered; every later one waits
  until ``release()`` (or ``stop()``), so a test can signal a run that is surely still asking

In-process use::

    server = FaultyServer(delay_s=0.05).start()   # serves in a daemon thread
    server.url                                    # http://127.0.0.1:PORT
    server.stop()

As a subprocess::

    python tests/integration/faulty_server.py --port 0 --mode slow [--delay 0.05]

prints ``PORT`` on the first line of stdout once it listens, then serves until killed.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KEYWORDS = ("FAIL500", "GARBAGE", "HANG", "FLAKY", "RATE")


def answer_payload(question: str) -> dict[str, Any]:
    return {
        "answer": f"An answer to: {question}",
        "retrieved": [
            {
                "id": "doc-a#0",
                "doc_id": "doc-a",
                "rank": 1,
                "score": 0.9,
                "text": "Some retrieved text about the question.",
            },
            {
                "id": "doc-b#0",
                "doc_id": "doc-b",
                "rank": 2,
                "score": 0.5,
                "text": "Some less relevant text.",
            },
        ],
        "citations": [],
        "abstained": False,
    }


class FaultyServer:
    """A ThreadingHTTPServer with scripted faults; see the module docstring."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        delay_s: float = 0.0,
        hang_s: float = 5.0,
        die_after: int | None = None,
        hold_after: int | None = None,
    ) -> None:
        self.delay_s = delay_s
        self.hang_s = hang_s
        self.die_after = die_after
        self.hold_after = hold_after
        self.released = threading.Event()  # set: held requests go on
        self.lock = threading.Lock()
        self.stopping = threading.Event()  # wakes sleeping handlers at stop()
        self.query_count = 0  # POST /query requests received
        self.seen: Counter[str] = Counter()  # requests per question key
        self.dead = False
        self._thread: threading.Thread | None = None
        self._serving = False
        self._closed = False
        self.httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self.httpd.daemon_threads = True

    # lifecycle ---------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def serve_forever(self) -> None:
        self._serving = True
        try:
            self.httpd.serve_forever(poll_interval=0.05)
        finally:
            self._serving = False

    def start(self) -> FaultyServer:
        """Serve in a daemon thread; returns self."""
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._serving = True
        self._thread.start()
        return self

    def _close_listener(self) -> None:
        with self.lock:
            if self._closed:
                return
            self._closed = True
        if self._serving:
            self.httpd.shutdown()  # waits for the serve_forever loop to exit
        self.httpd.server_close()

    def release(self) -> None:
        """Let the requests held by ``hold_after`` (and every later one) be answered."""
        self.released.set()

    def stop(self) -> None:
        self.stopping.set()
        self.released.set()
        self._close_listener()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FaultyServer:
        return self.start()

    def __exit__(self, *_: Any) -> None:
        self.stop()

    def requests_for(self, question: str, case_id: str = "") -> int:
        """How many POST /query requests this question received."""
        with self.lock:
            return self.seen[f"{case_id}|{question}"]

    # request handling ----------------------------------------------------------------------------
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _send(
                self,
                status: int,
                body: bytes,
                content_type: str = "application/json",
                headers: dict[str, str] | None = None,
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    self.close_connection = True

            def _send_json(
                self, status: int, payload: Any, headers: dict[str, str] | None = None
            ) -> None:
                self._send(status, json.dumps(payload).encode("utf-8"), headers=headers)

            def do_GET(self) -> None:
                if server.dead:
                    self.close_connection = True
                    return
                if self.path == "/health":
                    self._send_json(200, {"status": "ok"})
                elif self.path == "/models/info":
                    self._send_json(200, {"name": "faulty-server", "delay_s": server.delay_s})
                else:
                    self._send_json(404, {"error": f"no route {self.path}"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path != "/query":
                    self._send_json(404, {"error": f"no route {self.path}"})
                    return
                with server.lock:
                    server.query_count += 1
                    number = server.query_count
                    dying = server.die_after is not None and number > server.die_after
                if server.dead or dying:
                    # Drop the request with no response: the client sees a disconnect.
                    self.close_connection = True
                    return
                try:
                    body = json.loads(raw or b"{}")
                    question = str(body["question"])
                except (ValueError, KeyError, TypeError) as exc:
                    self._send_json(400, {"error": f"bad request: {exc}"})
                    return
                key = f"{body.get('case_id', '')}|{question}"
                if server.hold_after is not None and number > server.hold_after:
                    server.released.wait()
                    if server.stopping.is_set():
                        self.close_connection = True
                        return
                with server.lock:
                    server.seen[key] += 1
                    times_seen = server.seen[key]
                self._answer(key, question, times_seen)
                if server.die_after is not None and number == server.die_after:
                    server.dead = True
                    self.close_connection = True
                    threading.Thread(target=server._close_listener, daemon=True).start()

            def _answer(self, key: str, question: str, times_seen: int) -> None:
                if server.delay_s:
                    server.stopping.wait(server.delay_s)
                if "FAIL500" in key:
                    self._send_json(500, {"error": "scripted failure"})
                elif "GARBAGE" in key:
                    self._send(200, b"<html>this is not json", content_type="text/html")
                elif "HANG" in key:
                    server.stopping.wait(server.hang_s)
                    self._send_json(200, answer_payload(question))
                elif "FLAKY" in key and times_seen == 1:
                    self._send_json(500, {"error": "flaky failure"})
                elif "RATE" in key and times_seen == 1:
                    self._send_json(429, {"error": "slow down"}, headers={"Retry-After": "0"})
                else:
                    self._send_json(200, answer_payload(question))

        return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--mode", choices=["scripted", "slow", "die"], default="scripted")
    parser.add_argument(
        "--delay",
        type=float,
        default=None,
        help="Seconds every answer is delayed (default 0.05 in slow mode).",
    )
    parser.add_argument("--hang", type=float, default=5.0, help="Seconds a HANG question sleeps.")
    parser.add_argument("--die-after", type=int, default=10, help="Requests served in die mode.")
    args = parser.parse_args(argv)
    delay = args.delay if args.delay is not None else (0.05 if args.mode == "slow" else 0.0)
    server = FaultyServer(
        args.host,
        args.port,
        delay_s=delay,
        hang_s=args.hang,
        die_after=args.die_after if args.mode == "die" else None,
    )
    print(server.port, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stopping.set()
        server._close_listener()
    return 0


if __name__ == "__main__":
    sys.exit(main())

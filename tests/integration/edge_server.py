"""A scripted RAG server and LLM judge that send every kind of bad reply a real one might.

``POST /query`` picks its reply by a keyword in the question (see ``REPLIES``); ``GET /health``
is 200 unless ``health`` is off; ``GET /models/info`` leaks secrets (a well-meaning server that
describes its own config); ``GET /v1/models`` answers for the judge's pre-flight and
``POST /v1/chat/completions`` never answers (a hung judge) unless ``judge_hang_s`` is 0, when it
returns an empty JSON object (an invalid verdict).

Every request's headers are kept in ``seen_headers`` so a test can check that credentials were
sent even though they are never stored.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ESCAPES = (
    "\x1b[2J\x1b[H\x1b]0;pwned title\x07\x1b]8;;http://evil.example/x\x1b\\click me\x1b]8;;\x1b\\"
    "[link=http://evil.example/x]Click to fix your API key[/link] [red]alarm[/red]"
)
LEAKED_INFO = {
    "name": "edge-server",
    "api_key": "sk-live-SECRETSECRET123",
    "db": {"password": "hunter2hunter2", "host": "db.internal"},
}


def good_answer(question: str) -> dict[str, Any]:
    return {
        "answer": f"The answer to {question} is in the handbook.",
        "retrieved": [
            {"id": "handbook#1", "doc_id": "handbook", "text": "The handbook says it."},
            {"id": "other#1", "doc_id": "other", "text": "Something else."},
        ],
        "citations": [{"chunk_id": "handbook#1"}],
    }


def _raw(body: str) -> bytes:
    return body.encode("utf-8")


# keyword -> (status, body bytes, extra headers); the first keyword found in the question wins
def reply_for(keyword: str, question: str, times_seen: int) -> tuple[int, bytes, dict[str, str]]:
    good = good_answer(question)
    if keyword == "NAN":
        return 200, _raw('{"answer": "x", "latency_ms": {"generate": NaN}}'), {}
    if keyword == "NANSTR":
        return 200, _raw('{"answer": "x", "latency_ms": {"generate": "NaN"}}'), {}
    if keyword == "INFINITY":
        return 200, _raw('{"answer": "x", "confidence": Infinity}'), {}
    if keyword == "NEGLAT":
        return 200, _raw('{"answer": "x", "latency_ms": {"retrieve": -5}}'), {}
    if keyword == "NEGCOST":
        return 200, _raw('{"answer": "x", "usage": {"cost_usd": -1.0}}'), {}
    if keyword == "NANGUARD":
        return 200, _raw('{"answer": "x", "guardrail_scores": {"injection": NaN}}'), {}
    if keyword == "ESCAPES":
        return 500, _raw(f"upstream failed: {ESCAPES}"), {}
    if keyword == "REDIRECT":
        return 302, b"", {"Location": "http://127.0.0.1:9/elsewhere"}
    if keyword == "HUGE":
        return 200, json.dumps({"answer": "x" * 10_500_000}).encode(), {}
    if keyword == "RETRYNAN" and times_seen == 1:
        return 429, _raw('{"error": "slow down"}'), {"Retry-After": "nan"}
    if keyword == "ANSWERONLY":
        return 200, json.dumps({"answer": f"Only an answer to {question}"}).encode(), {}
    if keyword == "STRCITES":
        good["citations"] = ["handbook#1"]
        return 200, json.dumps(good).encode(), {}
    if keyword == "SURROGATE":  # lone surrogates as JSON escapes: valid JSON, not valid Unicode
        body = (
            '{"answer": "27 days \\ud800 of leave", "retrieved": [{"id": "handbook#1", '
            '"text": "Leave is 27 days \\udcff a year."}], "citations": ["handbook#1"]}'
        )
        return 200, body.encode(), {}
    if keyword == "WRONGKEY":  # a server whose answer field is not mapped
        return 200, json.dumps({"response": "27 days", "sources": []}).encode(), {}
    if keyword == "ECHOAUTH":
        return 401, b"", {}  # body filled in by the handler with the credentials it got
    return 200, json.dumps(good).encode(), {}


KEYWORDS = (
    "RETRYNAN",
    "NANSTR",
    "NANGUARD",
    "NAN",
    "INFINITY",
    "NEGLAT",
    "NEGCOST",
    "ESCAPES",
    "REDIRECT",
    "HUGE",
    "ANSWERONLY",
    "STRCITES",
    "ECHOAUTH",
    "WRONGKEY",
    "SURROGATE",
)


class EdgeServer:
    def __init__(self, *, health: bool = True, judge_hang_s: float = 30.0) -> None:
        self.health = health
        self.judge_hang_s = judge_hang_s
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.seen: Counter[str] = Counter()
        self.judge_requests = 0
        self.seen_headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=lambda: self.httpd.serve_forever(poll_interval=0.05), daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> EdgeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> EdgeServer:
        return self.start()

    def __exit__(self, *_: Any) -> None:
        self.stop()

    def queries(self) -> int:
        with self.lock:
            return sum(self.seen.values())

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            def do_GET(self) -> None:
                with server.lock:
                    server.seen_headers.append(dict(self.headers.items()))
                    server.paths.append(self.path)
                bare = self.path.partition("?")[0]
                if bare == "/health" and server.health:
                    self._send(200, b'{"status": "ok"}', {})
                elif bare == "/models/info":
                    self._send(200, json.dumps(LEAKED_INFO).encode(), {})
                elif bare == "/v1/models":
                    self._send(200, b'{"data": [{"id": "judge-model"}]}', {})
                else:
                    self._send(404, b'{"error": "no route"}', {})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server.lock:
                    server.seen_headers.append(dict(self.headers.items()))
                    server.paths.append(self.path)
                if self.path.endswith("/chat/completions"):
                    with server.lock:
                        server.judge_requests += 1
                    if server.judge_hang_s:
                        server.stopping.wait(server.judge_hang_s)
                        self.close_connection = True
                        return
                    self._send(200, b"{}", {})
                    return
                question = str(json.loads(raw or b"{}").get("question", ""))
                with server.lock:
                    server.seen[question] += 1
                    times_seen = server.seen[question]
                keyword = next((k for k in KEYWORDS if k in question), "")
                status, body, headers = reply_for(keyword, question, times_seen)
                if keyword == "ECHOAUTH":
                    body = json.dumps(
                        {"error": f"bad credentials {self.headers.get('Authorization')}"}
                    ).encode()
                self._send(status, body, headers)

        return Handler

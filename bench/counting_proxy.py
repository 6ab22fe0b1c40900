"""A counting HTTP proxy for OpenAI-compatible servers (bench only).

Listens on 127.0.0.1 (a free port unless given) and forwards every request to the upstream
server. The first path segment before ``/v1`` is a tag naming who sent the request, so several
clients (or phases) can share one upstream and still be counted apart:

    http://127.0.0.1:PORT/ragas.faithfulness/v1/chat/completions  -> UPSTREAM/v1/chat/completions
    http://127.0.0.1:PORT/v1/models                                -> tag "untagged"

Per tag it counts requests, HTTP statuses, the ``usage`` of each reply (``prompt_tokens``,
``completion_tokens``; a reply without usage is counted in ``no_usage``, never guessed),
``finish_reason``s, the ``n`` asked for, and the seconds spent upstream. Nothing is cached or
changed: the body and status go back to the client as the upstream sent them.

Used in-process by ``bench/judge_cost.py`` (``CountingProxy``), or on its own:

    python bench/counting_proxy.py --upstream http://127.0.0.1:8080 [--port 0]

prints the counters as JSON on Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

HOP_HEADERS = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
    "accept-encoding",
    "content-encoding",
}


@dataclass
class TagCounts:
    requests: int = 0
    chat_requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    no_usage: int = 0  # replies (2xx) without a usage block
    seconds: float = 0.0
    statuses: Counter[int] = field(default_factory=Counter)
    finish_reasons: Counter[str] = field(default_factory=Counter)
    paths: Counter[str] = field(default_factory=Counter)
    n_requested: Counter[int] = field(default_factory=Counter)  # the 'n' of chat requests
    transport_errors: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "chat_requests": self.chat_requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "no_usage": self.no_usage,
            "seconds": round(self.seconds, 3),
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "finish_reasons": dict(self.finish_reasons),
            "paths": dict(self.paths),
            "n_requested": {str(k): v for k, v in sorted(self.n_requested.items())},
            "transport_errors": self.transport_errors,
        }


def split_tag(path: str) -> tuple[str, str]:
    """``/TAG/v1/x`` -> (TAG, ``/v1/x``); ``/v1/x`` -> ("untagged", ``/v1/x``)."""
    if path.startswith("/v1/") or path == "/v1":
        return "untagged", path
    head, sep, rest = path.lstrip("/").partition("/")
    if sep and (rest.startswith("v1/") or rest == "v1"):
        return head, "/" + rest
    return "untagged", path


def usage_of(body: bytes, content_type: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The usage block and finish reasons of a chat/completions reply (JSON or SSE)."""
    payloads: list[Any] = []
    if "text/event-stream" in content_type:
        for line in body.decode("utf-8", "replace").splitlines():
            if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
                with contextlib.suppress(ValueError):
                    payloads.append(json.loads(line[5:]))
    else:
        try:
            payloads.append(json.loads(body))
        except ValueError:
            return None, []
    usage = None
    reasons: list[str] = []
    for payload in payloads:
        if not isinstance(payload, dict):
            continue
        if isinstance(payload.get("usage"), dict):
            usage = payload["usage"]
        for choice in payload.get("choices") or []:
            if isinstance(choice, dict) and choice.get("finish_reason"):
                reasons.append(str(choice["finish_reason"]))
    return usage, reasons


class CountingProxy:
    """The proxy in a background thread: ``with CountingProxy(upstream) as proxy: proxy.url``."""

    def __init__(self, upstream: str, port: int = 0, timeout_s: float = 1800.0) -> None:
        self.upstream = upstream.rstrip("/")
        self._lock = threading.Lock()
        self._counts: dict[str, TagCounts] = {}
        self._client = httpx.Client(timeout=timeout_s)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_GET(self) -> None:
                proxy._forward(self, "GET")

            def do_POST(self) -> None:
                proxy._forward(self, "POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def base_url(self, tag: str) -> str:
        """The OpenAI base URL (ending in /v1) whose requests are counted under ``tag``."""
        if "/" in tag or not tag:
            raise ValueError(f"bad tag {tag!r}")
        return f"{self.url}/{tag}/v1"

    def start(self) -> CountingProxy:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def __enter__(self) -> CountingProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def counts(self, tag: str) -> TagCounts:
        with self._lock:
            return self._counts.setdefault(tag, TagCounts())

    def snapshot(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {tag: c.as_dict() for tag, c in sorted(self._counts.items())}

    def _forward(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        tag, path = split_tag(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_HEADERS}
        chat = path.rstrip("/").endswith("/chat/completions")
        n = 1
        if chat and body:
            try:
                n = int(json.loads(body).get("n") or 1)
            except (ValueError, AttributeError, TypeError):
                n = 1
        started = time.perf_counter()
        try:
            reply = self._client.request(
                method, self.upstream + path, content=body, headers=headers
            )
            status, content = reply.status_code, reply.content
            content_type = reply.headers.get("content-type", "application/json")
        except httpx.HTTPError as exc:
            status, content = 502, json.dumps({"error": f"proxy: {exc!r}"}).encode()
            content_type = "application/json"
            reply = None
        elapsed = time.perf_counter() - started
        usage, reasons = usage_of(content, content_type) if chat else (None, [])
        with self._lock:
            c = self._counts.setdefault(tag, TagCounts())
            c.requests += 1
            c.paths[path] += 1
            c.statuses[status] += 1
            c.seconds += elapsed
            if reply is None:
                c.transport_errors += 1
            if chat:
                c.chat_requests += 1
                c.n_requested[n] += 1
                c.finish_reasons.update(reasons)
                if usage is not None:
                    c.prompt_tokens += int(usage.get("prompt_tokens") or 0)
                    c.completion_tokens += int(usage.get("completion_tokens") or 0)
                elif 200 <= status < 300:
                    c.no_usage += 1
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(content)))
            handler.end_headers()
            handler.wfile.write(content)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): the request still counted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--upstream", required=True, help="e.g. http://127.0.0.1:8080")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with CountingProxy(args.upstream, args.port) as proxy:
        print(f"counting proxy on {proxy.url} -> {proxy.upstream}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            print(json.dumps(proxy.snapshot(), indent=2))


if __name__ == "__main__":
    main()

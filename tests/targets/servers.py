"""A scripted HTTP server on 127.0.0.1 for the target tests: each request is recorded and
answered by a script (a function of the request), or by the default replies."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


# status, headers, body: bytes are sent with a Content-Length (unless the headers set one), an
# iterable of chunks is sent close-delimited (no Content-Length), chunk by chunk
Reply = tuple[int, dict[str, str], bytes | Iterable[bytes]]
Script = Callable[[Request], Reply | None]


class Server:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[Request] = []
        self.release = threading.Event()  # wakes handlers that wait (set at stop)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(
                    self.command, self.path, dict(self.headers.items()), self.rfile.read(length)
                )
                server.requests.append(request)
                reply = server.script(request) or server.default(request)
                status, headers, body = reply
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                if isinstance(body, bytes):
                    if "Content-Length" not in headers:
                        self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    chunks: Iterable[bytes] = [body]
                else:
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.close_connection = True
                    chunks = body
                try:
                    for chunk in chunks:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            do_GET = do_POST = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @staticmethod
    def default(request: Request) -> Reply:
        if request.method == "GET" and request.path == "/health":
            return 200, {}, b'{"status": "ok"}'
        if request.method == "GET":
            return 404, {}, b"{}"
        return 200, {"Content-Type": "application/json"}, b'{"answer": "fine"}'

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def posts(self) -> list[Request]:
        return [r for r in self.requests if r.method == "POST"]

    def stop(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Script], Server]]:
    servers: list[Server] = []

    def start(script: Script) -> Server:
        server = Server(script)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def json_reply(payload: Any) -> Reply:
    return 200, {"Content-Type": "application/json"}, json.dumps(payload).encode()


def on_post(reply: Callable[[Request], Reply]) -> Script:
    return lambda request: reply(request) if request.method == "POST" else None

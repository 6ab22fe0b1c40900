"""``ragmeter reference-server``: the reference pipeline over HTTP (POST /query, GET /health,
GET /models/info, GET /index/stats), on the standard library's threading HTTP server."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ragmeter.targets.reference.pipeline import ReferencePipeline


def make_handler(pipeline: ReferencePipeline) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return None

        def _send(self, status: int, payload: Any) -> None:
            body = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, {"status": "ok"})
            elif self.path == "/models/info":
                self._send(200, pipeline.info())
            elif self.path == "/index/stats":
                from ragmeter.targets.reference.index_stats import reference_index_stats

                self._send(200, reference_index_stats(pipeline))
            else:
                self._send(404, {"error": f"no route {self.path}"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path != "/query":
                self._send(404, {"error": f"no route {self.path}"})
                return
            try:
                body = json.loads(raw or b"{}")
                question = body["question"]
                if not isinstance(question, str) or not question.strip():
                    raise ValueError("'question' must be a non-empty string")
                top_k = int(body.get("top_k") or pipeline.settings.top_k)
            except (ValueError, KeyError, TypeError) as exc:
                self._send(400, {"error": f"bad request: {exc}"})
                return
            self._send(200, pipeline.answer(question, top_k))

    return Handler


def make_server(
    pipeline: ReferencePipeline, host: str = "127.0.0.1", port: int = 8000
) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, port), make_handler(pipeline))
    server.daemon_threads = True
    return server


def serve_in_thread(server: ThreadingHTTPServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return thread

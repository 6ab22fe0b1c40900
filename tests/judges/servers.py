"""A scripted OpenAI-compatible judge server on 127.0.0.1 for the judge tests (real sockets,
no model), the completion reply it sends and a script that answers every judged prompt."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, dict[str, str], Any]  # status, headers, JSON body (or str)
Script = Callable[[dict[str, Any]], Reply]
GENERATED = ("What is the capital of France?", "Which city is the capital?", "How big is Paris?")


class JudgeServer:
    """A threaded HTTP server whose replies come from a script; it keeps every request body."""

    def __init__(self, script: Script, delay_s: float = 0.0) -> None:
        self.script = script
        self.delay_s = delay_s  # each reply waits this long (or until the server closes)
        self.closing = threading.Event()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                outer.headers.append(dict(self.headers))
                if outer.delay_s:
                    outer.closing.wait(outer.delay_s)
                status, headers, payload = outer.script(body)
                data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                try:
                    self.send_response(status)
                    for key, value in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def completion(content: str, finish: str = "stop", **message: Any) -> Reply:
    body = {
        "choices": [
            {
                "message": {"role": "assistant", "content": content, **message},
                "finish_reason": finish,
            }
        ],
        "usage": {"prompt_tokens": 500, "completion_tokens": 500},
    }
    return 200, {}, body


def smart_judge(body: dict[str, Any]) -> Reply:
    """Valid answers for every judged prompt, recognised by its system message."""
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    n_contexts = len(re.findall(r'<context index="\d+">', user))
    n_claims = len(re.findall(r'<claim index="\d+">', user))
    # a quote the passages hold: the first words of the first context shown
    first = re.search(r'<context index="1">\n(.*?)\n</context>', user, re.S)
    quote = " ".join(first.group(1).split()[:6]) if first else ""
    if "extract factual claims" in system:
        out: dict[str, Any] = {"claims": ["Claim one.", "Claim two."]}
    elif "check claims" in system:
        out = {
            "verdicts": [
                {"index": i, "verdict": i % 2, "quote": quote if i % 2 else ""}
                for i in range(1, n_claims + 1)
            ]
        }
    elif "addresses its question" in system:
        out = {"reasoning": "on topic", "score": 0.75}
    elif "write the questions" in system:
        out = {"questions": list(GENERATED), "noncommittal": False}
    elif "factual accuracy evaluator" in system:
        out = {
            "correctness": {"reasoning": "ok", "score": 90},
            "completeness": {"reasoning": "gaps", "score": 60},
            "consistency": {"reasoning": "ok", "score": 100},
        }
    elif "compare the statements" in system:
        out = {"tp": ["Paris."], "fp": ["2.1 million."], "fn": []}
    elif "declines to answer" in system:
        out = {"reasoning": "answers", "abstained": False}
    elif "retrieved passages for a question" in system:
        out = {
            "verdicts": [{"index": i, "relevant": i in (1, 3)} for i in range(1, n_contexts + 1)]
        }
    elif "facts of a reference answer" in system:
        out = {
            "statements": [
                {"statement": "A.", "attributed": True, "context_index": 1},
                {"statement": "B.", "attributed": False, "context_index": None},
            ]
        }
    elif "grounded in retrieved context" in system and '"quote"' in user:
        supported = [{"claim": "A", "quote": quote}]
        out = {"supported_claims": supported, "unsupported_claims": ["B"], "score": 3}
    elif "grounded in retrieved context" in system:
        out = {"supported_claims": ["A"], "unsupported_claims": ["B"], "score": 3}
    elif "correctly answers" in system:
        out = {"reasoning": "fine", "score": 4}
    else:
        out = {"reasoning": "ok", "label": "CORRECT"}
    return completion(json.dumps(out))

"""The HTTP target against small real servers on 127.0.0.1: template, mapping, retries, secrets."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ragmeter.config import EvalConfig, TargetConfig
from ragmeter.models import Case
from ragmeter.runner.run import evaluate
from ragmeter.targets.http import apply_mapping, render_template

Reply = tuple[int, dict[str, str], bytes]


@pytest.fixture
def scripted_server() -> Iterator[
    Callable[[Callable[[dict[str, Any], dict[str, str]], Reply]], str]
]:
    servers: list[ThreadingHTTPServer] = []

    def start(script: Callable[[dict[str, Any], dict[str, str]], Reply]) -> str:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, headers: dict[str, str], body: bytes) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path == "/health":
                    self._reply(200, {}, b'{"status": "ok"}')
                else:
                    self._reply(404, {}, b"{}")

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self._reply(*script(body, dict(self.headers.items())))

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def ok(payload: dict[str, Any]) -> Reply:
    return 200, {"Content-Type": "application/json"}, json.dumps(payload).encode()


def test_render_template_keeps_types_and_fills_strings() -> None:
    template = {"q": "{question}", "k": "{top_k}", "meta": ["id={case_id}", "{unknown}"]}
    assert render_template(template, {"question": "why?", "top_k": 3, "case_id": "c1"}) == {
        "q": "why?",
        "k": 3,
        "meta": ["id=c1", "{unknown}"],
    }


def test_apply_mapping_reads_dotted_paths_and_item_fields() -> None:
    body = {
        "data": {"text": "hi", "sources": [{"content": "ctx", "chunk_id": "a#b", "doc": "a"}]},
        "flags": ["x"],
    }
    fields = apply_mapping(
        body,
        {
            "answer": "data.text",
            "retrieved": "data.sources",
            "retrieved.text": "content",
            "retrieved.doc_id": "doc",
            "policy_flags": "flags",
        },
    )
    assert fields["answer"] == "hi"
    assert fields["retrieved"][0]["text"] == "ctx" and fields["retrieved"][0]["doc_id"] == "a"
    assert fields["policy_flags"] == ["x"]


def test_run_with_template_mapping_retries_and_redacted_secret(
    scripted_server: Callable[..., str], tmp_path: Path
) -> None:
    calls: dict[str, int] = {}
    seen_auth: list[str] = []
    secret = "sk-test-0123456789abcdefSECRET"

    def script(body: dict[str, Any], headers: dict[str, str]) -> Reply:
        question = body["input"]["text"]
        seen_auth.append(headers.get("Authorization", ""))
        calls[question] = calls.get(question, 0) + 1
        if question == "busy" and calls[question] == 1:
            return 429, {"Retry-After": "0"}, b"slow down"
        if question == "broken":
            return 503, {}, b"down"
        if question == "bad request":
            return 400, {}, b"no"
        return ok(
            {
                "result": {
                    "text": f"answer to {question}",
                    "docs": [{"cid": "d#1", "body": "context", "doc": "d"}],
                },
                "refused": False,
            }
        )

    url = scripted_server(script)
    config = EvalConfig(
        store=str(tmp_path / "r.db"),
        output_dir=str(tmp_path / "out"),
        progress=False,
        metrics=["retrieval", "performance"],
        target=TargetConfig(
            type="http",
            url=url,
            info_path=None,
            max_retries=2,
            backoff_s=0.01,
            headers={"Authorization": f"Bearer {secret}"},
            request_template={"input": {"text": "{question}", "id": "{case_id}"}, "k": "{top_k}"},
            response_mapping={
                "answer": "result.text",
                "retrieved": "result.docs",
                "retrieved.id": "cid",
                "retrieved.text": "body",
                "abstained": "refused",
            },
        ),
    )
    cases = [
        Case(case_id=q.replace(" ", "-"), question=q, gold_passages=[{"chunk_id": "d#1"}])
        for q in ("plain", "busy", "broken", "bad request")
    ]
    outcome = evaluate(config, cases=cases)

    by_id = {r.case_id: r for r in outcome.results}
    assert by_id["plain"].status == "ok" and by_id["plain"].attempts == 1
    assert by_id["plain"].response is not None
    assert by_id["plain"].response.answer == "answer to plain"
    assert by_id["plain"].response.retrieved[0].id == "d#1"
    assert by_id["busy"].status == "ok" and by_id["busy"].attempts == 2
    assert (by_id["broken"].error_type, by_id["broken"].attempts) == ("http_5xx", 3)
    assert calls["broken"] == 3
    assert (by_id["bad-request"].error_type, calls["bad request"]) == ("http_4xx", 1)
    assert outcome.record.error_count == 2
    assert set(seen_auth) == {f"Bearer {secret}"}
    error_rate = outcome.record.scorecard.get("error_rate") if outcome.record.scorecard else None
    assert error_rate is not None and error_rate.value == 0.5

    assert secret not in (tmp_path / "r.db").read_bytes().decode("latin-1")
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret not in path.read_bytes().decode("latin-1"), path


def test_preflight_failure_stops_before_any_run(tmp_path: Path) -> None:
    from ragmeter.store.sqlite import RunStore
    from ragmeter.targets import TargetError

    config = EvalConfig(
        store=str(tmp_path / "r.db"),
        output_dir=str(tmp_path / "out"),
        progress=False,
        target=TargetConfig(type="http", url="http://127.0.0.1:9", timeout_s=1),
    )
    with pytest.raises(TargetError) as error:
        evaluate(config, cases=[Case(case_id="a", question="q")])
    assert error.value.error_type == "preflight_failed"
    assert RunStore(tmp_path / "r.db").list_runs() == []

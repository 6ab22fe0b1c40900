"""Judges at the edges: hung and trickling servers, credentials in a judge URL, keys from the
environment, the pre-flight check. Every server is real, on 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ragmeter import judges
from ragmeter.errors import JudgeConfigError
from ragmeter.judges import build_judge
from ragmeter.judges import preflight as judge_checks
from ragmeter.judges.base import JudgeError
from ragmeter.judges.cache import JudgeStore
from ragmeter.judges.local import LocalLlamaJudge
from ragmeter.judges.openai_compat import OpenAICompatJudge
from ragmeter.judges.reliability import spot_check
from ragmeter.judges.session import JudgeFailure
from ragmeter.metrics import resolve_metrics
from ragmeter.metrics.base import MetricSettings
from ragmeter.models import Case, CaseResult, Response, RetrievedChunk, Score
from ragmeter.redaction import REDACTED, redact_text
from ragmeter.runner.engine import score_results

USER, PASSWORD = "judge-user", "pass-W0rd-x9q"  # the credentials written into judge URLs
VERDICT = {"reasoning": "fine", "score": 4}  # a valid correctness verdict


# --- servers ----------------------------------------------------------------------------------
class HungServer:
    """Accepts every connection, lets the request sit in the socket and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.accepted = 0
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.accepted += 1
            self._held.append(conn)  # held open, never read, never answered

    def connections(self) -> int:
        """How many connections clients made: the ones accepted, and those still in the listen
        queue (however late the accepting thread runs). It accepts none after this."""
        self._stop.set()
        self._thread.join()
        self.sock.setblocking(False)
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # BlockingIOError: the queue is empty
                return self.accepted
            self.accepted += 1
            self._held.append(conn)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for conn in self._held:
            conn.close()
        self.sock.close()


class TrickleServer:
    """Reads a request, sends a 200 head promising a body, then one byte every 0.1 s (for at
    most ``for_s`` seconds, or until closed): no single read ever waits long."""

    def __init__(self, for_s: float = 300.0) -> None:
        self.for_s = for_s
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
            conn.sendall(b"Content-Length: 100000\r\n\r\n")
            deadline = time.monotonic() + self.for_s
            while time.monotonic() < deadline and not self._stop.is_set():
                try:
                    conn.sendall(b" ")
                except OSError:
                    return
                self._stop.wait(0.1)

    def close(self) -> None:
        self._stop.set()
        self.sock.close()


class ScriptedServer:
    """An OpenAI-compatible server: POST answers with ``reply(body)`` (status, JSON), GET with
    ``get_status``; every request's path and headers are kept."""

    def __init__(
        self,
        reply: Callable[[dict[str, Any]], tuple[int, Any]] | None = None,
        get_status: int = 404,
    ) -> None:
        self.reply = reply or (lambda body: (200, completion(json.dumps(VERDICT))))
        self.get_status = get_status
        self.seen: list[tuple[str, str, dict[str, str]]] = []  # method, path, headers
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                outer.seen.append(("GET", self.path, dict(self.headers)))
                self._send(outer.get_status, {"error": "no such route"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.seen.append(("POST", self.path, dict(self.headers)))
                self._send(*outer.reply(body))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def with_credentials(self) -> str:
        return f"http://{USER}:{PASSWORD}@127.0.0.1:{self.port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def completion(content: str) -> dict[str, Any]:
    return {
        "choices": [
            {"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
    }


@pytest.fixture
def servers() -> Iterator[list[Any]]:
    started: list[Any] = []
    yield started
    for server in started:
        server.close()


class JudgeHolder:
    """The judge the next scoring in this test uses (passed in MetricSettings, never global)."""

    settings: judges.JudgeSettings | None = None


def use_judge(spec: str | None, **options: Any) -> None:
    JudgeHolder.settings = judges.judge_settings(spec, **options) if spec else None


@pytest.fixture(autouse=True)
def no_judge_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in (
        "RAGMETER_JUDGE",
        "RAGMETER_JUDGE_MAX_COST",
        "RAGMETER_JUDGE_STORE",
        "RAGMETER_JUDGE_API_KEY",
        "RAGMETER_JUDGE_TIMEOUT_S",
        "RAGMETER_JUDGE_MAX_RETRIES",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    use_judge(None)
    yield
    use_judge(None)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def judge_cases(n: int) -> list[tuple[Case, Response]]:
    return [
        (
            Case(case_id=f"c{i}", question=f"Question {i}?", reference_answer="Paris."),
            Response(answer="Paris.", retrieved=[RetrievedChunk(id="d1", text="Paris is.")]),
        )
        for i in range(n)
    ]


def run_correctness(n: int = 1) -> dict[str, Score]:
    """The ``correctness`` judged metric (one call per case) over ``n`` cases, by case id."""
    pairs = judge_cases(n)
    metrics = [
        m
        for m in resolve_metrics(["judged"], MetricSettings(judge=JudgeHolder.settings))
        if m.name == "correctness"
    ]
    results = [CaseResult(case_id=c.case_id, status="ok", response=r) for c, r in pairs]
    return {s.case_id: s for s in score_results([c for c, _ in pairs], results, metrics)}


def store_bytes(folder: Path) -> bytes:
    """Every byte of the SQLite store (the file and any journal / WAL beside it)."""
    return b"".join(path.read_bytes() for path in sorted(folder.glob("runs.db*")))


def secret_forms() -> list[bytes]:
    pair = f"{USER}:{PASSWORD}"
    return [PASSWORD.encode(), pair.encode(), base64.b64encode(pair.encode())]


# --- time-outs and retries --------------------------------------------------------------------
def test_timeout_and_retries_default_to_60s_and_one_retry(tmp_path: Path) -> None:
    judge = build_judge("http://127.0.0.1:9/v1#m")
    assert isinstance(judge, OpenAICompatJudge)
    assert (judge.timeout_s, judge.max_retries) == (60.0, 1)
    configured = judges.judge_settings(
        "http://127.0.0.1:9/v1#m", timeout_s=5.0, max_retries=0
    ).build()
    assert isinstance(configured, OpenAICompatJudge)
    assert (configured.timeout_s, configured.max_retries) == (5.0, 0)
    # the local judge: the configured per-request limit; only its start-up keeps a long floor
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF not really")
    local = build_judge(f"local:{gguf}", timeout_s=7.0, max_retries=2)
    assert isinstance(local, LocalLlamaJudge)
    assert (local.timeout_s, local.max_retries, local.start_timeout_s) == (7.0, 2, 180.0)
    with pytest.raises(JudgeConfigError, match="timeout_s"):
        judges.judge_settings("http://127.0.0.1:9/v1#m", timeout_s=0)
    with pytest.raises(JudgeConfigError, match="max_retries"):
        build_judge("http://127.0.0.1:9/v1#m", max_retries=-1)
    with pytest.raises(JudgeConfigError, match="not understood"):
        judges.judge_settings("gpt-4o")


def test_hung_judge_fails_the_score_quickly_not_the_run(servers: list[Any], tmp_path: Path) -> None:
    hung = HungServer()
    servers.append(hung)
    use_judge(
        f"{hung.url}/v1#m",
        store=str(tmp_path / "runs.db"),
        tasks=("correctness",),
        timeout_s=0.3,
        max_retries=1,
    )
    started = time.perf_counter()
    scores = run_correctness(1)
    elapsed = time.perf_counter() - started
    score = scores["c0"]
    assert score.status == "failed" and score.value is None
    reason = score.reason or ""
    assert "timeout" in reason and "0.3s" in reason and "2 tries" in reason, reason
    # a hang guard: two 0.3 s tries and a backoff of at most 1.5 s; the server never answers,
    # and at the judge's default timeout the two tries would take 2 x 60 s
    assert elapsed < 40.0, elapsed
    assert hung.connections() == 2  # one retry
    rows = JudgeStore(tmp_path / "runs.db").calls()
    assert [r["status"] for r in rows] == ["error"] and "timeout" in rows[0]["error"]


def test_trickling_judge_hits_the_wall_clock_deadline(servers: list[Any]) -> None:
    trickle = TrickleServer(for_s=300.0)
    servers.append(trickle)
    judge = OpenAICompatJudge(
        f"{trickle.url}/v1", "m", api_key_env=None, timeout_s=0.5, max_retries=0
    )

    async def go() -> None:
        try:
            await judge.complete([{"role": "user", "content": "hi"}], None, 10)
        finally:
            await judge.aclose()

    started = time.perf_counter()
    with pytest.raises(JudgeError) as info:
        asyncio.run(go())
    assert info.value.error_type == "timeout"
    # a hang guard: 0.5 s; a byte every 0.1 s extending the call would keep it for 300 s
    assert time.perf_counter() - started < 30.0


def test_session_stops_sending_after_three_lost_calls_in_a_row(
    servers: list[Any], tmp_path: Path
) -> None:
    hung = HungServer()
    servers.append(hung)
    use_judge(
        f"{hung.url}/v1#m",
        store=str(tmp_path / "runs.db"),
        tasks=("correctness",),
        timeout_s=0.2,
        max_retries=0,
        concurrency=1,
    )
    started = time.perf_counter()
    scores = run_correctness(6)
    # a hang guard: three 0.2 s calls; at the judge's default timeout they would take 3 x 60 s
    assert time.perf_counter() - started < 40.0
    assert {s.status for s in scores.values()} == {"failed"}
    assert hung.connections() == 3  # the later three calls were never sent
    reasons = sorted(s.reason or "" for s in scores.values())
    assert sum("not sent: the judge lost 3 calls in a row" in r for r in reasons) == 3
    assert all("timeout" in r for r in reasons)


# --- keys and credentials ---------------------------------------------------------------------
def test_credentials_in_the_judge_url_are_sent_as_basic_auth_and_never_stored(
    servers: list[Any], tmp_path: Path
) -> None:
    server = ScriptedServer()
    servers.append(server)
    use_judge(
        f"{server.with_credentials()}/v1#judge-model",
        store=str(tmp_path / "runs.db"),
        tasks=("correctness",),
    )
    ok = run_correctness(2)
    assert {s.status for s in ok.values()} == {"ok"}
    token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert [h["Authorization"] for _, _, h in server.seen] == [f"Basic {token}"] * 2
    details = json.dumps([s.details for s in ok.values()])
    assert f'"judge_model": "{server.url}/v1#judge-model"' in details

    # failures too: a judge server that refuses the connection, and one answering HTTP 500
    use_judge(
        f"http://{USER}:{PASSWORD}@127.0.0.1:{closed_port()}/v1#judge-model",
        store=str(tmp_path / "runs.db"),
        tasks=("correctness",),
        timeout_s=1.0,
        max_retries=0,
    )
    refused = run_correctness(1)["c0"]
    server.reply = lambda body: (500, {"error": f"upstream {USER}:{PASSWORD} broke"})
    use_judge(
        f"{server.with_credentials()}/v1#judge-model",
        store=str(tmp_path / "runs.db"),
        tasks=("correctness",),
        max_retries=0,
        use_cache=False,
    )
    broken = run_correctness(1)["c0"]
    for score in (refused, broken):
        assert score.status == "failed"
        shown = (score.reason or "") + json.dumps(score.details)
        assert PASSWORD not in shown and f"{USER}:" not in shown, shown
    assert "ConnectError" in (refused.reason or "") and "HTTP 500" in (broken.reason or "")

    rows = JudgeStore(tmp_path / "runs.db").calls()
    assert len(rows) == 4 and {r["model"].split("/v1")[1] for r in rows} == {"#judge-model"}
    assert all("@" not in r["model"] for r in rows)
    data = store_bytes(tmp_path)
    assert b"judge_calls" in data
    for secret in secret_forms():
        assert secret not in data, secret


def test_http_judge_key_from_api_key_env_else_ragmeter_judge_api_key(
    servers: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = ScriptedServer()
    servers.append(server)
    spec = f"{server.url}/v1#m"
    default_key, named_key = "rjk-default-key-0451", "rjk-named-key-8812"
    monkeypatch.setenv("RAGMETER_JUDGE_API_KEY", default_key)
    monkeypatch.setenv("MY_JUDGE_KEY", named_key)
    use_judge(spec, store=str(tmp_path / "runs.db"), tasks=("correctness",))
    assert run_correctness(1)["c0"].status == "ok"
    use_judge(
        spec,
        store=str(tmp_path / "runs.db"),
        tasks=("correctness",),
        api_key_env="MY_JUDGE_KEY",
        use_cache=False,
    )
    assert run_correctness(1)["c0"].status == "ok"
    sent = [h["Authorization"] for _, _, h in server.seen]
    assert sent == [f"Bearer {default_key}", f"Bearer {named_key}"]
    # the keys read are remembered: masked wherever they would appear
    assert redact_text(f"a {default_key} and {named_key}") == f"a {REDACTED} and {REDACTED}"
    data = store_bytes(tmp_path)
    assert default_key.encode() not in data and named_key.encode() not in data
    # a named variable that is not set is an error of the call, not a silent key-less call
    monkeypatch.delenv("MY_JUDGE_KEY")
    missing = run_correctness(1)["c0"]
    assert missing.status == "failed" and "MY_JUDGE_KEY is not set" in (missing.reason or "")


def test_judge_errors_and_failures_redact_their_messages_and_keep_the_raw_output() -> None:
    body = f"echo: Bearer sk-leaky-0123456789 from http://{USER}:{PASSWORD}@h/v1"
    error = JudgeError("http_4xx", f"HTTP 401 from http://{USER}:{PASSWORD}@h/v1: {body}", 1, body)
    assert PASSWORD not in str(error) and "sk-leaky" not in str(error)
    assert PASSWORD not in error.message and error.raw == body
    failure = JudgeFailure("invalid", f"bad output {body}", raw=body, calls=[1])
    assert PASSWORD not in str(failure) and "sk-leaky" not in str(failure)
    assert failure.raw == body  # kept as it came
    assert "sk-leaky" not in json.dumps(failure.details)  # the stored copy is redacted


def test_spot_check_report_names_the_second_judge_without_credentials() -> None:
    report = spot_check(
        [], [], [], 0, 0, f"http://{USER}:{PASSWORD}@127.0.0.1:1/v1#m", lambda c, r: ([], {})
    )
    assert PASSWORD not in json.dumps(report) and report["second_judge"].endswith("/v1#m")


# --- pre-flight -------------------------------------------------------------------------------
def preflight(spec: str, api_key_env: str | None = None, timeout_s: float = 2.0) -> Any:
    check = judges.preflight_judge(spec, api_key_env=api_key_env, timeout_s=timeout_s)
    return asyncio.run(check)


def test_preflight_unknown_kind_and_missing_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    forms = "use openai:MODEL, anthropic:MODEL, http://HOST:PORT/v1#MODEL or local:PATH.gguf"
    with pytest.raises(JudgeConfigError) as info:
        preflight("foo")
    assert str(info.value) == f"--judge foo: {forms}"
    with pytest.raises(JudgeConfigError) as info:
        preflight(f"http://{USER}:{PASSWORD}@127.0.0.1:1/v1")  # no #MODEL
    assert "--judge http://" in str(info.value) and PASSWORD not in str(info.value)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(JudgeConfigError) as info:
        preflight("openai:gpt-4o-mini")
    assert str(info.value) == "--judge openai:gpt-4o-mini needs OPENAI_API_KEY in the environment"
    with pytest.raises(JudgeConfigError, match="needs ANTHROPIC_API_KEY in the environment"):
        preflight("anthropic:claude-x")
    with pytest.raises(JudgeConfigError, match="needs MY_KEY in the environment"):
        preflight("http://127.0.0.1:1/v1#m", api_key_env="MY_KEY")


def test_preflight_cloud_judges_check_the_key_and_send_nothing(
    servers: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = ScriptedServer(get_status=200)
    servers.append(server)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-preflight-test-000111")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-preflight-000222")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    snapshot = preflight("openai:gpt-4o-mini")
    assert snapshot["provider"] == "openai" and snapshot["model"] == "gpt-4o-mini"
    assert snapshot["api_key_env"] == "OPENAI_API_KEY" and snapshot["contacted"] is False
    assert preflight("anthropic:claude-x")["provider"] == "anthropic"
    assert server.seen == []
    assert "sk-preflight" not in json.dumps(snapshot)


def test_preflight_local_model_file_must_exist(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    with pytest.raises(JudgeConfigError) as info:
        preflight(f"local:{missing}")
    assert f"{missing} does not exist" in str(info.value)
    assert "setup_llama.py" in str(info.value)


def test_preflight_http_server_refusing_or_hung_is_not_reachable(
    servers: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    port = closed_port()
    with pytest.raises(JudgeConfigError) as info:
        preflight(f"http://{USER}:{PASSWORD}@127.0.0.1:{port}/v1#m")
    message = str(info.value)
    assert message.startswith(f"judge server http://127.0.0.1:{port}/v1 is not reachable: ")
    assert "ConnectError" in message and message.endswith("; start it or check the URL")
    assert PASSWORD not in message
    hung = HungServer()
    servers.append(hung)
    # a shorter judge timeout bounds the probe (here the probe's own limit would be 300 s)
    assert judge_checks.PROBE_TIMEOUT_S == 5.0
    monkeypatch.setattr(judge_checks, "PROBE_TIMEOUT_S", 300.0)
    started = time.perf_counter()
    with pytest.raises(JudgeConfigError, match=r"is not reachable: .*no answer within 0\.5s"):
        preflight(f"{hung.url}/v1#m", timeout_s=0.5)
    assert time.perf_counter() - started < 30.0  # a hang guard: 0.5 s, not 300 s
    # a long judge timeout still probes for a few seconds at most (5 s; 1 s here)
    monkeypatch.setattr(judge_checks, "PROBE_TIMEOUT_S", 1.0)
    started = time.perf_counter()
    with pytest.raises(JudgeConfigError, match="no answer within 1s"):
        preflight(f"{hung.url}/v1#m", timeout_s=600.0)
    assert time.perf_counter() - started < 30.0  # a hang guard: 1 s, not 600 s


def test_preflight_http_server_up_even_with_404_and_snapshot_is_redacted(
    servers: list[Any],
) -> None:
    server = ScriptedServer(get_status=404)
    servers.append(server)
    snapshot = preflight(f"{server.with_credentials()}/v1/#qwen")
    assert snapshot == {
        "provider": "http",
        "model": "qwen",
        "judge_model": f"{server.url}/v1#qwen",
        "base_url": f"{server.url}/v1",
        "api_key_env": None,
        "sends_key": "basic (credentials from the URL)",
        "contacted": True,
        "models_status": 404,
        "timeout_s": 2.0,
    }
    method, path, headers = server.seen[0]
    assert (method, path) == ("GET", "/v1/models")
    token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert headers["Authorization"] == f"Basic {token}"


def test_preflight_http_server_refusing_the_key(
    servers: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = ScriptedServer(get_status=401)
    servers.append(server)
    with pytest.raises(JudgeConfigError, match=r"HTTP 401 .*set its key in RAGMETER_JUDGE_API_KEY"):
        preflight(f"{server.url}/v1#m")
    monkeypatch.setenv("RAGMETER_JUDGE_API_KEY", "rjk-wrong-key-7781")
    with pytest.raises(JudgeConfigError, match="check the key in RAGMETER_JUDGE_API_KEY"):
        preflight(f"{server.url}/v1#m")
    assert server.seen[-1][2]["Authorization"] == "Bearer rjk-wrong-key-7781"


def test_a_spec_read_back_from_a_redacted_snapshot_sends_no_credentials(
    servers: list[Any],
) -> None:
    server = ScriptedServer()
    servers.append(server)
    judge = build_judge(f"http://{REDACTED}@127.0.0.1:{server.port}/v1#m")
    assert isinstance(judge, OpenAICompatJudge) and judge.model == f"{server.url}/v1#m"

    async def go() -> None:
        try:
            await judge.complete([{"role": "user", "content": "hi"}], None, 10)
        finally:
            await judge.aclose()

    asyncio.run(go())
    assert "Authorization" not in server.seen[0][2]

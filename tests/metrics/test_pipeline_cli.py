"""End to end through the real command line: ``ragmeter eval`` on the demo measures the pipeline
pass rate from the demo's seed-003 pipeline labels; an HTTP target on 127.0.0.1 serving
``GET /index/stats`` has its stats stored with the run and shown by ``ragmeter show``."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from ragmeter.cli.main import main
from ragmeter.datasets import load_dataset
from ragmeter.demo import DEMO_CASES, DEMO_PIPELINE_LABELS

STATS = {
    "documents": 12,
    "documents_without_chunks": 3,
    "chunks": 90,
    "chunks_attempted": 100,
    "chunks_skipped": {"context_length": 10},
    "tokens_per_chunk": {"min": 5, "max": 700, "mean": 180.25, "p95": 650},
    "chunker_version": "recursive-3",
    "embedding_model": "mini-embed-v2",
    "index_version": "idx-42",
}


def run(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result


def newest_run_file(folder: Path) -> dict[str, Any]:
    files = sorted(folder.glob("*.json"), key=lambda path: path.stat().st_mtime)
    document: dict[str, Any] = json.loads(files[-1].read_text())
    return document


def test_demo_labels_cover_the_demo_cases() -> None:
    case_ids = [json.loads(line)["case_id"] for line in DEMO_CASES.read_text().splitlines()]
    labels = [json.loads(line) for line in DEMO_PIPELINE_LABELS.read_text().splitlines()]
    assert {label["case_id"] for label in labels} <= set(case_ids)
    cases = {case.case_id: case for case in load_dataset("demo")}
    assert set(cases) == {label["case_id"] for label in labels}  # every demo case is labelled
    for label in labels:
        case = cases[label["case_id"]]
        assert case.expected_outcome == label.get("expected_outcome")
        if case.attack_label and case.expected_outcome is None:  # flagged, answered: demo-080
            assert case.required_flags == ["guardrail_warning"]
        elif case.attack_label:  # the reference guardrail blocks the other attacks
            assert case.expected_outcome == "blocked"
            assert case.required_flags == ["guardrail_blocked"]
        else:
            assert case.forbidden_flags == ["guardrail_blocked"]
            assert case.expected_outcome == ("success" if case.answerable else "uncertain")


def test_eval_on_the_demo_measures_the_pipeline_pass_rate(tmp_path: Path) -> None:
    store, out = tmp_path / "runs.db", tmp_path / "runs"
    result = run(
        "eval",
        "--no-progress",
        "-v",  # the full view: the latency budgets table
        "--metrics",
        "retrieval,performance,pipeline",
        "--store",
        str(store),
        "--output-dir",
        str(out),
    )
    assert "pipeline_pass_rate" in result.output
    assert "Latency budgets" in result.output
    document = newest_run_file(out)
    metrics = {m["name"]: m for m in document["scorecard"]["metrics"]}
    passed = metrics["pipeline_pass_rate"]
    assert passed["group"] == "pipeline" and passed["kind"] == "binary"
    labelled = [
        case
        for case in load_dataset("demo")
        if case.expected_outcome is not None or case.required_flags or case.forbidden_flags
    ]
    assert passed["n_scored"] == len(labelled) == 87 and passed["value"] is not None
    for name in ("timeout_rate", "empty_response_rate", "error_rate"):
        assert metrics[name]["value"] == 0.0
    target = next(t for t in document["goals"] if t["metric"] == "pipeline_pass_rate")
    assert target["status"] in ("pass", "fail") and target["value"] == passed["value"]
    budgets = document["performance"]["latency_budgets"]
    assert [(b["stage"], b["statistic"], b["budget_ms"]) for b in budgets] == [
        ("total", "p95", 5000.0)
    ]
    assert list(document["performance"]["coverage_by_doc_type"]) == ["markdown"]
    # every case's pass is in the run file with its value
    ids = {case.case_id for case in labelled}
    case_scores = [
        c["scores"]["pipeline_pass_rate"] for c in document["cases"] if c["case_id"] in ids
    ]
    assert len(case_scores) == len(ids) and all(isinstance(v, float) for v in case_scores)


# an HTTP target with index stats ---------------------------------------------------------------
class StatsServer:
    """``/health``, ``POST /query`` and ``GET /index/stats`` (``stats``: a body, or an HTTP
    status with no stats)."""

    def __init__(self, stats: dict[str, Any] | int) -> None:
        self.stats = stats
        self.paths: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _send(self, status: int, payload: Any) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                server.paths.append(self.path)
                if self.path == "/health":
                    self._send(200, {"status": "ok"})
                elif self.path == "/index/stats" and isinstance(server.stats, dict):
                    self._send(200, server.stats)
                elif self.path == "/index/stats":
                    self._send(int(server.stats), {"error": "no stats"})
                else:
                    self._send(404, {"error": "no route"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                question = json.loads(self.rfile.read(length))["question"]
                server.paths.append(self.path)
                self._send(
                    200,
                    {
                        "answer": f"About {question}: see the handbook.",
                        "retrieved": [{"id": "h#1", "doc_id": "h", "text": "the handbook"}],
                        "citations": [{"chunk_id": "h#1"}],
                        "policy_flags": [],
                        "latency_ms": {"retrieve": 3.0, "generate": 7.0},
                    },
                )

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[StatsServer] = []

    def start(stats: dict[str, Any] | int) -> StatsServer:
        servers.append(StatsServer(stats))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "cases.jsonl"
    rows = [
        {
            "case_id": f"q{i}",
            "question": f"question {i}",
            "expected_outcome": "success",
            "min_citations": 1,
            "latency_budget_ms": {"p95": 5000},
        }
        for i in range(3)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def eval_http(tmp_path: Path, url: str) -> tuple[Path, str]:
    store = tmp_path / "runs.db"
    run(
        "eval",
        "--no-progress",
        "--target",
        url,
        "--dataset",
        str(dataset(tmp_path)),
        "--metrics",
        "performance,pipeline",
        "--store",
        str(store),
        "--output-dir",
        str(tmp_path / "runs"),
    )
    listed = run("runs", "--store", str(store))
    return store, listed.output.split("│")[1].strip()


def test_http_index_stats_are_stored_and_shown(tmp_path: Path, serve: Any) -> None:
    server = serve(STATS)
    store, run_id = eval_http(tmp_path, server.url)
    assert server.paths.count("/index/stats") == 1  # once per run
    shown = run("show", run_id, "--store", str(store)).output
    assert "index stats (GET /index/stats)" in shown
    assert "12 documents" in shown and "90 chunks" in shown
    assert "no-chunk rate 0.250" in shown and "skipped for context 0.100" in shown
    assert "chunker_version recursive-3" in shown and "index_version idx-42" in shown
    document = json.loads(run("show", run_id, "--json", "--store", str(store)).output)
    stats = document["index_stats"]
    assert stats["status"] == "reported" and stats["stats"] == STATS
    assert stats["derived"]["no_chunks_rate"] == 0.25
    run_file = newest_run_file(tmp_path / "runs")
    assert run_file["index_stats"]["stats"] == STATS
    metrics = {m["name"]: m for m in run_file["scorecard"]["metrics"]}
    assert metrics["pipeline_pass_rate"]["value"] == 1.0


@pytest.mark.parametrize("status", [404, 500])
def test_http_without_index_stats(tmp_path: Path, serve: Any, status: int) -> None:
    server = serve(status)
    store, run_id = eval_http(tmp_path, server.url)
    shown = run("show", run_id, "--store", str(store)).output
    run_file = newest_run_file(tmp_path / "runs")
    if status == 404:  # the server has none: stored as not reported, nothing shown
        assert run_file["index_stats"]["status"] == "not_reported"
        assert "index stats" not in shown
    else:  # a server error: stored and shown as failed; the run itself is fine
        assert run_file["index_stats"]["status"] == "failed"
        assert "index stats (GET /index/stats): failed HTTP 500" in shown
    assert run_file["error_count"] == 0

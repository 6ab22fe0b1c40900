"""Failures and skips say why (issue 29, scope 3): failed cases counted by error type with one
example each in the console, Markdown and HTML reports; a metric skipped on every case shows its
reason in the scorecard; a run whose every case failed exits 3 after storing the run. The HTTP
cases run ``ragmeter eval`` in-process against real servers on 127.0.0.1. Also ``compare``'s
percentile rows (each its own change, with its unit) and a bad ``--perspective`` blamed on the
flag, not the config file."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

from ragmeter.cli.main import main
from ragmeter.errors import EXIT_TARGET_DOWN
from ragmeter.reports.compare_console import comparison_table
from ragmeter.reports.failures import failure_summary
from ragmeter.reports.html.format import change_interval_text, change_text, change_unit
from ragmeter.reports.markdown import render_markdown
from ragmeter.reports.perspectives import failure_notes
from ragmeter.run_record import MetricSummary, RunRecord, Scorecard
from ragmeter.scoring.compare import CaseValues, compare_runs
from tests.targets.servers import Reply as EdgeReply
from tests.targets.servers import Request, Script, Server, on_post

# FastAPI's reply to a body without the field it requires (the service)
UNPROCESSABLE = {
    "detail": [{"type": "missing", "loc": ["body", "query"], "msg": "Field required", "input": {}}]
}

# a reply for one request: status and JSON body
Reply = tuple[int, Any]


def json_replies(answer: Callable[[str], Reply]) -> Script:
    """A scripted server's POST handler from ``answer(question)`` -> (status, JSON body)."""

    def reply(request: Request) -> EdgeReply:
        status, payload = answer(str(json.loads(request.body or b"{}").get("question", "")))
        return status, {"Content-Type": "application/json"}, json.dumps(payload).encode()

    return on_post(reply)


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[str], Reply]], Server]]:
    servers: list[Server] = []

    def start(script: Callable[[str], Reply]) -> Server:
        servers.append(Server(json_replies(script)))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def dataset(folder: Path) -> Path:
    path = folder / "cases.jsonl"
    lines = [
        {
            "case_id": f"c{i}",
            "question": f"What is item {i}?" + (" BAD" if i == 0 else ""),
            "gold_passages": [{"doc_id": "doc-a", "chunk_id": "doc-a#0"}],
        }
        for i in range(3)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def evaluate(folder: Path, url: str, *extra: str) -> Result:
    args = [
        "eval", "--dataset", str(dataset(folder)), "--target", url, "--no-progress",
        "--store", str(folder / "runs.db"), "--output-dir", str(folder / "out"), *extra,
    ]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def flat(text: str) -> str:
    """``text`` on one line (the console wraps long notes)."""
    return " ".join(text.split())


def reports(folder: Path) -> tuple[str, str]:
    """The run's Markdown report and its HTML report (``ragmeter report``)."""
    [markdown] = (folder / "out").glob("*.md")
    [run_file] = (folder / "out").glob("*.json")
    run_id = json.loads(run_file.read_text(encoding="utf-8"))["id"]
    html = folder / "run.html"
    done = CliRunner().invoke(
        main, ["report", run_id, "--store", str(folder / "runs.db"), "-o", str(html)]
    )
    assert done.exit_code == 0, done.output
    return markdown.read_text(encoding="utf-8"), html.read_text(encoding="utf-8")


def test_a_422_on_every_request_exits_3_with_the_error_summary(
    tmp_path: Path, serve: Callable[[Callable[[str], Reply]], Server]
) -> None:
    server = serve(lambda question: (422, UNPROCESSABLE))
    result = evaluate(tmp_path, server.url, "--no-health-check")
    assert result.exit_code == EXIT_TARGET_DOWN == 3
    output = flat(result.output)
    assert "every case failed (3 of 3): nothing measured" in output
    assert (
        'http_4xx 3: HTTP 422: {"detail": [{"type": "missing", "loc": ["body", "query"]' in output
    )
    assert "error: every case failed (3 of 3), nothing was measured: http_4xx 3: HTTP 422" in output
    # FastAPI's missing body field, with the template that sends it (the example keeps the
    # head and the tail of a long message)
    assert (
        """which the request did not send: --request-template '{"query": "{question}"}')"""
        in output
    )
    assert "run " in output and "is stored" in output
    assert "skipped on every case" not in output  # nothing was measured on any case
    markdown, html = reports(tmp_path)
    assert "## Failures and skips" in markdown and "**Every case failed** (3 of 3)" in markdown
    assert "- http\\_4xx 3: HTTP 422: \\{" in markdown and '\\["body", "query"\\]' in markdown
    assert '<section id="failures">' in html and "Every case failed (3 of 3)" in html
    assert '<th scope="row">http_4xx</th><td class="num">3</td>' in html
    assert "&quot;loc&quot;: [&quot;body&quot;, &quot;query&quot;]" in html
    [run_file] = (tmp_path / "out").glob("*.json")
    stored = json.loads(run_file.read_text(encoding="utf-8"))
    assert stored["status"] == "completed" and stored["error_count"] == 3  # stored, not resumable


def test_a_refused_connection_exits_3_and_says_connection_error(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a free port nobody listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = evaluate(tmp_path, f"http://127.0.0.1:{port}", "--no-health-check")
    assert result.exit_code == 3
    output = flat(result.output)
    assert "every case failed (3 of 3): nothing measured" in output
    assert "connection_error 3: " in output
    assert "error: every case failed (3 of 3), nothing was measured: connection_error 3" in output
    markdown, html = reports(tmp_path)
    assert "- connection\\_error 3: " in markdown
    assert '<th scope="row">connection_error</th><td class="num">3</td>' in html


def test_a_partly_failed_run_exits_0_with_the_summary_and_the_skip_reasons(
    tmp_path: Path, serve: Callable[[Callable[[str], Reply]], Server]
) -> None:
    """One case of three gets a 422; the two answers report no chunks: the run exits 0 and
    every report counts the error and says why retrieval was not measured."""
    server = serve(lambda q: (422, UNPROCESSABLE) if "BAD" in q else (200, {"answer": "fine"}))
    result = evaluate(tmp_path, server.url)
    assert result.exit_code == 0, result.output
    output = flat(result.output)
    assert "1 of 3 case(s) failed (target errors)" in output
    assert "http_4xx 1: HTTP 422" in output
    reason = "skipped on every case that did not fail: target did not report retrieved chunks"
    assert "ndcg_at_5, recall_at_5, mrr, " in output and reason in output
    assert "metrics with failed scores" not in output  # each failed by the target error only
    markdown, html = reports(tmp_path)
    assert "1 of 3 case(s) failed (target errors)." in markdown
    assert "- http\\_4xx 1: HTTP 422" in markdown
    assert "recall\\_at\\_5" in markdown and reason in markdown
    assert "1 of 3 case(s) failed" in html and reason in html
    [run_file] = (tmp_path / "out").glob("*.json")
    run_id = json.loads(run_file.read_text(encoding="utf-8"))["id"]
    shown = CliRunner().invoke(main, ["show", run_id, "--store", str(tmp_path / "runs.db")])
    assert shown.exit_code == 0, shown.output  # the full scorecard (as eval -v)
    assert "http_4xx 1: HTTP 422" in flat(shown.output) and reason in flat(shown.output)


def record(errors: dict[str, int], examples: dict[str, str], questions: int) -> RunRecord:
    skipped = MetricSummary(
        name="recall_at_5", group="retrieval", value=None, n_scored=0,
        n_skipped=questions, n_failed=0, skip_reason="target did not report chunk ids",
    )  # fmt: skip
    return RunRecord(
        id="r1",
        name="r1",
        created_at="",
        config={},
        datasets=["d"],
        question_count=questions,
        error_count=sum(errors.values()),
        scorecard=Scorecard(metrics=[skipped], by_group={"retrieval": ["recall_at_5"]}),
        performance={"errors_by_type": errors, "error_examples": examples},
    )


def test_the_summary_counts_by_type_most_first_with_an_inert_redacted_example() -> None:
    long = "HTTP 422: " + "x" * 300 + " loc: body.query"
    run = record(
        {"timeout": 1, "http_4xx": 26},
        {"http_4xx": long, "timeout": "no answer \x1b[31mwithin\x1b[0m 5s, key sk-abcdef123456789"},
        27,
    )
    summary = failure_summary(run)
    assert summary.all_failed and summary.failed == 27
    assert [(g.error_type, g.count) for g in summary.errors] == [("http_4xx", 26), ("timeout", 1)]
    example = summary.errors[0].example
    assert example is not None and len(example) <= 160
    assert example.startswith("HTTP 422: xxx") and example.endswith("x loc: body.query")
    assert " ... " in example
    assert "sk-abcdef123456789" not in (summary.errors[1].example or "")
    notes = flat(" ".join(failure_notes(run)))
    assert "every case failed (27 of 27): nothing measured" in notes
    assert "http_4xx[/red] 26: HTTP 422: xxx" in notes and "\x1b" not in notes
    # every case failed: no skip reason is listed (it would read as measured elsewhere)
    assert "skipped on every case" not in notes
    partly = record({"timeout": 1, "http_4xx": 26}, {"timeout": "no answer"}, 30)
    notes = flat(" ".join(failure_notes(partly)))
    assert "recall_at_5: skipped on every case: target did not report chunk ids" in notes
    assert "- recall\\_at\\_5: skipped on every case: target did not report chunk ids" in (
        render_markdown(partly)
    )
    assert failure_summary(record({}, {}, 3)).failed == 0


def test_compare_shows_each_percentile_its_own_change_with_its_unit() -> None:
    """Per-case latencies 100..500 ms against 50, 150, 250, 350, 1000 ms. By hand (NumPy's
    linear rule, as the scorecard): p50 300 -> 250 (-50 ms); p95 480 -> 870 (+390 ms, index
    3.8: 400 + 0.8 x 100 and 350 + 0.8 x 650); p99 496 -> 974 (+478 ms). The mean change
    (+60 ms) is none of them."""
    cases = [f"c{i}" for i in range(5)]
    per_case = {
        "base": dict(zip(cases, [100.0, 200.0, 300.0, 400.0, 500.0], strict=True)),
        "cand": dict(zip(cases, [50.0, 150.0, 250.0, 350.0, 1000.0], strict=True)),
    }

    def run(name: str) -> CaseValues:
        values = per_case[name]
        summaries = [
            MetricSummary(
                name=f"latency_p{q}",
                group="performance",
                value=float(np.percentile(list(values.values()), q)),
                aggregation=f"p{q}",
                higher_is_better=False,
                unit="ms",
                kind="duration",
                n_scored=5,
                n_skipped=0,
                n_failed=0,
            )
            for q in (50, 95, 99)
        ]
        card = Scorecard(metrics=summaries, by_group={"performance": [s.name for s in summaries]})
        header = RunRecord(
            id=name, name=name, created_at="", config={}, datasets=[], scorecard=card
        )
        return CaseValues(header, {s.name: values for s in summaries})

    comparison = compare_runs(run("base"), run("cand"), resamples=500)
    rows = {row.metric: row for row in comparison.rows}
    expected = {"latency_p50": -50.0, "latency_p95": 390.0, "latency_p99": 478.0}
    for name, change in expected.items():
        row = rows[name]
        assert row.mean_diff == pytest.approx(change), name
        assert row.test == "paired_quantile_bootstrap"
        assert change_unit(row) == "ms"
        assert change_text(row.mean_diff, unit="ms") == f"{change:+.1f} ms"
        assert change_interval_text(row).endswith(" ms")
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(comparison_table(comparison, show_all=True))
    text = console.export_text()
    for name, change in expected.items():
        line = next(line for line in text.splitlines() if name in line)
        assert f"{change:+.1f} ms" in line, line


def test_a_bad_perspective_option_is_blamed_on_the_option_not_the_file(tmp_path: Path) -> None:
    config = tmp_path / "eval.yaml"
    config.write_text("datasets: [demo]\nperspectives: [retrieval]\n", encoding="utf-8")
    result = CliRunner().invoke(
        main,
        ["eval", "--config", str(config), "--perspective", "retreival", "--store",
         str(tmp_path / "r.db"), "--no-progress"],
    )  # fmt: skip
    assert result.exit_code == 2
    output = flat(result.output)
    assert "error: invalid option --perspective: perspectives: unknown perspectives retreival" in (
        output
    )
    assert "eval.yaml" not in output
    config.write_text("datasets: [demo]\nperspectives: [retreival]\n", encoding="utf-8")
    result = CliRunner().invoke(
        main, ["eval", "--config", str(config), "--store", str(tmp_path / "r.db")]
    )
    assert result.exit_code == 2
    assert f"{config}: invalid config: perspectives: unknown perspectives" in flat(result.output)


def test_the_422_hint_names_only_body_fields_the_request_did_not_send() -> None:
    from ragmeter.targets.http import missing_body_hint

    text = json.dumps(
        {
            "detail": [
                {"loc": ["body", "query"]},
                {"loc": ["body", "question"]},
                {"loc": ["query", "k"]},
            ]
        }
    )
    sent = {"question": "Q?", "top_k": 5}
    assert missing_body_hint(text, sent) == (
        " (the service reads body field 'query', which the request did not send: "
        """--request-template '{"query": "{question}"}')"""
    )
    assert missing_body_hint(text, {"query": "Q?", "question": "Q?"}) == ""
    assert missing_body_hint('{"error": "bad request"}', sent) == ""

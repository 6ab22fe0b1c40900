"""Seed 003's eval options through the real CLI: --perspective, --suite, -v, --save-trace and
--output, and the Markdown report written beside the run JSON."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from ragmeter.cli.main import main
from ragmeter.config import ConfigError, load_config
from ragmeter.datasets import load_dataset
from ragmeter.metrics.base import GROUPS, PERSPECTIVES
from ragmeter.reports.markdown import md_text, render_markdown
from ragmeter.reports.perspectives import HEADLINES
from ragmeter.run_record import GoalResult, MetricSummary, RunRecord, Scorecard
from ragmeter.runner.selection import smoke_cases


def run(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def run_file(folder: Path) -> tuple[Path, dict[str, Any]]:
    [path] = folder.glob("*.json")
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return path, document


def eval_args(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "eval",
        "--no-progress",
        "--store",
        str(tmp_path / "runs.db"),
        "--output-dir",
        str(tmp_path / "out"),
        *extra,
    ]


def test_every_group_is_in_one_perspective() -> None:
    grouped = [group for groups in PERSPECTIVES.values() for group in groups]
    assert sorted(grouped) == sorted(GROUPS)
    assert set(HEADLINES) == set(PERSPECTIVES)
    assert list(PERSPECTIVES)[:5] == [
        "retrieval",
        "context_quality",
        "groundedness",
        "safety",
        "pipeline",
    ]


def test_perspective_safety_and_pipeline_on_the_demo(tmp_path: Path) -> None:
    result = run(*eval_args(tmp_path, "--perspective", "safety,pipeline"))
    assert result.exit_code == 0, result.output
    for shown in ("safety", "pipeline", "injection_auc", "pipeline_pass_rate"):
        assert shown in result.output
    for hidden in ("retrieval", "ndcg_at_5", "groundedness", "token_f1", "latency_p95"):
        assert hidden not in result.output
    _, document = run_file(tmp_path / "out")
    assert document["config"]["perspectives"] == ["safety", "pipeline"]
    assert document["config"]["metrics"] == ["injection", "pipeline"]  # only their families
    metrics = {m["name"]: m for m in document["scorecard"]["metrics"]}
    assert set(document["scorecard"]["by_group"]) == {"safety", "pipeline"}
    assert metrics["injection_auc"]["value"] is not None
    assert metrics["pipeline_pass_rate"]["value"] is not None
    # the targets of the other perspectives are not checked (and fail no gate)
    assert {t["metric"] for t in document["goals"]} == {
        "injection_auc",
        "injection_tpr_at_fpr_1",
        "pipeline_pass_rate",
    }
    verbose = run(*eval_args(tmp_path / "v", "--perspective", "safety", "-v"))
    assert verbose.exit_code == 0, verbose.output
    assert "injection_false_positive_rate" in verbose.output  # every safety metric
    assert "pipeline_pass_rate" not in verbose.output


def test_unknown_perspective_fails_before_the_first_question(tmp_path: Path) -> None:
    result = run(*eval_args(tmp_path, "--perspective", "safety,groundednes"))
    assert result.exit_code == 2
    assert "unknown perspectives groundednes" in result.output
    assert "retrieval, context_quality, groundedness, safety, pipeline" in result.output
    assert not (tmp_path / "runs.db").exists() and not (tmp_path / "out").exists()
    with pytest.raises(ConfigError, match="unknown perspectives"):
        load_config(None, {"perspectives": ["nope"]}, environ={})
    assert load_config(None, {"perspectives": "retrieval, safety"}, environ={}).perspectives == [
        "retrieval",
        "safety",
    ]


def test_smoke_suite_keeps_every_category_with_under_a_quarter_of_the_cases(
    tmp_path: Path,
) -> None:
    demo = load_dataset("demo")
    categories = {case.category for case in demo}
    chosen = smoke_cases(demo, seed=0)
    assert len(chosen) < len(demo) / 4
    assert {case.category for case in chosen} == categories
    assert [c.case_id for c in smoke_cases(demo, seed=0)] == [c.case_id for c in chosen]
    assert [c.case_id for c in smoke_cases(demo, seed=1)] != [c.case_id for c in chosen]
    order = [case.case_id for case in demo]
    assert [c.case_id for c in chosen] == sorted((c.case_id for c in chosen), key=order.index)

    result = run(*eval_args(tmp_path, "--suite", "smoke", "--metrics", "retrieval"))
    assert result.exit_code == 0, result.output
    path, document = run_file(tmp_path / "out")
    assert document["config"]["suite"] == "smoke"
    assert document["question_count"] == len(chosen) < len(demo) / 4
    by_id = {case.case_id: case.category for case in demo}
    asked = Counter(by_id[case["case_id"]] for case in document["cases"])
    assert set(asked) == categories
    assert "suite: smoke" in path.with_suffix(".md").read_text(encoding="utf-8")


def test_default_view_is_compact_and_verbose_prints_everything(tmp_path: Path) -> None:
    targets = tmp_path / "targets.yaml"
    targets.write_text("- ndcg_at_5 > 0.6\n- recall_at_5 > 0.999\n- mrr > 0.5\n", encoding="utf-8")
    compact = run(*eval_args(tmp_path / "a", "--targets", str(targets)))
    assert compact.exit_code == 0, compact.output
    lines = compact.output.splitlines()
    assert len(lines) <= 45, compact.output  # about 40 lines for the demo
    for perspective in PERSPECTIVES:
        assert perspective in compact.output
    assert "Goals" in compact.output and "mrr" in compact.output
    assert "goals failed: recall_at_5" in compact.output  # failures are named
    assert "precision_at_3" not in compact.output and "-v shows them all" in compact.output

    full = run(*eval_args(tmp_path / "b", "-v"))
    assert full.exit_code == 0, full.output
    _, document = run_file(tmp_path / "b" / "out")
    for metric in document["scorecard"]["metrics"]:
        assert metric["name"] in full.output
    assert "Latency budgets" in full.output and len(full.output.splitlines()) > 100


TARGET = """
def answer(case):
    if case.category == "numeric":
        raise RuntimeError("the system fell over")
    chunk = {"id": "d1#1", "doc_id": "d1", "text": "Some text."}
    cited = [] if case.category == "list" else [{"doc_id": "d1"}]  # fails the pipeline checks
    flags = ["guardrail_blocked"] if case.category == "prompt_injection" else []
    reply = {"answer": "I think so.", "retrieved": [chunk], "citations": cited}
    return {**reply, "policy_flags": flags}
"""


def test_save_trace_writes_failed_cases_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "target.py").write_text(TARGET, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    args = eval_args(tmp_path, "--suite", "smoke", "--metrics", "pipeline,lexical")
    result = run(*args, "--target", "target.py:answer", "--save-trace")
    assert result.exit_code == 0, result.output
    _, document = run_file(tmp_path / "out")
    run_id = document["id"]
    # seed 003's traces/retrieval-abc123.jsonl: a file per perspective with a failure
    files = sorted(p.name for p in (tmp_path / "traces").iterdir())
    assert files == [f"operational-{run_id}.jsonl", f"pipeline-{run_id}.jsonl"]
    assert f"traces/pipeline-{run_id}.jsonl" in result.output
    traces = [
        json.loads(line)
        for name in files
        for line in (tmp_path / "traces" / name).read_text(encoding="utf-8").splitlines()
    ]
    assert 0 < len(traces) < document["question_count"]  # failed cases only
    assert {t["perspective"] for t in traces} == {"operational", "pipeline"}
    kinds = {t["perspective"]: {r["cause"] for r in t["failed"]} for t in traces}
    assert kinds == {"operational": {"target_error"}, "pipeline": {"goal"}}
    errored = [t for t in traces if t["failed"][0]["cause"] == "target_error"]
    assert errored and all(t["category"] == "numeric" for t in errored)
    assert all(t["response"] is None and "fell over" in t["error_message"] for t in errored)
    piped = [t for t in traces if t["failed"][0]["cause"] == "goal"]
    assert {r["metric"] for t in piped for r in t["failed"]} == {"pipeline_pass_rate"}
    assert "list" in {t["category"] for t in piped}
    first = piped[0]
    assert first["request"]["question"] and first["response"]["answer"] == "I think so."
    assert first["scores"]["pipeline_pass_rate"]["value"] == 0.0
    assert first["failed"][0]["goal"] == "> 0.9" and first["failed"][0]["details"]["failed"]
    # every failed case, and no passing one
    passed = {
        case["case_id"]
        for case in document["cases"]
        if case["status"] == "ok" and case["scores"]["pipeline_pass_rate"] == 1.0
    }
    assert passed and not passed & {t["case_id"] for t in traces}
    failing = {c["case_id"] for c in document["cases"]} - passed
    assert failing == {t["case_id"] for t in traces}
    assert f"traces: {len(failing)} failed case(s)" in result.output

    named = run(*args, "--target", "target.py:answer", "--save-trace", str(tmp_path / "t2"))
    assert named.exit_code == 0, named.output
    assert len(list((tmp_path / "t2").glob("*.jsonl"))) == 2


def test_output_names_the_run_files(tmp_path: Path) -> None:
    result = run(*eval_args(tmp_path, "--metrics", "retrieval", "--samples", "5", "--output", "pr"))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["pr.json", "pr.md"]
    document = json.loads((tmp_path / "out" / "pr.json").read_text(encoding="utf-8"))
    assert document["config"]["output"] == "pr"
    shown = run("show", document["id"], "--store", str(tmp_path / "runs.db"))
    assert shown.exit_code == 0, shown.output
    bad = run(*eval_args(tmp_path / "x", "--output", "a/b"))
    assert bad.exit_code == 2 and "without a folder" in bad.output
    assert not (tmp_path / "x").exists()
    before = (tmp_path / "out" / "pr.json").read_bytes()
    store = str(tmp_path / "runs.db")
    # a rescore never takes the old run's name (it would overwrite the old run's files)...
    again = run("rescore", document["id"], "--store", store)
    assert again.exit_code == 0, again.output
    assert (tmp_path / "out" / "pr.json").read_bytes() == before
    assert len(list((tmp_path / "out").glob("*.json"))) == 2
    # ...it names its own with --output
    named = run("rescore", document["id"], "--store", store, "--output", "pr-rescored")
    assert named.exit_code == 0, named.output
    written = {p.name for p in (tmp_path / "out").iterdir()}
    assert {"pr-rescored.json", "pr-rescored.md"} <= written
    renamed = json.loads((tmp_path / "out" / "pr-rescored.json").read_text(encoding="utf-8"))
    assert renamed["id"] != document["id"] and renamed["config"]["output"] == "pr-rescored"
    refused = run("rescore", document["id"], "--store", store, "--output", "a/b")
    assert refused.exit_code != 0 and "without a folder" in refused.output


def test_markdown_report_beside_the_run_file(tmp_path: Path) -> None:
    result = run(*eval_args(tmp_path, "--samples", "20"))
    assert result.exit_code == 0, result.output
    path, document = run_file(tmp_path / "out")
    report = path.with_suffix(".md")
    assert f"report {report}" in result.output.replace("\n", "")
    text = report.read_text(encoding="utf-8")
    assert text.startswith("# Evaluation report: ")
    assert f"- run: `{document['id']}`" in text
    for perspective in ("retrieval", "context_quality", "groundedness", "safety", "pipeline"):
        assert f"## {md_text(perspective)}" in text
    ndcg = next(m for m in document["scorecard"]["metrics"] if m["name"] == "ndcg_at_5")
    row = next(line for line in text.splitlines() if line.startswith("| ndcg\\_at\\_5 ↑"))
    assert f"{ndcg['value']:.3f}" in row
    assert f"{ndcg['ci_low']:.3f} - {ndcg['ci_high']:.3f}" in row
    counts = f"| {ndcg['n_scored']} | {ndcg['n_skipped']} | {ndcg['n_failed']} |"
    assert row.endswith(f"{counts} {ndcg['coverage']:.0%} |")
    assert "| ndcg\\_at\\_5 | &gt; 0.6 |" in text  # the targets, under their perspective too


def test_rescore_writes_its_markdown_report_too(tmp_path: Path) -> None:
    first = run(*eval_args(tmp_path, "--samples", "8", "--metrics", "retrieval"))
    assert first.exit_code == 0, first.output
    _, document = run_file(tmp_path / "out")
    again = run(
        "rescore", document["id"], "--store", str(tmp_path / "runs.db"),
        "--output-dir", str(tmp_path / "again"),
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    path, rescored = run_file(tmp_path / "again")
    report = path.with_suffix(".md").read_text(encoding="utf-8")
    assert f"- run: `{rescored['id']}`" in report and rescored["id"] != document["id"]
    assert "| ndcg\\_at\\_5 ↑ |" in report


def _summary(name: str, group: str, value: float | None, **more: Any) -> MetricSummary:
    return MetricSummary(
        name=name, group=group, value=value, n_scored=10, n_skipped=2, n_failed=1, **more
    )


def test_markdown_renders_intervals_and_targets_and_is_inert() -> None:
    hostile = "x|y `code` <script>alert(1)</script> [link](http://e.test) *b*"
    record = RunRecord(
        id="abc123",
        name=hostile,
        status="completed",
        created_at="2026-01-23T14:30:52+00:00",
        config={"perspectives": None, "suite": "full"},
        datasets=[hostile],
        question_count=12,
        scorecard=Scorecard(
            metrics=[
                _summary("recall_at_5", "retrieval", 0.75, ci_low=0.6, ci_high=0.9, coverage=0.9),
                _summary(
                    "latency_p95",
                    "performance",
                    812.5,
                    kind="duration",
                    aggregation="p95",
                    higher_is_better=False,
                ),
                _summary(hostile, "safety", None),
            ],
            by_group={
                "retrieval": ["recall_at_5"],
                "performance": ["latency_p95"],
                "safety": [hostile],
            },
        ),
        targets=[
            GoalResult(metric="recall_at_5", op=">", threshold=0.7, value=0.75, status="pass"),
            GoalResult(metric="mrr", op=">", threshold=0.5, value=0.4, status="fail"),
            GoalResult(metric=hostile, op="<", threshold=0.2, value=None, status="not_measured"),
        ],
    )
    text = render_markdown(record)
    assert "| recall\\_at\\_5 ↑ | 0.750 | 0.600 - 0.900 | 10 | 2 | 1 | 90% |" in text
    assert "| latency\\_p95 ↓ | 812.5 ms | - | 10 | 2 | 1 | - |" in text
    assert "| recall\\_at\\_5 | &gt; 0.7 | 0.750 | ✅ pass |" in text
    assert "| mrr | &gt; 0.5 | 0.400 | ❌ fail |" in text
    assert "not measured |" in text
    assert "## retrieval" in text and "## operational" in text and "## safety" in text
    assert "<script>" not in text and "`code`" not in text and "](http" not in text
    for line in text.splitlines():
        if line.startswith("|"):  # no cell is split by a pipe from the data
            assert line.replace("\\|", "").count("|") in (5, 8), line
    assert md_text("a|b") == "a\\|b" and md_text("<b>") == "&lt;b&gt;"
    assert md_text("two\nlines") == "two lines"


def test_a_perspective_asks_the_judge_only_for_its_metrics(tmp_path: Path) -> None:
    from tests.judges.servers import JudgeServer, smart_judge

    server = JudgeServer(smart_judge)
    try:
        args = eval_args(tmp_path, "--samples", "3", "--judge", f"{server.url}/v1#m")
        result = run(*args, "--perspective", "safety")
        assert result.exit_code == 0, result.output
        _, document = run_file(tmp_path / "out")
        assert set(document["scorecard"]["by_group"]) == {"safety"}
        assert server.requests == []  # no judged metric is in the safety perspective
    finally:
        server.close()


def test_target_values_read_as_their_metric_kind(tmp_path: Path) -> None:
    targets = tmp_path / "targets.yaml"
    targets.write_text(
        "numeric_fabrication_count: '< 1'\nlatency_p95: '< 5000'\nclaim_support_rate: '> 0.5'\n",
        encoding="utf-8",
    )
    args = eval_args(tmp_path, "--metrics", "grounding,performance", "--samples", "8")
    result = run(*args, "--targets", str(targets))
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line for line in result.output.splitlines() if line.strip()}
    assert "0.00 numbers" in rows["numeric_fabrication_count"]  # a count: its unit, 2 decimals
    assert re.search(r"< 5000\s+\d+\.\d ms", rows["latency_p95"])  # a duration: ms
    assert re.search(r"> 0\.5\s+\d\.\d{3}\s", rows["claim_support_rate"])  # a proportion
    markdown = next((tmp_path / "out").glob("*.md")).read_text(encoding="utf-8")
    assert "| numeric\\_fabrication\\_count | &lt; 1 | 0.00 numbers |" in markdown


def test_rescore_refuses_a_target_its_metrics_no_longer_compute(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text("recall_at_5: '> 0.5'\n")
    first = run(*eval_args(tmp_path, "--samples", "8", "--targets", str(tmp_path / "t.yaml")))
    assert first.exit_code == 0, first.output
    _, document = run_file(tmp_path / "out")
    again = run(
        "rescore", document["id"], "--store", str(tmp_path / "runs.db"), "--metrics", "lexical",
        "--output-dir", str(tmp_path / "again"),
    )  # fmt: skip
    assert again.exit_code == 2, again.output
    assert "recall_at_5" in again.output
    assert not (tmp_path / "again").exists()  # refused before anything was scored

"""Operational and indexing metrics (seed 004): timeout and empty-response rates, coverage by
document type, and the target's index statistics: checked, derived, fetched once per run from a
Python hook, stored (a named migration), kept by rescore and shown."""

from __future__ import annotations

import asyncio
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from ragmeter.config import EvalConfig, TargetConfig
from ragmeter.demo import DEMO_CORPUS
from ragmeter.metrics import MetricSettings, resolve_metrics, score_case
from ragmeter.metrics.operational import coverage_by_doc_type, doc_type
from ragmeter.models import Case, CaseResult, Response
from ragmeter.reports.console import print_run
from ragmeter.reports.operational import index_stats_line
from ragmeter.run_record import IndexStatsRecord
from ragmeter.runner.rescore import rescore
from ragmeter.runner.run import evaluate
from ragmeter.store.migrations import MIGRATIONS
from ragmeter.store.sqlite import RunStore
from ragmeter.targets.index_stats import failed, fetch_index_stats, not_reported, reported
from ragmeter.targets.python import PythonTarget
from ragmeter.targets.reference.index_stats import reference_index_stats
from ragmeter.targets.reference.pipeline import ReferencePipeline

METRICS = {m.name: m for m in resolve_metrics(["performance"], MetricSettings())}
CASE = Case(case_id="q1", question="What?")


def rate(metric: str, result: CaseResult) -> tuple[str, float | None]:
    found = score_case(METRICS[metric], CASE, result)
    return found.status, found.value


def ok(answer: str, **fields: Any) -> CaseResult:
    return CaseResult(
        case_id="q1", status="ok", response=Response.from_target({"answer": answer, **fields})
    )


def error(error_type: str) -> CaseResult:
    return CaseResult(case_id="q1", status="error", error_type=error_type)


# timeouts and empty answers ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("result", "timeout", "empty", "errored"),
    [
        (ok("27 days"), 0.0, 0.0, 0.0),
        (ok(""), 0.0, 1.0, 0.0),
        (ok("  \n\t "), 0.0, 1.0, 0.0),
        (ok("", abstained=True), 0.0, 0.0, 0.0),  # an explicit abstention is an answer
        (error("timeout"), 1.0, 0.0, 1.0),
        (error("case_timeout"), 1.0, 0.0, 1.0),
        (error("exception:TimeoutError"), 1.0, 0.0, 1.0),
        (error("http_5xx"), 0.0, 0.0, 1.0),
    ],
)
def test_timeout_empty_and_error_rates(
    result: CaseResult, timeout: float, empty: float, errored: float
) -> None:
    assert rate("timeout_rate", result) == ("ok", timeout)
    assert rate("empty_response_rate", result) == ("ok", empty)
    assert rate("error_rate", result) == ("ok", errored)


def test_seed_error_rate_is_error_plus_empty_over_all_cases() -> None:
    """Ten cases: 2 timeouts, 1 HTTP error, 2 empty answers -> error 0.3, timeout 0.2,
    empty 0.2, and seed 004's error rate (failed, timed out or empty) 0.5."""
    results = [error("timeout")] * 2 + [error("http_5xx")] + [ok("")] * 2 + [ok("fine")] * 5
    means = {
        name: sum(rate(name, r)[1] or 0.0 for r in results) / len(results)
        for name in ("error_rate", "timeout_rate", "empty_response_rate")
    }
    assert means == pytest.approx(
        {"error_rate": 0.3, "timeout_rate": 0.2, "empty_response_rate": 0.2}
    )
    assert means["error_rate"] + means["empty_response_rate"] == pytest.approx(0.5)


# coverage by document type ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("handbook/leave.md", "markdown"),
        ("specs/Manual.PDF", "pdf"),
        ("src/app.py", "code"),
        ("notes/readme.txt", "text"),
        ("site/index.html#intro", "html"),
        ("data/table.parquet", "parquet"),
        ("handbook/leave-policy", "(unknown)"),
        (None, "(unknown)"),
    ],
)
def test_doc_type(name: str | None, kind: str) -> None:
    assert doc_type(name) == kind


def test_coverage_by_doc_type_by_hand() -> None:
    def gold(doc: str, path: str) -> dict[str, str]:
        return {"doc_id": doc, "rel_path": path}

    cases = [
        Case(case_id="a", question="q", gold_passages=[gold("leave", "leave.md")]),
        Case(case_id="b", question="q", gold_passages=[gold("manual", "manual.pdf")]),
        Case(case_id="c", question="q", gold_passages=[gold("guide", "guide.pdf")]),
        Case(
            case_id="d",
            question="q",
            gold_passages=[gold("leave", "leave.md"), gold("manual", "manual.pdf")],
        ),
        Case(case_id="e", question="q"),  # no gold: left out
    ]
    results = [
        CaseResult(
            case_id="a",
            status="ok",
            response=Response.from_target({"answer": "x", "retrieved": [{"doc_id": "leave"}]}),
        ),
        CaseResult(
            case_id="b",
            status="ok",
            response=Response.from_target({"answer": " ", "retrieved": [{"doc_id": "leave"}]}),
        ),
        CaseResult(case_id="c", status="error", error_type="timeout"),
        CaseResult(
            case_id="d",
            status="ok",
            response=Response.from_target({"answer": "x", "retrieved": [{"doc_id": "manual"}]}),
        ),
        CaseResult(case_id="e", status="ok", response=Response(answer="x")),
    ]
    coverage = coverage_by_doc_type(cases, results)
    assert coverage == {
        "markdown": {
            "cases": 2,
            "errors": 0,
            "empty": 0,
            "retrieval_reported": 2,
            "gold_retrieved": 1,  # a found its markdown gold; d found only its pdf one
            "gold_retrieved_rate": 0.5,
        },
        "pdf": {
            "cases": 3,
            "errors": 1,
            "empty": 1,
            "retrieval_reported": 2,
            "gold_retrieved": 1,
            "gold_retrieved_rate": 0.5,
        },
    }


# index stats records ----------------------------------------------------------------------------
FULL_STATS: dict[str, Any] = {
    "documents": 40,
    "documents_without_chunks": 2,
    "chunks": 380,
    "chunks_attempted": 400,
    "chunks_skipped": {"context_length": 12, "empty": 8},
    "tokens_per_chunk": {"min": 8, "max": 512, "mean": 201.5, "p95": 480},
    "chunker_version": "headings-2",
    "embedding_model": "all-MiniLM-L6-v2",
    "index_version": "2025-06-01",
    "documents_by_type": {
        "markdown": {"documents": 30},
        "pdf": {"documents": 10, "without_chunks": 2},
    },
}


def test_reported_stats_and_derived_rates_by_hand() -> None:
    record = reported("GET /index/stats", FULL_STATS)
    assert record["status"] == "reported" and record["stats"] == FULL_STATS
    # 2 of 40 documents without chunks; 12 of 400 attempted chunks skipped for context length
    assert record["derived"] == {
        "no_chunks_rate": 0.05,
        "skipped_for_context_rate": 0.03,
        "no_chunks_rate_by_type": {"markdown": None, "pdf": 0.2},
    }
    # without chunks_attempted: chunks + every skipped chunk (380 + 20)
    partial = {key: value for key, value in FULL_STATS.items() if key != "chunks_attempted"}
    assert reported("x", partial)["derived"]["skipped_for_context_rate"] == 0.03


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ([1, 2], "index stats must be a JSON object, not list"),
        ({"documents": -1}, "documents: Input should be greater than or equal to 0"),
        ({"documents": True}, "documents: Value error, must be a number, not true/false"),
        ({"tokens_per_chunk": {"p95": float("nan")}}, "not plain JSON"),
        ({"blob": "x" * 200_000}, "larger than 100000 characters"),
    ],
)
def test_stats_outside_the_contract_are_a_failed_record(raw: Any, reason: str) -> None:
    record = reported("src", raw)
    assert record["status"] == "failed" and reason in record["reason"]


def test_secrets_in_stats_are_masked() -> None:
    record = reported("src", {"documents": 1, "db": {"password": "hunter2hunter2"}})
    assert "hunter2hunter2" not in str(record)


# the Python hook --------------------------------------------------------------------------------
@pytest.fixture
def module() -> Iterator[types.ModuleType]:
    made = types.ModuleType("ragmeter_index_hook_test")
    sys.modules[made.__name__] = made
    yield made
    del sys.modules[made.__name__]


def target_in(module: types.ModuleType) -> PythonTarget:
    def answer(question: str) -> dict[str, Any]:
        return {"answer": question, "policy_flags": [], "citations": []}

    answer.__module__ = module.__name__
    module.answer = answer  # type: ignore[attr-defined]
    return PythonTarget(TargetConfig(type="python"), function=answer)


def stats_of(target: Any) -> dict[str, Any] | None:
    return asyncio.run(fetch_index_stats(target, 2.0))


def test_python_hook_in_the_module(module: types.ModuleType) -> None:
    module.index_stats = lambda: {"documents": 3, "chunks": 9}  # type: ignore[attr-defined]
    record = stats_of(target_in(module))
    assert record is not None and record["status"] == "reported"
    assert record["source"] == "ragmeter_index_hook_test.index_stats()"
    assert record["stats"] == {"documents": 3, "chunks": 9}


def test_python_hook_async_none_error_and_absent(module: types.ModuleType) -> None:
    target = target_in(module)
    assert stats_of(target) == {
        "status": "not_reported",
        "source": "python",
        "reason": "no index_stats() beside the callable",
    }

    async def later() -> dict[str, int]:
        return {"documents": 1}

    module.index_stats = later  # type: ignore[attr-defined]
    assert (stats_of(target) or {})["stats"] == {"documents": 1}
    module.index_stats = lambda: None  # type: ignore[attr-defined]
    assert (stats_of(target) or {})["status"] == "not_reported"

    def broken() -> None:
        raise RuntimeError("index is locked")

    module.index_stats = broken  # type: ignore[attr-defined]
    record = stats_of(target) or {}
    assert record["status"] == "failed" and "RuntimeError: index is locked" in record["reason"]

    release = threading.Event()

    def slow() -> dict[str, int]:
        release.wait(300)  # a hook that hangs (let go once the check is done)
        return {}

    module.index_stats = slow  # type: ignore[attr-defined]
    try:
        record = asyncio.run(fetch_index_stats(target, 0.1)) or {}
    finally:
        release.set()
    assert record["status"] == "failed" and "no index stats within 0.1s" in record["reason"]


def test_python_hook_on_a_callable_object() -> None:
    class Pipeline:
        def __call__(self, question: str) -> str:
            return question

        def index_stats(self) -> dict[str, Any]:
            return {"index_version": "v7"}

    pipeline = Pipeline()
    for function in (pipeline, pipeline.__call__):
        target = PythonTarget(TargetConfig(type="python"), function=function)
        assert (stats_of(target) or {})["stats"] == {"index_version": "v7"}


def test_targets_without_the_method_give_none() -> None:
    assert stats_of(object()) is None


def test_reference_pipeline_stats() -> None:
    pipeline = ReferencePipeline.from_corpus(DEMO_CORPUS)
    raw = reference_index_stats(pipeline, DEMO_CORPUS)
    record = reported("reference", raw)
    assert record["status"] == "reported"
    files = list(DEMO_CORPUS.rglob("*.md"))
    assert raw["documents"] == len(files) and raw["chunks"] == len(pipeline.chunks)
    assert raw["documents_without_chunks"] == 0 and raw["chunks_skipped"] == {"context_length": 0}
    words = [len(chunk.text.split()) for chunk in pipeline.chunks]
    assert raw["tokens_per_chunk"]["min"] == min(words)
    assert raw["tokens_per_chunk"]["max"] == max(words)
    assert record["derived"]["no_chunks_rate"] == 0.0


# stored with the run, kept by rescore, shown ----------------------------------------------------
def hooked_answer(question: str) -> dict[str, Any]:
    return {"answer": question, "policy_flags": [], "citations": [{"chunk_id": "c#1"}]}


def index_stats() -> dict[str, Any]:
    return FULL_STATS


def test_stats_are_fetched_once_stored_rescored_and_shown(tmp_path: Path) -> None:
    calls: list[int] = []

    def counted() -> dict[str, Any]:
        calls.append(1)
        return FULL_STATS

    module = sys.modules[__name__]
    original = module.index_stats
    module.index_stats = counted  # type: ignore[attr-defined]
    try:
        config = EvalConfig(
            store=str(tmp_path / "runs.db"),
            output_dir=str(tmp_path / "out"),
            progress=False,
            metrics=["performance", "pipeline"],
            target=TargetConfig(type="python", callable=f"{__name__}:hooked_answer"),
        )
        cases = [Case(case_id=f"q{i}", question=f"q {i}", min_citations=1) for i in range(3)]
        outcome = evaluate(config, cases=cases)
    finally:
        module.index_stats = original  # type: ignore[attr-defined]
    assert len(calls) == 1
    stats = outcome.record.index_stats
    assert stats is not None and stats.status == "reported" and stats.stats == FULL_STATS
    assert stats.fetched_at
    assert outcome.run_file is not None and '"index_stats"' in outcome.run_file.read_text()
    scorecard = outcome.record.scorecard
    assert scorecard is not None and (scorecard.get("pipeline_pass_rate") or 0).value == 1.0

    store = RunStore(config.store)
    try:
        assert store.get_run(outcome.record.id).index_stats == stats
    finally:
        store.close()
    again = rescore(config.store, outcome.record.id, {}, str(tmp_path / "out"))
    assert again.record.index_stats == stats

    console = Console(width=200, record=True)
    print_run(outcome.record, console)
    text = console.export_text()
    assert "index stats (ragmeter" in text or "index stats (tests" in text
    assert "no-chunk rate 0.050" in text and "skipped for context 0.030" in text
    assert "tokens/chunk min/max/mean/p95 8/512/201.5/480" in text
    assert "index_version 2025-06-01" in text


def test_show_lines_for_failed_and_absent_stats() -> None:
    assert index_stats_line(None) is None
    absent = not_reported("GET /index/stats", "HTTP 404")
    assert index_stats_line(IndexStatsRecord.model_validate(absent)) is None
    line = index_stats_line(IndexStatsRecord.model_validate(failed("GET /index/stats", "HTTP 500")))
    assert line is not None and "failed" in line and "HTTP 500" in line


def test_migration_adds_the_index_stats_column(tmp_path: Path) -> None:
    assert "m006_runs_index_stats" in [m.name for m in MIGRATIONS]
    store = RunStore(tmp_path / "s.db")
    try:
        columns = {row[1] for row in store.db.execute("PRAGMA table_info(runs)")}
    finally:
        store.close()
    assert "index_stats_json" in columns

"""Audit fixes of the replay target and the response contract, driven through the real CLI:
no latency made up for a replay, confidence and rank checked, unused lines named, a line in
two forms refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from ragmeter.cli.main import main
from ragmeter.config import TargetConfig
from ragmeter.metrics.performance import NO_LATENCY
from ragmeter.models import Response
from ragmeter.targets.replay import ReplayTarget

CASES = [
    {
        "case_id": "a",
        "question": "What is alpha?",
        "reference_answer": "Alpha 42",
        "gold_passages": [{"doc_id": "d1", "chunk_id": "d1#a"}],
        "expected_outcome": "success",
    },
    {
        "case_id": "b",
        "question": "What is beta?",
        "reference_answer": "Beta 7",
        "gold_passages": [{"doc_id": "d2", "chunk_id": "d2#b"}],
        "expected_outcome": "success",
    },
]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text(
        "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows),
        encoding="utf-8",
    )
    return path


def run_eval(tmp_path: Path, replay: list[Any], *extra: str) -> Result:
    dataset = write_jsonl(tmp_path / "cases.jsonl", CASES)
    responses = write_jsonl(tmp_path / "replay.jsonl", replay)
    args = [
        "eval",
        "--no-progress",
        "--dataset",
        str(dataset),
        "--target",
        f"replay:{responses}",
        "--store",
        str(tmp_path / "runs.db"),
        "--output-dir",
        str(tmp_path / "out"),
        *extra,
    ]
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def run_document(tmp_path: Path) -> dict[str, Any]:
    [path] = (tmp_path / "out").glob("*.json")
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def metric(document: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(m for m in document["scorecard"]["metrics"] if m["name"] == name)
    return found


def case_of(document: dict[str, Any], case_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in document["cases"] if c["case_id"] == case_id)
    return found


# ---------------------------------------------------------------------------------------------
# 2. a replay without a recorded total has no latency


def test_a_replay_without_recorded_latency_has_its_latency_skipped(tmp_path: Path) -> None:
    replay = [
        {"case_id": "a", "response": {"answer": "Alpha 42", "latency_ms": {"retrieve": 5}}},
        {"case_id": "b", "answer": "Beta 7"},
    ]
    result = run_eval(tmp_path, replay, "--metrics", "performance")
    assert result.exit_code == 0, result.output
    document = run_document(tmp_path)
    for name in ("latency_p50", "latency_p95", "latency_p99"):
        summary = metric(document, name)
        assert (summary["value"], summary["n_scored"], summary["n_skipped"]) == (None, 0, 2)
    score = case_of(document, "a")["scores"]["latency_p95"]
    assert score["status"] == "skipped"
    assert score["reason"] == NO_LATENCY
    assert "replayed response recorded no latency" in NO_LATENCY
    assert NO_LATENCY.startswith("target did not report")  # it lowers coverage
    # the recorded stage is kept; no total is made up from the replay's own read time
    assert document["performance"]["latency_ms"] == {
        "retrieve": {"n": 1, "mean": 5.0, "p50": 5.0, "p95": 5.0, "p99": 5.0}
    }
    assert "latency" in document["weighted_score"]["missing"]
    # nor is the read time the case's wall time
    assert [case_of(document, c)["latency_ms"] for c in ("a", "b")] == [None, None]


def test_a_recorded_total_latency_is_the_replays_latency(tmp_path: Path) -> None:
    replay = [
        {"case_id": "a", "answer": "Alpha 42", "latency_ms": {"total": 120, "retrieve": 5}},
        {"case_id": "b", "response": {"answer": "Beta 7", "latency_ms": {"total": 80}}},
    ]
    result = run_eval(tmp_path, replay, "--metrics", "performance")
    assert result.exit_code == 0, result.output
    summary = metric(run_document(tmp_path), "latency_p50")
    # the median of 80 and 120 (linear interpolation)
    assert (summary["value"], summary["n_scored"]) == (100.0, 2)


def test_the_engine_adds_no_time_of_its_own_to_a_replayed_case(tmp_path: Path) -> None:
    import asyncio

    from ragmeter.models import Case
    from ragmeter.runner.executors import ask as ask_case

    lines = [
        {"case_id": "c1", "answer": "x"},
        {"case_id": "c2", "answer": "y", "latency_ms": {"total": 12.5, "retrieve": 5}},
        {"case_id": "c3", "error_type": "timeout", "error_message": "slow"},
    ]
    target = ReplayTarget(
        TargetConfig(type="replay", path=str(write_jsonl(tmp_path / "r.jsonl", lines)))
    )
    asked = {
        c: asyncio.run(ask_case(target, Case(case_id=c, question="q?"), 5.0))
        for c in ("c1", "c2", "c3")
    }
    assert asked["c1"].latency_ms is None and asked["c1"].response is not None
    assert asked["c1"].response.latency_ms == {}  # no reading time as the system's total
    assert asked["c2"].latency_ms == 12.5  # the recorded total
    assert (asked["c3"].status, asked["c3"].latency_ms) == ("error", None)


# ---------------------------------------------------------------------------------------------
# 3. and 4. confidence outside 0-1, a rank below 1


@pytest.mark.parametrize("confidence", [-7, 42, 1.5])
def test_a_replayed_confidence_outside_0_1_is_invalid_response(
    tmp_path: Path, confidence: float
) -> None:
    replay = [
        {"case_id": "a", "answer": "Alpha 42", "confidence": confidence},
        {"case_id": "b", "answer": "Beta 7", "confidence": 0.9},
    ]
    result = run_eval(tmp_path, replay, "--metrics", "pipeline")
    assert result.exit_code == 0, result.output
    document = run_document(tmp_path)
    bad, good = case_of(document, "a"), case_of(document, "b")
    assert bad["error_type"] == "invalid_response"
    assert "replay.jsonl:1: case a: field 'confidence'" in bad["error_message"]
    assert good["status"] == "ok"
    assert bad["scores"]["pipeline_outcome_match"]["status"] == "failed"


def test_a_rank_below_1_is_invalid_response_with_its_path(tmp_path: Path) -> None:
    chunks = [{"id": "x", "text": "other"}, {"id": "d1#a", "rank": 0, "text": "Alpha 42"}]
    replay = [
        {"case_id": "a", "response": {"answer": "Alpha 42", "retrieved": chunks}},
        {"case_id": "b", "answer": "Beta 7", "retrieved": [{"id": "d2#b", "rank": -1}]},
    ]
    result = run_eval(tmp_path, replay, "--metrics", "retrieval")
    # both cases failed: the run is stored and eval exits 3 with the summary (issue 29)
    assert result.exit_code == 3, result.output
    assert "every case failed (2 of 2): nothing measured" in result.output
    document = run_document(tmp_path)
    first, second = case_of(document, "a"), case_of(document, "b")
    assert first["error_type"] == second["error_type"] == "invalid_response"
    assert "field 'response.retrieved.1.rank'" in first["error_message"]
    assert "greater than or equal to 1" in first["error_message"]
    assert "field 'retrieved.0.rank'" in second["error_message"]
    assert first["scores"]["mrr"]["status"] == "failed"


def test_contract_values_at_the_edges_are_accepted() -> None:
    response = Response.from_target(
        {"answer": "a", "confidence": 0, "retrieved": [{"id": "x", "rank": 1}, {"id": "y"}]}
    )
    assert response.confidence == 0.0
    assert [c.rank for c in response.retrieved] == [1, 2]
    assert Response.from_target({"answer": "a", "confidence": 1}).confidence == 1.0


# ---------------------------------------------------------------------------------------------
# 8. lines no case asked for are named after the run


def test_replay_lines_that_match_no_case_are_named_in_a_warning(tmp_path: Path) -> None:
    replay = [
        {"case_id": "a", "answer": "Alpha 42"},
        {"case_id": "b", "answer": "Beta 7"},
        {"case_id": "zzz", "answer": "x"},
        {"case_id": "B", "answer": "x"},
        {"case_id": "evil\x1b[31m", "answer": "x"},
    ]
    result = run_eval(tmp_path, replay, "--metrics", "performance")
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, result.stderr
    assert "3 of the 5 lines" in warnings[0]
    assert "'zzz', 'B', 'evil\\x1b[31m'" in warnings[0]
    assert "\x1b" not in result.stderr
    assert run_document(tmp_path)["error_count"] == 0


def test_lines_left_by_a_run_that_stopped_are_not_called_mismatches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 30: after a disk-full stop the warning read as if the ids were misspelt
    import errno

    from ragmeter.config import EvalConfig
    from ragmeter.runner.run import evaluate
    from ragmeter.store.sqlite import RunStore

    saved = RunStore.save_result

    def full_after_one(self: RunStore, run_id: str, result: Any) -> None:
        if self.answered_case_ids(run_id):
            raise OSError(errno.ENOSPC, "No space left on device")
        saved(self, run_id, result)

    monkeypatch.setattr(RunStore, "save_result", full_after_one)
    third = {**CASES[1], "case_id": "c", "question": "What is gamma?"}
    dataset = write_jsonl(tmp_path / "cases.jsonl", [*CASES, third])
    replay = [{"case_id": case, "answer": "Alpha 42"} for case in ("a", "b", "c")]
    responses = write_jsonl(tmp_path / "replay.jsonl", replay)
    config = EvalConfig(
        datasets=[str(dataset)], store=str(tmp_path / "runs.db"), output_dir=str(tmp_path / "o"),
        target=TargetConfig(type="replay", path=str(responses)), metrics=["performance"],
        concurrency=1, progress=False,
    )  # fmt: skip
    with pytest.raises(OSError, match="No space left"):
        evaluate(config)
    stderr = capsys.readouterr().err
    assert "warning:" not in stderr and "check these ids" not in stderr
    assert "1 of the 3 lines" in stderr and "were not asked because the run stopped first" in stderr


def test_no_warning_when_every_line_is_used(tmp_path: Path) -> None:
    replay = [{"case_id": "a", "answer": "Alpha 42"}, {"case_id": "b", "answer": "Beta 7"}]
    result = run_eval(tmp_path, replay, "--metrics", "performance")
    assert result.exit_code == 0, result.output
    assert "warning:" not in result.stderr


# ---------------------------------------------------------------------------------------------
# 9. a line in both forms


def test_a_line_with_a_response_object_and_a_flat_answer_is_refused(tmp_path: Path) -> None:
    replay = [
        {"case_id": "a", "answer": "Alpha 42"},
        {"case_id": "b", "response": {"answer": "Beta 7"}, "answer": "something else"},
    ]
    result = run_eval(tmp_path, replay, "--metrics", "performance")
    assert result.exit_code == 2, result.output
    assert "replay.jsonl:2" in result.output
    assert "both a 'response' object and a flat 'answer'" in result.output
    assert "give one form" in result.output
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------
# 5. retrieved chunks without ids


def test_retrieved_chunks_without_ids_skip_the_chunk_level_metrics(tmp_path: Path) -> None:
    replay = [
        {"case_id": "a", "answer": "Alpha 42", "retrieved": [{"doc_id": "d1", "text": "Alpha 42"}]},
        {"case_id": "b", "answer": "Beta 7", "retrieved": [{"id": "d2#b", "doc_id": "d2"}]},
    ]
    result = run_eval(tmp_path, replay, "--metrics", "retrieval,trec")
    assert result.exit_code == 0, result.output
    document = run_document(tmp_path)
    no_ids, with_ids = case_of(document, "a")["scores"], case_of(document, "b")["scores"]
    for name in ("recall_at_5", "ndcg_at_5", "mrr", "ndcg", "bpref"):
        assert no_ids[name]["status"] == "skipped"
        assert no_ids[name]["reason"].startswith("target did not report chunk ids")
        assert with_ids[name] == 1.0

"""The reference pipeline evaluated three ways (HTTP server, Python callable, replay) gives the
same scores."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.config import EvalConfig, TargetConfig
from ragmeter.datasets import load_dataset
from ragmeter.demo import DEMO_CORPUS
from ragmeter.models import Response
from ragmeter.runner.run import evaluate
from ragmeter.targets.reference.pipeline import ReferencePipeline

pytestmark = pytest.mark.integration

PIPELINE = ReferencePipeline.from_corpus(DEMO_CORPUS)


def reference_answer(question: str) -> Response:
    return Response.model_validate(PIPELINE.answer(question))


def quality_scores(outcome_scores: list) -> dict[tuple[str, str], object]:
    return {
        (s.case_id, s.metric): (s.status, None if s.value is None else round(s.value, 12))
        for s in outcome_scores
        if not s.metric.startswith("latency")
    }


def test_http_python_and_replay_give_the_same_scores(reference_server: str, tmp_path: Path) -> None:
    cases = load_dataset("demo")
    store = str(tmp_path / "runs.db")
    out = str(tmp_path / "runs")

    http_run = evaluate(
        EvalConfig(
            store=store,
            output_dir=out,
            progress=False,
            target=TargetConfig(type="http", url=reference_server),
        ),
        cases=cases,
    )
    assert http_run.record.error_count == 0
    assert http_run.record.question_count == len(cases)
    assert http_run.record.config["target_info"]["models_info"]["retriever"] == "bm25"

    python_run = evaluate(
        EvalConfig(
            store=store,
            output_dir=out,
            progress=False,
            target=TargetConfig(type="python", callable=f"{__name__}:reference_answer"),
        ),
        cases=cases,
    )

    replay_file = tmp_path / "responses.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ragmeter",
            "export",
            http_run.record.id,
            "--store",
            store,
            "--format",
            "responses",
            "-o",
            str(replay_file),
        ],
        check=True,
        capture_output=True,
    )
    replay_run = evaluate(
        EvalConfig(
            store=store,
            output_dir=out,
            progress=False,
            target=TargetConfig(type="replay", path=str(replay_file)),
        ),
        cases=cases,
    )

    http_scores = quality_scores(http_run.scores)
    assert len(http_scores) > 10 * len(cases)
    assert quality_scores(python_run.scores) == http_scores
    assert quality_scores(replay_run.scores) == http_scores
    ok = [s for s in http_run.scores if s.metric == "recall_at_5" and s.status == "ok"]
    assert ok and 0.0 < sum(s.value or 0 for s in ok) / len(ok) <= 1.0


def test_cli_eval_over_http_writes_run_file(reference_server: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragmeter",
            "eval",
            "--target",
            reference_server,
            "--store",
            str(tmp_path / "r.db"),
            "--output-dir",
            str(tmp_path / "out"),
            "--samples",
            "12",
            "--seed",
            "7",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert "recall_at_5" in result.stdout
    [run_file] = (tmp_path / "out").glob("*.json")
    document = json.loads(run_file.read_text())
    assert document["question_count"] == 12
    assert document["error_count"] == 0
    assert len(document["cases"]) == 12
    assert document["config"]["target"]["url"] == reference_server
    assert {"id", "name", "created_at", "completed_at", "config", "datasets", "scorecard"} <= set(
        document
    )
    metric = document["scorecard"]["metrics"][0]
    assert {"name", "value", "group", "sample_size", "n_scored", "n_skipped", "n_failed"} <= set(
        metric
    )

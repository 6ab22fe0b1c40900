"""Repeats (issue 19): each case asked N times, per-case means feed the aggregates, the
bootstrap resamples cases, and the run reports within- against between-case variance. By hand,
by simulation (the cluster bootstrap's coverage), and through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragmeter.metrics.base import Metric
from ragmeter.models import Case, Score
from ragmeter.scoring.aggregate import aggregate_with_breakdowns
from ragmeter.scoring.compare import RunScores
from ragmeter.scoring.repeats import (
    base_ids,
    collapse,
    expand_repeats,
    first_answers,
    repeat_number,
)


def _zero(case: object, response: object) -> float:
    return 0.0


SCORE = Metric("quality", "generation", _zero, kind="proportion")


def test_expansion_ids_and_collapse_by_hand() -> None:
    cases = expand_repeats([Case(case_id="a", question="q?"), Case(case_id="b", question="q?")], 3)
    assert [c.case_id for c in cases] == ["a", "a~r2", "a~r3", "b", "b~r2", "b~r3"]
    assert [repeat_number(c.case_id) for c in cases] == [1, 2, 3, 1, 2, 3]
    assert [c.case_id for c in first_answers(cases)] == ["a", "b"]
    assert repeat_number("plan~rx") == 1 and repeat_number("~r2") == 1
    # a: 0.2, 0.4, 0.6 (mean 0.4, var 0.04); b: 1.0, 1.0, failed (mean 1.0, var 0)
    values = np.array([[0.2], [0.4], [0.6], [1.0], [1.0], [np.nan]])
    status = np.array([[0], [0], [0], [0], [0], [2]], dtype=np.int8)
    out = collapse([c.case_id for c in cases], values, status, base_ids(cases))
    assert out.case_ids == ["a", "b"] and out.repeats == 3
    assert out.values[:, 0] == pytest.approx([0.4, 1.0])
    assert out.within[0] == pytest.approx((0.04 + 0.0) / 2)
    assert out.between[0] == pytest.approx(np.var([0.4, 1.0], ddof=1))
    assert list(out.status[:, 0]) == [0, 0]


def _run(rng: np.random.Generator, n: int, repeats: int, truth: float) -> tuple[float, float]:
    base = [Case(case_id=f"c{i}", question="q?") for i in range(n)]
    cases = expand_repeats(base, repeats)
    effects = rng.normal(0, 0.1, n)
    scores = [
        Score(case.case_id, "quality", truth + effects[i // repeats] + rng.normal(0, 0.5))
        for i, case in enumerate(cases)
    ]
    card, _ = aggregate_with_breakdowns(scores, [SCORE], cases, resamples=400, seed=1)
    summary = card.get("quality")
    assert summary is not None and summary.n_scored == n  # cases, not answers
    assert summary.ci_low is not None and summary.ci_high is not None
    return summary.ci_low, summary.ci_high


def test_cluster_bootstrap_reaches_nominal_coverage_with_noisy_repeats() -> None:
    rng = np.random.default_rng(5)
    runs = 200
    covered = sum(lo <= 0.5 <= hi for lo, hi in (_run(rng, 40, 3, 0.5) for _ in range(runs)))
    # nominal 95%; the percentile bootstrap at n = 40 runs a little under: 3 standard errors
    assert covered / runs >= 0.95 - 3 * np.sqrt(0.05 * 0.95 / runs)


def test_run_scores_pair_cases_not_answers() -> None:
    from ragmeter.models import RunRecord

    record = RunRecord(id="r", name="r", created_at="", config={}, datasets=[])
    scores = RunScores(record, {"quality": {"a": 0.2, "a~r2": 0.4, "b": 1.0, "b~r2": 0.0}})
    assert scores.values["quality"] == pytest.approx({"a": 0.3, "b": 0.5})


NOISY = """
import random

_rng = random.Random(3)

def answer(question: str) -> dict:
    words = ["Paris", "Lyon", "Nice", "the capital"]
    return {"answer": " ".join(_rng.sample(words, 2)), "retrieved": []}
"""


def test_repeats_through_the_cli(tmp_path: Path) -> None:
    (tmp_path / "noisy.py").write_text(NOISY, encoding="utf-8")
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "".join(
            json.dumps(
                {"id": f"q{i}", "question": "Capital of France?", "reference_answer": "Paris"}
            )
            + "\n"
            for i in range(12)
        )
    )
    (tmp_path / "ragmeter.yaml").write_text("repeats: 3\n", encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable, "-m", "ragmeter", "eval", "--config", "ragmeter.yaml",
            "--dataset", str(cases), "--target", "noisy.py:answer", "--metrics", "lexical",
            "--store", "runs.db", "--output-dir", "out", "--no-progress", "-v",
        ],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode in (0, 4), done.stdout + done.stderr
    assert "Repeats: 3 answers per case" in done.stdout
    (run_file,) = (tmp_path / "out").glob("*.json")
    document = json.loads(run_file.read_text(encoding="utf-8"))
    assert document["question_count"] == 36  # every answer stored
    f1 = next(m for m in document["scorecard"]["metrics"] if m["name"] == "token_f1")
    assert f1["n_scored"] == 12 and f1["repeats"] == 3  # cases, not answers
    assert f1["within_case_var"] > 0.0  # the system's own noise is measured
    per_answer = [
        case["scores"]["token_f1"] for case in document["cases"] if "token_f1" in case["scores"]
    ]
    assert f1["value"] == pytest.approx(float(np.mean(per_answer)), abs=1e-4)  # equal repeats

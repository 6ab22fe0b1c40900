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
from ragmeter.repeat_ids import REPEAT_KEY, expand_repeats, repeat_number
from ragmeter.scoring.aggregate import aggregate_with_breakdowns
from ragmeter.scoring.compare import CaseValues
from ragmeter.scoring.repeats import collapse


def _zero(case: object, response: object) -> float:
    return 0.0


SCORE = Metric("quality", "generation", _zero, kind="proportion")


def test_expansion_ids_and_collapse_by_hand() -> None:
    cases = expand_repeats([Case(case_id="a", question="q?"), Case(case_id="b", question="q?")], 3)
    assert [c.case_id for c in cases] == ["a", "a~r2", "a~r3", "b", "b~r2", "b~r3"]
    assert [repeat_number(c.case_id) for c in cases] == [1, 2, 3, 1, 2, 3]
    assert [c.metadata.get(REPEAT_KEY) for c in cases] == [None, "a", "a", None, "b", "b"]
    assert repeat_number("plan~rx") == 1 and repeat_number("~r2") == 1
    # a: 0.2, 0.4, 0.6 (mean 0.4, var 0.04); b: 1.0, 1.0, failed (mean 1.0, var 0)
    values = np.array([[0.2], [0.4], [0.6], [1.0], [1.0], [np.nan]])
    status = np.array([[0], [0], [0], [0], [0], [2]], dtype=np.int8)
    base_of = {"a": "a", "a~r2": "a", "a~r3": "a", "b": "b", "b~r2": "b", "b~r3": "b"}
    out = collapse([c.case_id for c in cases], values, status, base_of)
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
    from ragmeter.run_record import RunRecord

    record = RunRecord(id="r", name="r", created_at="", config={}, datasets=[])
    scores = CaseValues(record, {"quality": {"a": 0.2, "a~r2": 0.4, "b": 1.0, "b~r2": 0.0}})
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


def _naive_and_cluster(rng: np.random.Generator) -> tuple[bool, bool]:
    """Between-case sd 0.5, within 0.1: resampling answers as if independent is too narrow."""
    n, repeats, truth = 40, 3, 0.5
    base = [Case(case_id=f"c{i}", question="q?") for i in range(n)]
    cases = expand_repeats(base, repeats)
    effects = rng.normal(0, 0.5, n)
    values = [truth + effects[i // repeats] + rng.normal(0, 0.1) for i in range(len(cases))]
    scores = [Score(c.case_id, "quality", v) for c, v in zip(cases, values, strict=True)]
    cluster, _ = aggregate_with_breakdowns(scores, [SCORE], cases, resamples=400, seed=1)
    flat = [Case(case_id=c.case_id, question="q?") for c in cases]  # repeats ignored
    naive, _ = aggregate_with_breakdowns(scores, [SCORE], flat, resamples=400, seed=1)
    found = []
    for card in (naive, cluster):
        summary = card.get("quality")
        assert summary is not None and summary.ci_low is not None and summary.ci_high is not None
        found.append(summary.ci_low <= truth <= summary.ci_high)
    return found[0], found[1]


def test_resampling_answers_under_covers_where_the_cluster_bootstrap_holds() -> None:
    rng = np.random.default_rng(9)
    runs = 200
    results = [_naive_and_cluster(rng) for _ in range(runs)]
    naive = sum(r[0] for r in results) / runs
    cluster = sum(r[1] for r in results) / runs
    assert naive < 0.85  # about 0.75 expected: the answers of a case are not independent
    assert cluster >= 0.95 - 3 * np.sqrt(0.05 * 0.95 / runs)


def test_repeats_keep_failures_and_coverage_per_answer() -> None:
    base = [Case(case_id=f"c{i}", question="q?") for i in range(4)]
    cases = expand_repeats(base, 3)
    scores = [Score(c.case_id, "quality", 1.0) for c in cases]
    scores[1] = Score("c0~r2", "quality", None, "failed", "judge reply malformed")
    for i in (9, 10, 11):  # every answer of c3 failed
        scores[i] = Score(cases[i].case_id, "quality", None, "failed", "timeout")
    for policy, n_scored in (("exclude", 3), ("zero", 4)):
        card, _ = aggregate_with_breakdowns(scores, [SCORE], cases, resamples=100, failed_as=policy)
        summary = card.get("quality")
        assert summary is not None
        assert (summary.n_scored, summary.n_failed) == (n_scored, 4)  # cases; failed answers
        assert summary.coverage == pytest.approx(8 / 12)  # 8 of 12 answers measured


def test_a_binary_metric_with_repeats_is_compared_on_its_case_means() -> None:
    from ragmeter.run_record import MetricSummary, RunRecord, Scorecard
    from ragmeter.scoring.compare import compare_runs

    def run(run_id: str, second_wrong: bool) -> CaseValues:
        values = {}
        for i in range(40):
            values[f"c{i}"] = 1.0
            values[f"c{i}~r2"] = 0.0 if second_wrong else 1.0
            values[f"c{i}~r3"] = 1.0
        summary = MetricSummary(
            name="hit", group="retrieval", value=0.9, n_scored=40, n_skipped=0, n_failed=0,
            kind="binary",
        )  # fmt: skip
        card = Scorecard(metrics=[summary], by_group={"retrieval": ["hit"]})
        record = RunRecord(id=run_id, name=run_id, created_at="", config={}, datasets=[])
        record.scorecard = card
        return CaseValues(record, {"hit": values})

    (row,) = compare_runs(run("base", False), run("cand", True), resamples=2000).rows
    assert row.test == "sign_flip_permutation"  # case means of 2/3 are not 0/1
    assert row.mean_diff == pytest.approx(-1 / 3) and row.verdict == "regression"


def test_run_level_statistics_ignore_repeats_of_the_same_answers() -> None:
    from ragmeter.metrics.base import MetricSettings
    from ragmeter.metrics.context import context_metrics
    from ragmeter.models import CaseResult, Response, RetrievedChunk
    from ragmeter.runner.scoring import score_results

    chunks = [
        RetrievedChunk(id="a", text="Refunds take five business days."),
        RetrievedChunk(id="b", text="Refunds take five days for card payments."),
    ]
    other = [RetrievedChunk(id="c", text="Parking costs forty euros a month.")]
    base = [Case(case_id="q1", question="q?"), Case(case_id="q2", question="q?")]
    answers = {"q1": chunks, "q2": other + chunks[:1]}

    def tfidf(cases: list[Case]) -> float | None:
        metrics = [m for m in context_metrics(MetricSettings()) if m.name == "redundancy_tfidf"]
        results = [
            CaseResult(
                case_id=c.case_id,
                status="ok",
                response=Response(answer="x", retrieved=answers[c.case_id.partition("~")[0]]),
            )
            for c in cases
        ]
        scores = score_results(cases, results, metrics)
        return next(s.value for s in scores if s.case_id == "q1")

    assert tfidf(expand_repeats(base, 3)) == pytest.approx(tfidf(base))

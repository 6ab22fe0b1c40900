"""Compare, Pareto and the CI gates (real ``ragmeter`` subprocesses on the demo)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.datasets import load_dataset
from ragmeter.run_record import MetricSummary, RunRecord, Scorecard
from ragmeter.scoring.compare import CaseValues, compare_runs
from ragmeter.scoring.pareto import ParetoPoint, pareto_frontier


def test_pareto_on_hand_made_points() -> None:
    points = [
        ParetoPoint("best", 0.9, cost=0.010, latency=900),
        ParetoPoint("cheap", 0.7, cost=0.001, latency=800),
        ParetoPoint("fast", 0.6, cost=0.005, latency=100),
        ParetoPoint("worse", 0.6, cost=0.006, latency=200),  # dominated by fast
        ParetoPoint("copy", 0.9, cost=0.010, latency=900),  # ties best: neither dominates
        ParetoPoint("unscored", None, cost=0.0, latency=0),
    ]
    marked, dropped = pareto_frontier(points)
    frontier = {p.run_id for p in marked if p.on_frontier}
    assert frontier == {"best", "cheap", "fast", "copy"}
    assert next(p for p in marked if p.run_id == "worse").dominated_by == ["fast"]
    assert dropped == []
    no_cost = [ParetoPoint("a", 0.5, None, 10), ParetoPoint("b", 0.6, 0.1, 20)]
    marked, dropped = pareto_frontier(no_cost)
    assert dropped == ["cost"]
    assert all(p.on_frontier for p in marked)  # a is faster, b is better


def _run(run_id: str, values: dict[str, dict[str, float]], units: dict[str, str]) -> CaseValues:
    summaries = [
        MetricSummary(
            name=name,
            group="performance" if name in units else "retrieval",
            value=sum(v.values()) / len(v),
            unit=units.get(name),
            higher_is_better=name not in units,
            n_scored=len(v),
            n_skipped=0,
            n_failed=0,
        )
        for name, v in values.items()
    ]
    card = Scorecard(metrics=summaries, by_group={})
    record = RunRecord(
        id=run_id, name=run_id, created_at="", config={}, datasets=[], scorecard=card
    )
    return CaseValues(record, values)


def test_compare_runs_flags_only_significant_regressions_beyond_the_margin() -> None:
    cases = [f"c{i}" for i in range(60)]
    base = _run(
        "base",
        {
            "hit": {c: 1.0 for c in cases},
            "score": {c: 0.5 + (i % 5) / 10 for i, c in enumerate(cases)},
            "tiny": {c: 0.5 + (i % 5) / 10 for i, c in enumerate(cases)},
            "latency_p50": {c: 100.0 + i for i, c in enumerate(cases)},
        },
        {"latency_p50": "ms"},
    )
    cand = _run(
        "cand",
        {
            "hit": {c: 0.0 if i < 12 else 1.0 for i, c in enumerate(cases)},
            "score": {c: 0.4 + (i % 5) / 10 for i, c in enumerate(cases)},
            "tiny": {c: 0.49 + (i % 5) / 10 for i, c in enumerate(cases)},  # below the margin
            "latency_p50": {c: 300.0 + i for i, c in enumerate(cases)},
        },
        {"latency_p50": "ms"},
    )
    result = compare_runs(base, cand, alpha=0.05, margin=0.02, resamples=2000)
    rows = {row.metric: row for row in result.rows}
    assert rows["hit"].test == "mcnemar_exact" and rows["hit"].verdict == "regression"
    assert len(rows["hit"].pass_to_fail) == 12 and rows["hit"].p_value == pytest.approx(2 * 0.5**12)
    assert rows["score"].test == "sign_flip_permutation" and rows["score"].verdict == "regression"
    assert rows["tiny"].verdict == "worse"  # significant but within the margin
    assert rows["latency_p50"].verdict == "worse" and not rows["latency_p50"].gated
    assert [r.metric for r in result.regressions] == ["hit", "score"]
    assert compare_runs(base, base).regressions == []
    gated = compare_runs(base, cand, gate_performance=True, resamples=2000)
    assert "latency_p50" in [r.metric for r in gated.regressions]
    with pytest.raises(ValueError, match="not in both runs"):
        compare_runs(base, cand, metrics=["nope"])


def _ragmeter(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _eval(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], str]:
    result = _ragmeter("eval", "--no-progress", *args, cwd=tmp_path)
    runs = (
        json.loads(_ragmeter("show", "--json", _latest(tmp_path), cwd=tmp_path).stdout or "{}")
        if result.returncode in (0, 4)
        else {}
    )
    return result, runs.get("id", "")


def _latest(tmp_path: Path) -> str:
    files = sorted(
        (tmp_path / ".ragmeter" / "runs").glob("*.json"), key=lambda p: p.stat().st_mtime
    )
    return files[-1].name.split("_")[0]


def test_eval_gate_exit_codes_on_the_demo(tmp_path: Path) -> None:
    failing = tmp_path / "failing.yaml"
    failing.write_text("targets:\n  recall_at_5: '> 0.99'\n  cost_per_query: '< 0.01'\n")
    passing = tmp_path / "passing.yaml"
    passing.write_text(
        "- recall_at_5 > 0.7\n- ndcg_at_5 > 0.6\n- injection_auc > 0.85 optional\n"
        "- {metric: injection_tpr_at_fpr_1, op: '>', value: 0.7, optional: true}\n"
    )
    unmeasured = tmp_path / "unmeasured.yaml"
    unmeasured.write_text("- recall_at_5 > 0.7\n- cost_per_query < 0.01\n")
    # a --targets file replaces the default table: those runs compute only the families its
    # targets name (recall_at_5, ndcg_at_5: retrieval; cost_per_query: performance;
    # injection_*: injection); the default table's gate below stays a full eval
    retrieval_cost = ("--metrics", "retrieval,performance")
    result, _ = _eval(tmp_path, *retrieval_cost, "--targets", str(failing), "--gate")
    assert result.returncode == 4, result.stderr
    assert "recall_at_5" in result.stderr and "not measured" in result.stdout
    stored = json.loads(_ragmeter("show", "--json", _latest(tmp_path), cwd=tmp_path).stdout)
    assert stored["status"] == "completed"  # stored before the gate fails
    assert {t["status"] for t in stored["goals"]} == {"fail", "not_measured"}
    assert set(stored["breakdowns"]) == {"category", "difficulty", "answerable"}
    retrieval_safety = ("--metrics", "retrieval,injection")
    result, _ = _eval(tmp_path, *retrieval_safety, "--targets", str(passing), "--gate")
    assert result.returncode == 0, result.stdout + result.stderr
    # a required target that no case measured fails the gate: nothing passes on no evidence
    result, _ = _eval(tmp_path, *retrieval_cost, "--targets", str(unmeasured), "--gate")
    assert result.returncode == 4 and "not measured" in result.stderr, result.stderr
    assert "cost_per_query" in result.stderr
    result, _ = _eval(tmp_path, "--gate")  # the default table: safety targets are optional
    assert result.returncode == 0, result.stdout + result.stderr
    result, _ = _eval(tmp_path, *retrieval_cost, "--targets", str(failing))
    assert result.returncode == 0  # no --gate: report only


def test_compare_fail_on_regression_and_eval_baseline(tmp_path: Path) -> None:
    # every run computes the same families: retrieval (recall_at_5, hit_rate_at_5, the
    # regression --top-k 1 causes) and performance (the Pareto's latency)
    metrics = ("--metrics", "retrieval,performance")
    good, good_id = _eval(tmp_path, *metrics)
    assert good.returncode == 0, good.stderr
    worse, worse_id = _eval(tmp_path, *metrics, "--top-k", "1")
    assert worse.returncode == 0, worse.stderr
    result = _ragmeter("compare", good_id, worse_id, "--fail-on-regression", cwd=tmp_path)
    assert result.returncode == 4, result.stdout + result.stderr
    assert "REGRESSED" in result.stdout and "recall_at_5" in result.stderr
    assert _ragmeter("compare", good_id, worse_id, cwd=tmp_path).returncode == 0
    same = _ragmeter("compare", good_id, good_id, "--fail-on-regression", "--pareto", cwd=tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "Pareto" in same.stdout
    as_json = json.loads(
        _ragmeter(
            "compare", good_id, worse_id, "--json", "--metric", "hit_rate_at_5", cwd=tmp_path
        ).stdout
    )
    row = as_json["comparisons"][0]["rows"][0]
    assert row["test"] == "mcnemar_exact" and row["pass_to_fail"]
    # a fresh run of the worse system against the good run file as baseline
    run_file = next((tmp_path / ".ragmeter" / "runs").glob(f"{good_id}_*.json"))
    result = _ragmeter(
        "eval", "--no-progress", *metrics, "--top-k", "1", "--baseline", str(run_file),
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 4, result.stdout + result.stderr
    result = _ragmeter("eval", "--no-progress", *metrics, "--baseline", good_id, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_show_by_and_stats(tmp_path: Path) -> None:
    # recall_at_5, the only metric named: the retrieval family
    result, run_id = _eval(tmp_path, "--metrics", "retrieval", "--breakdown", "tags")
    assert result.returncode == 0
    shown = _ragmeter("show", run_id, "--by", "tags", "--metric", "recall_at_5", cwd=tmp_path)
    assert shown.returncode == 0 and "Breakdown by tags" in shown.stdout
    computed = _ragmeter("show", run_id, "--by", "query_type", cwd=tmp_path)
    assert computed.returncode == 0, computed.stderr
    bad = _ragmeter("show", run_id, "--by", "colour", cwd=tmp_path)
    assert bad.returncode == 2 and "metadata.FIELD" in bad.stderr
    stats = json.loads(_ragmeter("stats", run_id, "--json", cwd=tmp_path).stdout)
    demo = len(load_dataset("demo"))
    assert stats["run"]["cases"] == demo and stats["dataset"]["cases"] == demo
    assert "recall_at_5" in stats["run"]["metric_coverage"]
    assert _ragmeter("stats", cwd=tmp_path).returncode == 0

"""The audit's fixes at the unit level, with hand-computed values: coverage and one-sided
metrics in a comparison, flips of lower-is-better metrics, float noise as no spread, and a
Pareto point under the coverage floor."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter.errors import InputError
from ragmeter.run_record import MetricSummary, RunRecord, Scorecard
from ragmeter.scoring.compare import CaseValues, compare_runs
from ragmeter.scoring.pareto import ParetoPoint, pareto_frontier
from ragmeter.scoring.power import has_spread, minimum_detectable_effect
from ragmeter.scoring.stats import cohens_dz

CASES = [f"c{i:02d}" for i in range(1, 13)]


def _run(
    run_id: str,
    values: dict[str, dict[str, float]],
    lower: tuple[str, ...] = (),
    missed: dict[str, set[str]] | None = None,
    status: str = "completed",
) -> CaseValues:
    summaries = [
        MetricSummary(
            name=name,
            group="performance" if name == "error_rate" else "retrieval",
            value=sum(v.values()) / len(v) if v else None,
            higher_is_better=name not in lower,
            kind="binary",
            n_scored=len(v),
            n_skipped=0,
            n_failed=len((missed or {}).get(name, set())),
        )
        for name, v in values.items()
    ]
    card = Scorecard(metrics=summaries, by_group={}) if status == "completed" else None
    record = RunRecord(
        id=run_id, name=run_id, created_at="", config={}, datasets=[], scorecard=card,
        status=status,
    )  # fmt: skip
    scores = CaseValues(record, values)
    scores.missed = missed or {}
    return scores


def test_coverage_under_the_floor_is_a_gate_failure() -> None:
    base = _run("base", {"hit": dict.fromkeys(CASES, 1.0)})
    cand = _run("cand", {"hit": dict.fromkeys(CASES[:3], 1.0)}, missed={"hit": set(CASES[3:])})
    comparison = compare_runs(base, cand, resamples=200)
    (row,) = comparison.rows
    assert (row.n_paired, row.coverage, row.verdict) == (3, 0.25, "no_difference")
    assert comparison.gate_failures == [
        (
            "hit",
            "paired on 3 of 12 cases (coverage 0.25 < floor 0.90; the others failed or were "
            "not reported)",
        )
    ]
    # 11 of 12 paired: coverage 0.9167 >= 0.9
    cand = _run("cand", {"hit": dict.fromkeys(CASES[:11], 1.0)}, missed={"hit": {"c12"}})
    assert compare_runs(base, cand, resamples=200).gate_failures == []


def test_nothing_paired_is_a_gate_failure_and_nothing_measured_is_not() -> None:
    base = _run("base", {"hit": dict.fromkeys(CASES, 1.0), "never": {}, "error_rate": {}})
    cand = _run(
        "cand",
        {"hit": {}, "never": {}, "error_rate": dict.fromkeys(CASES, 1.0)},
        missed={"hit": set(CASES), "never": set(CASES)},
    )
    base.values["error_rate"] = dict.fromkeys(CASES, 0.0)
    comparison = compare_runs(base, cand, resamples=200)
    rows = {row.metric: row for row in comparison.rows}
    assert rows["hit"].verdict == "not_paired"
    assert rows["hit"].coverage == 0.0
    assert rows["never"].gate_failure is None  # measured in neither run
    assert rows["error_rate"].gate_failure is None  # performance: not gated
    assert comparison.gate_failures == [
        ("hit", "not paired: no case scored in both runs (12 failed or not reported)")
    ]


def test_a_gated_baseline_metric_missing_from_the_candidate_fails() -> None:
    base = _run("base", {"hit": dict.fromkeys(CASES, 1.0), "f1": dict.fromkeys(CASES, 0.5)})
    cand = _run("cand", {"f1": dict.fromkeys(CASES, 0.5), "extra": dict.fromkeys(CASES, 0.0)})
    comparison = compare_runs(base, cand, resamples=200)
    assert [row.metric for row in comparison.rows] == ["f1"]
    assert [(m.metric, m.value) for m in comparison.only_in_baseline] == [("hit", 1.0)]
    assert [(m.metric, m.value) for m in comparison.only_in_candidate] == [("extra", 0.0)]
    assert comparison.gate_failures == [
        ("hit", "measured in the baseline, missing from the candidate")
    ]


def test_unfinished_and_disjoint_runs_are_refused() -> None:
    base = _run("base", {"hit": dict.fromkeys(CASES, 1.0)})
    running = _run("late", {"hit": {"c01": 1.0}}, status="interrupted")
    with pytest.raises(InputError, match=r"run late has no scorecard \(status interrupted\)"):
        compare_runs(base, running, resamples=200)
    other = _run("other", {"hit": {"x01": 1.0, "x02": 0.0}})
    with pytest.raises(InputError, match="share no case"):
        compare_runs(base, other, resamples=200, require_shared=True)
    assert compare_runs(base, other, resamples=200).n_shared_cases == 0  # the web's view


def test_flips_of_a_lower_is_better_metric() -> None:
    # error_rate 0 -> 1 on c01, c02 (worse), 1 -> 0 on c03 (better)
    base_errors = {c: 1.0 if c == "c03" else 0.0 for c in CASES}
    cand_errors = {c: 1.0 if c in ("c01", "c02") else 0.0 for c in CASES}
    base = _run("base", {"error_rate": base_errors}, lower=("error_rate",))
    cand = _run("cand", {"error_rate": cand_errors}, lower=("error_rate",))
    (row,) = compare_runs(base, cand, resamples=200).rows
    assert row.pass_to_fail == ["c01", "c02"]
    assert row.fail_to_pass == ["c03"]
    assert row.p_value == 1.0  # McNemar b=2, c=1: min(1, 2 * P(X <= 1 | n=3)) = 2 * 4/8


def test_float_noise_is_no_spread() -> None:
    # 0.2 computed three ways: the standard deviation is float noise (about 1.6e-17)
    values = np.array([0.1 + 0.1, 0.2, 0.3 - 0.1] * 4)
    assert 0.0 < float(np.std(values, ddof=1)) < 1e-15
    assert not has_spread(float(np.std(values, ddof=1)), 0.2)
    assert has_spread(1e-6, 0.2)  # a real, small spread
    assert not has_spread(5e-12, 10.0)  # relative: 1e-12 x 10
    assert minimum_detectable_effect(values, values, 0.05) is None
    assert minimum_detectable_effect(values, values[::-1].copy(), 0.05) is None
    assert cohens_dz(values - 0.2) is None
    # a real spread still gives one: sd 0.5 of 0/1 differences over 4 cases, level 0.05
    detectable = minimum_detectable_effect(np.zeros(4), np.array([0.0, 1.0, 0.0, 1.0]), 0.05)
    assert detectable is not None
    assert detectable.mde == pytest.approx((1.959964 + 0.841621) * (1 / np.sqrt(3)) / 2, 1e-5)


def test_a_point_under_the_floor_dominates_none() -> None:
    points = [
        ParetoPoint("a", 0.9, cost=0.001, latency=10),
        ParetoPoint("b", 0.7, cost=0.001, latency=10),
        ParetoPoint("e", 1.0, cost=0.001, latency=10, comparable=False, note="7 of 12"),
    ]
    marked, _ = pareto_frontier(points)
    by_id = {p.run_id: p for p in marked}
    assert by_id["a"].on_frontier and by_id["a"].dominated_by == []
    assert by_id["b"].dominated_by == ["a"]
    assert not by_id["e"].on_frontier and by_id["e"].dominated_by == []


def test_a_detector_without_a_value_in_either_run_does_not_fail_the_gate() -> None:
    def detector_run(run_id: str) -> CaseValues:
        # every case benign: the attack scores exist, the AUC does not (one class)
        summary = MetricSummary(
            name="injection_auc", group="safety", value=None, aggregation="auc", kind="score",
            n_scored=12, n_skipped=0, n_failed=0,
        )  # fmt: skip
        record = RunRecord(
            id=run_id, name=run_id, created_at="", config={}, datasets=[],
            scorecard=Scorecard(metrics=[summary], by_group={}), status="completed",
        )  # fmt: skip
        scores = CaseValues(record, {"injection_auc": dict.fromkeys(CASES, 0.1)})
        scores.labels = {"injection_auc": dict.fromkeys(CASES, False)}
        return scores

    comparison = compare_runs(detector_run("a"), detector_run("b"), resamples=100)
    (row,) = comparison.rows
    assert row.verdict == "not_paired"  # nothing to test
    assert row.gate_failure is None and comparison.gate_failures == []

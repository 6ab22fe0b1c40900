"""Many metrics at once and how big a change a run can see (issue 19): Holm and
Benjamini-Hochberg by hand and as properties, the family-wise false-alarm rate of ``compare``
over 50 metrics simulated under no difference, the MDE against simulated power, and
``ragmeter plan`` through the real CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.run_record import MetricSummary, RunRecord, Scorecard
from ragmeter.runfile import RunFile
from ragmeter.scoring.compare import CaseValues, compare_runs
from ragmeter.scoring.power import (
    adjust_p_values,
    cases_needed,
    minimum_detectable_effect,
    per_metric_level,
)
from ragmeter.scoring.stats import sign_flip_test


def test_corrections_by_hand() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm: sorted 0.005 x4 = 0.02, 0.01 x3 = 0.03, 0.03 x2 = 0.06, 0.04 x1 -> max(0.06, 0.04)
    assert adjust_p_values(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: 0.005 x4/1 = 0.02, 0.01 x4/2 = 0.02, 0.03 x4/3 = 0.04, 0.04 x4/4 = 0.04, step-up
    assert adjust_p_values(p, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert adjust_p_values(p, "none") == p
    assert adjust_p_values([], "holm") == []
    assert adjust_p_values([0.5, 0.9], "holm") == [1.0, 1.0]  # capped at 1


@settings(deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30))
def test_corrections_keep_order_and_bounds(p: list[float]) -> None:
    holm, bh = adjust_p_values(p, "holm"), adjust_p_values(p, "bh")
    for raw, h, b in zip(p, holm, bh, strict=True):
        assert raw <= b + 1e-12 and b <= h + 1e-12 and h <= 1.0  # BH never stricter than Holm
    order = sorted(range(len(p)), key=lambda i: p[i])
    for adjusted in (holm, bh):
        ranked = [adjusted[i] for i in order]
        assert ranked == sorted(ranked)  # a smaller p never gets a larger adjusted p


def _runs(values: dict[str, tuple[list[float], list[float]]]) -> tuple[CaseValues, CaseValues]:
    def one(run_id: str, side: int) -> CaseValues:
        per_case = {
            name: {f"c{i}": v for i, v in enumerate(pair[side])} for name, pair in values.items()
        }
        card = Scorecard(
            metrics=[
                MetricSummary(
                    name=name,
                    group="generation",
                    value=float(np.mean(list(cases.values()))),
                    higher_is_better=True,
                    n_scored=len(cases),
                    n_skipped=0,
                    n_failed=0,
                    kind="score",
                    scale=(-10.0, 10.0),
                )
                for name, cases in per_case.items()
            ],
            by_group={},
        )
        record = RunRecord(
            id=run_id, name=run_id, created_at="", config={}, datasets=[], scorecard=card
        )
        return CaseValues(record, per_case)

    return one("base", 0), one("cand", 1)


def test_family_wise_false_alarms_over_50_metrics_stay_under_alpha_with_holm() -> None:
    """50 metrics, 40 cases, no true difference: a run 'regresses' (or improves) on some
    metric far more often than alpha without a correction, at most alpha with Holm."""
    rng = np.random.default_rng(7)
    runs, metrics, n = 60, 50, 40
    any_holm = any_none = any_bh = 0
    for _ in range(runs):
        values = {
            f"m{j}": (list(rng.normal(0, 1, n)), list(rng.normal(0, 1, n))) for j in range(metrics)
        }
        base, cand = _runs(values)
        flagged = {}
        for correction in ("holm", "bh", "none"):
            result = compare_runs(
                base, cand, resamples=2000, seed=int(rng.integers(1 << 30)), correction=correction
            )
            flagged[correction] = any(r.verdict != "no_difference" for r in result.rows)
        any_holm += flagged["holm"]
        any_bh += flagged["bh"]
        any_none += flagged["none"]
    # uncorrected: 1 - 0.95^50 = 0.92 expected; Holm <= 0.05 (+ 3 standard errors at 60 runs)
    assert any_none / runs > 0.75
    assert any_holm / runs <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs)
    assert any_bh / runs <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs)  # all nulls: FDR = FWER


def test_holm_still_finds_real_changes_and_says_which_correction_applied() -> None:
    rng = np.random.default_rng(3)
    values = {
        f"m{j}": (list(rng.normal(0, 1, 80)), list(rng.normal(-1.0 if j < 3 else 0.0, 1, 80)))
        for j in range(20)
    }
    base, cand = _runs(values)
    result = compare_runs(base, cand, resamples=4000, seed=1)
    assert result.correction == "holm"
    regressed = {row.metric for row in result.rows if row.verdict == "regression"}
    assert regressed == {"m0", "m1", "m2"}
    for row in result.rows:
        assert row.p_adjusted is not None and row.p_value is not None
        assert row.p_adjusted >= row.p_value


def test_mde_matches_simulated_power() -> None:
    """Paired differences N(MDE, 1) with n = 50: the sign-flip test at alpha 0.05 detects
    them about 80% of the time."""
    n, alpha = 50, 0.05
    zeros = np.zeros(n)
    rng = np.random.default_rng(11)
    sample = rng.normal(0, 1, n)
    detectable = minimum_detectable_effect(zeros, sample, alpha)
    assert detectable is not None and detectable.basis == "paired"
    # the formula: (1.95996 + 0.84162) * sd / sqrt(50)
    assert detectable.mde == pytest.approx(2.80158 * np.std(sample, ddof=1) / math.sqrt(n), 1e-4)
    effect = 2.80158 / math.sqrt(n)  # the MDE for sd 1
    trials = 400
    hits = sum(
        sign_flip_test(rng.normal(effect, 1, n), resamples=1000, seed=t) < alpha
        for t in range(trials)
    )
    assert abs(hits / trials - 0.80) <= 0.06  # a few points (simulation SE 0.02)


def test_mde_of_a_run_compared_with_itself_uses_the_runs_spread() -> None:
    values = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 1.0])
    detectable = minimum_detectable_effect(values, values.copy(), 0.05)
    assert detectable is not None and detectable.basis == "independent"
    assert detectable.sd == pytest.approx(math.sqrt(2 * np.var(values, ddof=1)))
    assert minimum_detectable_effect(np.ones(5), np.ones(5), 0.05) is None  # nothing varies
    assert per_metric_level(0.05, "holm", 50) == pytest.approx(0.001)
    assert per_metric_level(0.05, "none", 50) == 0.05


def test_cases_needed_by_hand() -> None:
    # ((1.95996 + 0.84162) * 0.5 / 0.1)^2 = 196.2 -> 197
    assert cases_needed(0.1, 0.5, 0.05) == 197
    assert cases_needed(0.1, 0.0, 0.05) == 2
    with pytest.raises(ValueError):
        cases_needed(0.0, 0.5, 0.05)


def _ragmeter(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )


def test_plan_and_compare_through_the_cli(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    common = ["--store", store, "--output-dir", str(tmp_path / "out"), "--no-progress"]
    done = _ragmeter(tmp_path, "eval", "--metrics", "lexical,retrieval", *common)
    assert done.returncode == 0, done.stderr
    (run_file,) = (tmp_path / "out").glob("*.json")
    run_id = json.loads(run_file.read_text(encoding="utf-8"))["id"]

    planned = _ragmeter(
        tmp_path, "plan", "--metric", "token_f1", "--effect", "0.05", "--from", run_id,
        "--store", store, "--json",
    )  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    cases = RunFile.read(run_file).cases or []
    scores = [v for c in cases if isinstance(v := c.scores.get("token_f1"), float)]
    sd = math.sqrt(2) * float(np.std(scores, ddof=1))
    assert plan["sd"] == pytest.approx(sd, rel=1e-4) and plan["cases_in_run"] == len(scores)
    assert plan["cases_needed"] == math.ceil((2.80158 * sd / 0.05) ** 2)

    missing = _ragmeter(tmp_path, "plan", "--metric", "token_f1", "--effect", "0.05")
    assert missing.returncode != 0 and "--from RUN" in missing.stderr

    # the demo against itself: no regression, and an MDE for every paired metric
    compared = _ragmeter(tmp_path, "compare", run_id, run_id, "--store", store, "--json")
    assert compared.returncode == 0, compared.stderr
    (comparison,) = json.loads(compared.stdout)["comparisons"]
    assert comparison["correction"] == "holm"
    rows = comparison["rows"]
    assert not [r for r in rows if r["verdict"] == "regression"]
    varying = [r for r in rows if r["metric"] == "token_f1"]
    assert varying[0]["mde"] is not None and varying[0]["mde_basis"] == "independent"
    table = _ragmeter(tmp_path, "compare", run_id, run_id, "--store", store, "--all")
    assert "Holm correction" in table.stdout and "MDE" in table.stdout


def test_holm_and_bh_hold_alpha_over_many_families_of_null_p_values() -> None:
    """20,000 families of 50 independent null p values (uniform): at least one rejection at
    0.05 in 92% of families uncorrected, and in 5% (within 3 standard errors) with Holm or
    BH (under the global null, BH's false discovery rate is its family-wise rate)."""
    rng = np.random.default_rng(13)
    families = 20_000
    p = rng.uniform(size=(families, 50))
    none = float(np.mean((p < 0.05).any(axis=1)))
    holm = np.mean([min(adjust_p_values(list(row), "holm")) < 0.05 for row in p])
    bh = np.mean([min(adjust_p_values(list(row), "bh")) < 0.05 for row in p])
    bound = 0.05 + 3 * math.sqrt(0.05 * 0.95 / families)
    assert none == pytest.approx(1 - 0.95**50, abs=0.01)
    assert holm <= bound and bh <= bound
    assert holm >= 0.05 - 3 * math.sqrt(0.05 * 0.95 / families) - 0.005  # not over-strict


def test_an_ungated_metric_keeps_its_mde_at_alpha() -> None:
    """m3 is reported but not gated (a performance metric): its MDE is at alpha; the three
    gated metrics' MDE at the Holm level alpha / 3."""
    rng = np.random.default_rng(4)
    values = {f"m{j}": (list(rng.normal(0, 1, 60)), list(rng.normal(0, 1, 60))) for j in range(4)}
    base, cand = _runs(values)
    for run in (base, cand):
        card = run.record.scorecard
        summary = card.get("m3") if card is not None else None
        assert summary is not None
        summary.group = "performance"
    rows = {row.metric: row for row in compare_runs(base, cand, resamples=500).rows}

    def sd(name: str) -> float:
        a = np.array([base.values[name][c] for c in base.values[name]])
        b = np.array([cand.values[name][c] for c in base.values[name]])
        return float(np.std(b - a, ddof=1))

    assert rows["m3"].mde == pytest.approx(2.80158 * sd("m3") / math.sqrt(60), rel=1e-4)
    gated = 2.39398 + 0.84162  # z(1 - 0.05 / 6) + z(0.8): level 0.05 / 3
    assert rows["m0"].mde == pytest.approx(gated * sd("m0") / math.sqrt(60), rel=1e-4)

"""Coverage and the failed_as policy (issue 19): every aggregate says what share of the cases
it applies to it measured, a target on a metric measured on too few of them is not measured
(never a pass), and failed cases never leave a value silently. Values by hand; one run through
the real CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.metrics.base import Metric
from ragmeter.models import Score
from ragmeter.run_record import MetricSummary, Scorecard
from ragmeter.scoring.aggregate import aggregate_scores
from ragmeter.scoring.goals import Goal, check_goals, gate_failures


def _zero(case: object, response: object) -> float:
    return 0.0


HIT = Metric("hit", "retrieval", _zero, kind="binary")
HALLUCINATED = Metric("hallucinated", "generation", _zero, kind="binary", higher_is_better=False)
GRADE = Metric("grade", "generation", _zero, kind="score", scale=(0.0, 5.0))
LATENCY = Metric("latency", "performance", _zero, kind="duration", aggregation="p50", unit="ms")


def _scores(metric: str) -> list[Score]:
    """Ten cases: six ok (values 1,1,1,0,1,1 -> mean 5/6), one failed, one skipped because the
    target did not report chunks, two the metric does not apply to."""
    values = [1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    rows = [Score(f"c{i}", metric, v) for i, v in enumerate(values)]
    rows.append(Score("c6", metric, None, "failed", "judge reply malformed"))
    rows.append(Score("c7", metric, None, "skipped", "target did not report retrieved chunks"))
    rows += [Score(f"c{i}", metric, None, "skipped", "case has no gold passages") for i in (8, 9)]
    return rows


def test_coverage_counts_failed_and_unreported_but_not_inapplicable_cases() -> None:
    card = aggregate_scores(_scores("hit"), [HIT], resamples=200)
    hit = card.get("hit")
    assert hit is not None
    assert (hit.n_scored, hit.n_skipped, hit.n_failed, hit.n_unreported) == (6, 3, 1, 1)
    assert hit.coverage == pytest.approx(6 / 8)  # 6 measured of 8 it applies to
    assert hit.value == pytest.approx(5 / 6) and hit.failed_as is None  # failed left out


@pytest.mark.parametrize(
    "metric,policy,value,applied",
    [
        (HIT, "zero", 5 / 7, "zero"),  # the failed case counts as 0
        (HIT, "worst", 5 / 7, "worst"),
        # lower is better: 0 would count the failure as perfect, so it counts as the worst (1)
        (HALLUCINATED, "zero", 6 / 7, "worst"),
        (GRADE, "worst", 5 / 7, "worst"),  # 0 is the worst end of 0-5
    ],
)
def test_failed_as_puts_failures_back_in_the_value(
    metric: Metric, policy: str, value: float, applied: str
) -> None:
    from ragmeter.scoring.aggregate import aggregate_with_breakdowns

    card, _ = aggregate_with_breakdowns(
        _scores(metric.name), [metric], resamples=200, failed_as=policy
    )
    summary = card.get(metric.name)
    assert summary is not None
    assert summary.value == pytest.approx(value) and summary.failed_as == applied
    assert summary.n_failed == 1 and summary.coverage == pytest.approx(6 / 8)


def test_a_latency_has_no_worst_value_and_keeps_failures_out() -> None:
    from ragmeter.scoring.aggregate import aggregate_with_breakdowns

    rows = [Score(f"c{i}", "latency", float(10 * (i + 1))) for i in range(4)]
    rows.append(Score("c4", "latency", None, "failed", "timeout"))
    card, _ = aggregate_with_breakdowns(rows, [LATENCY], resamples=50, failed_as="worst")
    summary = card.get("latency")
    assert summary is not None and summary.failed_as is None
    assert summary.value == pytest.approx(25.0) and summary.coverage == pytest.approx(0.8)


def test_a_target_below_the_coverage_floor_is_not_measured_and_fails_a_gate() -> None:
    card = aggregate_scores(_scores("hit"), [HIT], resamples=200)  # coverage 0.75, value 0.83
    passing = check_goals(card, [Goal("hit", ">", 0.5)], coverage_floor=0.7)
    assert passing[0].status == "pass"
    refused = check_goals(card, [Goal("hit", ">", 0.5)], coverage_floor=0.9)
    assert (refused[0].status, refused[0].reason) == ("not_measured", "coverage 0.75 < 0.90")
    assert refused[0].value == pytest.approx(5 / 6)  # shown, but not judged
    assert gate_failures(refused) == refused
    optional = check_goals(card, [Goal("hit", ">", 0.5, optional=True)], coverage_floor=0.9)
    assert gate_failures(optional) == []


def test_coverage_through_the_cli_gate_and_report(tmp_path: Path) -> None:
    """Ten cases, four answered without retrieved chunks: the retrieval metrics measure 6 of 10
    cases; their target is not measured at the default floor 0.9 and the gate fails, though
    the value would pass."""
    chunk = {"id": "d1#1", "doc_id": "d1", "text": "Refunds take five days."}
    cases = tmp_path / "cases.jsonl"
    replay = tmp_path / "responses.jsonl"
    cases.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "question": "q?", "gold_passages": [{"doc_id": "d1"}]})
            + "\n"
            for i in range(10)
        )
    )
    replay.write_text(
        "".join(
            json.dumps(
                {
                    "case_id": f"q{i}",
                    "response": {
                        "answer": "Five days.",
                        **({"retrieved": [chunk]} if i < 6 else {}),
                    },
                }
            )
            + "\n"
            for i in range(10)
        )
    )
    targets = tmp_path / "targets.yaml"
    targets.write_text("mrr: '> 0.5'\n", encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable, "-m", "ragmeter", "eval", "--dataset", str(cases),
            "--target", f"replay:{replay}", "--metrics", "retrieval", "--targets", str(targets),
            "--gate", "--store", str(tmp_path / "runs.db"), "--output-dir", str(tmp_path / "out"),
            "--no-progress", "-v",
        ],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 4, done.stdout + done.stderr
    assert "not measured: coverage 0.60 < 0.90" in done.stdout
    assert re.search(r"mrr ↑\s+│\s+1\.000\s+│.*│\s+6\s+│\s+4\s+│\s+0\s+│\s+60%", done.stdout)
    (run_file,) = (tmp_path / "out").glob("*.json")
    document = json.loads(run_file.read_text(encoding="utf-8"))
    mrr = next(m for m in document["scorecard"]["metrics"] if m["name"] == "mrr")
    assert (mrr["value"], mrr["coverage"], mrr["n_unreported"]) == (1.0, 0.6, 4)
    shown = subprocess.run(
        [sys.executable, "-m", "ragmeter", "show", document["id"], "--store", "runs.db"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert shown.returncode == 0 and "60%" in shown.stdout
    markdown = run_file.with_suffix(".md").read_text(encoding="utf-8")
    assert "| mrr ↑ | 1.000 |" in markdown and "| 6 | 4 | 0 | 60% |" in markdown


def _card_with_interval() -> Scorecard:
    summary = MetricSummary(
        name="faithfulness", group="generation", value=0.86, n_scored=40, n_skipped=0,
        n_failed=0, ci_low=0.78, ci_high=0.93, coverage=1.0,
    )  # fmt: skip
    return Scorecard(metrics=[summary], by_group={"generation": ["faithfulness"]})


def test_interval_rules_read_the_bound_not_the_point() -> None:
    from ragmeter.scoring.goals import goal_condition, parse_goals

    card = _card_with_interval()
    point, lower, strict = parse_goals({"faithfulness": ">= 0.8"}) + parse_goals(
        ["faithfulness >= 0.75 @ lower", "faithfulness >= 0.8 @ lower"]
    )
    results = check_goals(card, [point, lower, strict])
    assert [r.status for r in results] == ["pass", "pass", "fail"]  # 0.86 passes; 0.78 < 0.8
    assert results[2].reason == "lower bound 0.78 >= 0.8: no"
    assert goal_condition(results[2]) == ">= 0.8 @ lower"
    upper = check_goals(card, parse_goals({"faithfulness": "< 0.9 @ upper"}))
    assert upper[0].status == "fail"  # the upper bound 0.93 is not under 0.9
    with pytest.raises(Exception, match="'@ lower' goes with > or >="):
        parse_goals({"faithfulness": "< 0.9 @ lower"})


def test_non_inferiority_against_a_baseline_by_hand() -> None:
    from ragmeter.scoring.compare import Comparison, MetricComparison
    from ragmeter.scoring.goals import goal_condition, parse_goals

    card = _card_with_interval()
    (target,) = parse_goals(["non_inferior(faithfulness, margin=0.02)"])
    assert parse_goals({"faithfulness": "non_inferior(margin=0.02)"}) == [target]

    def comparison(low: float, high: float, higher: bool = True) -> Comparison:
        row = MetricComparison(
            metric="faithfulness", group="generation", higher_is_better=higher, baseline=0.87,
            candidate=0.86, delta=-0.01, n_paired=40, kind="continuous", test="perm",
            ci_low=low, ci_high=high,
        )  # fmt: skip
        return Comparison(
            baseline="base1", candidate="cand", n_shared_cases=40, alpha=0.05, margin=0.02,
            rows=[row],
        )  # fmt: skip

    inside = check_goals(card, [target], comparison=comparison(-0.015, 0.004))
    assert inside[0].status == "pass"
    assert (
        inside[0].reason == "paired difference vs base1: lower bound -0.015 within the margin 0.02"
    )
    beyond = check_goals(card, [target], comparison=comparison(-0.03, 0.004))
    assert beyond[0].status == "fail"
    # lower is better: the upper end of the difference must stay under the margin
    lower_better = check_goals(card, [target], comparison=comparison(-0.05, 0.01, False))
    assert lower_better[0].status == "pass"
    alone = check_goals(card, [target])
    assert (alone[0].status, alone[0].reason) == (
        "not_measured",
        "non_inferior needs a baseline (eval --baseline RUN)",
    )
    assert goal_condition(alone[0]) == "non_inferior(margin=0.02)"


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip


def test_non_inferiority_gate_and_noise_flags_through_the_cli(tmp_path: Path) -> None:
    common = ["--metrics", "retrieval", "--samples", "30", "--store", "runs.db", "--no-progress"]
    first = _cli(tmp_path, "eval", *common, "--output", "base", "--output-dir", "out")
    assert first.returncode == 0, first.stderr
    base_id = json.loads((tmp_path / "out" / "base.json").read_text())["id"]
    (tmp_path / "t.yaml").write_text("recall_at_5: non_inferior(margin=0.02)\n")
    gated = [*common, "--targets", "t.yaml", "--gate", "--baseline", base_id]
    same = _cli(tmp_path, "eval", *gated, "--output-dir", "same")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "recall_at_5 non_inferior(margin=0.02): pass" in same.stdout
    worse = _cli(tmp_path, "eval", *gated, "--top-k", "1", "--output-dir", "worse")
    assert worse.returncode == 4, worse.stdout + worse.stderr
    assert "recall_at_5 non_inferior(margin=0.02): fail" in worse.stdout
    assert "goals failed: recall_at_5" in worse.stderr
    # the verdict is the one stored, written to the run file and reported (not "not measured")
    (run_file,) = (tmp_path / "worse").glob("*.json")
    (judged,) = json.loads(run_file.read_text())["goals"]
    assert (judged["metric"], judged["status"]) == ("recall_at_5", "fail")
    assert "lower bound" in judged["reason"]
    shown = _cli(tmp_path, "show", json.loads(run_file.read_text())["id"], "--store", "runs.db")
    assert "needs a baseline" not in shown.stdout and "fail: paired" in shown.stdout
    (report,) = (tmp_path / "worse").glob("*.md")
    assert "needs a baseline" not in report.read_text()
    assert "lower bound" in report.read_text()
    alone = _cli(tmp_path, "eval", *common, "--targets", "t.yaml", "--gate", "--output-dir", "x")
    assert alone.returncode == 2 and "needs a baseline: add --baseline" in alone.stderr
    assert not (tmp_path / "x").exists()  # refused before any question
    # the noise flags reach the run's config
    flagged = _cli(
        tmp_path, "eval", *common, "--repeats", "2", "--failed-as", "worst",
        "--coverage-floor", "0.5", "--output-dir", "flags",
    )  # fmt: skip
    assert flagged.returncode == 0, flagged.stderr
    (run_file,) = (tmp_path / "flags").glob("*.json")
    document = json.loads(run_file.read_text())
    config = document["config"]
    assert (config["repeats"], config["failed_as"], config["coverage_floor"]) == (2, "worst", 0.5)
    assert document["question_count"] == 60


def test_a_mapping_target_keeps_its_interval_rule() -> None:
    from ragmeter.scoring.goals import goal_condition, parse_goals

    (target,) = parse_goals([{"metric": "faithfulness", "op": ">=", "value": "0.8 @ lower"}])
    (result,) = check_goals(_card_with_interval(), [target])
    assert (target.rule, result.status, goal_condition(result)) == (
        "lower",
        "fail",
        ">= 0.8 @ lower",
    )


def test_non_inferiority_needs_paired_coverage() -> None:
    from ragmeter.scoring.compare import Comparison, MetricComparison
    from ragmeter.scoring.goals import parse_goals

    row = MetricComparison(
        metric="faithfulness", group="generation", higher_is_better=True, baseline=0.87,
        candidate=0.86, delta=-0.01, n_paired=6, kind="continuous", test="perm",
        ci_low=-0.01, ci_high=0.01, coverage=0.6,
    )  # fmt: skip
    comparison = Comparison(
        baseline="b", candidate="c", n_shared_cases=6, alpha=0.05, margin=0.02, rows=[row]
    )
    (target,) = parse_goals(["non_inferior(faithfulness, margin=0.02)"])
    (result,) = check_goals(_card_with_interval(), [target], 0.9, comparison)
    assert result.status == "not_measured" and "paired coverage 0.60 < 0.90" in str(result.reason)


def test_plan_refuses_what_it_cannot_plan(tmp_path: Path) -> None:
    common = ["--store", "runs.db", "--no-progress", "--output-dir", "out"]
    done = _cli(tmp_path, "eval", "--metrics", "retrieval,injection", "--samples", "40", *common)
    assert done.returncode == 0, done.stderr
    again = _cli(tmp_path, "eval", "--metrics", "retrieval,injection", "--samples", "40", *common)
    assert again.returncode == 0, again.stderr
    ids = [json.loads(p.read_text())["id"] for p in sorted((tmp_path / "out").glob("*.json"))]
    pair = ",".join(ids)
    same = _cli(tmp_path, "plan", "--metric", "recall_at_5", "--effect", "0.05", "--from", pair,
                "--store", "runs.db", "--json")  # fmt: skip
    assert same.returncode == 0, same.stderr
    plan = json.loads(same.stdout)
    assert plan["sd"] > 0 and "own spreads" in plan["sd_basis"]  # identical runs: no paired sd
    auc = _cli(tmp_path, "plan", "--metric", "injection_auc", "--effect", "0.05", "--from",
               ids[0], "--store", "runs.db")  # fmt: skip
    assert auc.returncode != 0 and "run-level statistic" in auc.stderr

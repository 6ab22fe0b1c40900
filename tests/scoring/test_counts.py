"""Seed 001's correct / wrong / don't-know counts beside the rates: a metric aggregated by
``sum`` is the true total over the scored cases (never a mean x n), skipped and failed cases
are not counted and stay visible, the total survives the store and the run file, and compare
shows a total's change. Values are computed by hand."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.metrics import resolve_metrics
from ragmeter.metrics.base import Metric, MetricDeclarationError, MetricSettings
from ragmeter.models import Case, Score
from ragmeter.reports.compare_console import comparison_table
from ragmeter.reports.console import format_value
from ragmeter.run_record import MetricSummary, RunRecord
from ragmeter.runfile import RunFile
from ragmeter.scoring.aggregate import aggregate_with_breakdowns
from ragmeter.scoring.compare import CaseValues, compare_runs
from ragmeter.store.sqlite import RunStore


def _zero(case: Case, response: object) -> float:
    return 0.0


def count_metric(name: str = "n_wrong", higher: bool = False) -> Metric:
    return Metric(
        name, "abstention", _zero, higher_is_better=higher, aggregation="sum", kind="count"
    )


def rate_metric(name: str = "wrong_rate") -> Metric:
    return Metric(name, "abstention", _zero, higher_is_better=False, kind="binary")


def test_a_sum_is_only_declared_for_a_count() -> None:
    with pytest.raises(MetricDeclarationError, match="only a count is summed"):
        Metric("x", "abstention", _zero, aggregation="sum", kind="binary")
    with pytest.raises(MetricDeclarationError, match="unknown aggregation 'total'"):
        Metric("x", "abstention", _zero, aggregation="total", kind="count")


def test_a_sum_is_the_total_of_the_scored_cases_overall_and_per_group() -> None:
    # 7 cases: 1 0 1 1 0 scored, one skipped, one failed. Total 3 of 5 scored (not 7 x mean)
    values = {"a": 1.0, "b": 0.0, "c": 1.0, "d": 1.0, "e": 0.0}
    scores = [Score(case, m, v) for case, v in values.items() for m in ("n_wrong", "wrong_rate")]
    for m in ("n_wrong", "wrong_rate"):
        scores.append(Score("f", m, None, "skipped", "case has no reference answer"))
        scores.append(Score("g", m, None, "failed", "target error: timeout"))
    tags = {"a": "x", "b": "x", "c": "y", "d": "y", "e": "y", "f": "y", "g": "x"}
    cases = [Case(case_id=c, question="q", tags=[t]) for c, t in tags.items()]
    card, breakdowns = aggregate_with_breakdowns(
        scores, [count_metric(), rate_metric()], cases, ["tags"], resamples=200, seed=1
    )
    total = card.get("n_wrong")
    assert total is not None and total.aggregation == "sum"
    assert total.value == 3.0 and isinstance(total.value, float)
    assert (total.n_scored, total.n_skipped, total.n_failed) == (5, 1, 1)
    assert total.ci_low is None and total.ci_high is None  # an exact total has no interval
    rate = card.get("wrong_rate")
    assert rate is not None and rate.value == pytest.approx(3 / 5) and rate.ci_low is not None
    by_tag = {label: {s.name: s for s in group} for label, group in breakdowns["tags"].items()}
    assert by_tag["x"]["n_wrong"].value == 1.0 and by_tag["x"]["n_wrong"].n_scored == 2
    assert by_tag["y"]["n_wrong"].value == 2.0 and by_tag["y"]["n_wrong"].n_skipped == 1
    # nothing scored: no total (not 0), as a mean has no value
    card, _ = aggregate_with_breakdowns(
        [Score("f", "n_wrong", None, "skipped", "no reference")], [count_metric()], resamples=0
    )
    empty = card.get("n_wrong")
    assert empty is not None and empty.value is None and empty.n_skipped == 1


def test_a_total_prints_as_a_whole_number() -> None:
    summary = MetricSummary(
        name="n", group="abstention", value=37.0, aggregation="sum", kind="count",
        n_scored=50, n_skipped=0, n_failed=0,
    )  # fmt: skip
    assert format_value(summary, 37.0) == "37"
    assert format_value(summary, 2.5) == "2.50"
    mean_count = summary.model_copy(update={"aggregation": "mean"})
    assert format_value(mean_count, 37.0) == "37.00"


def _record(run_id: str, scores: list[Score], metrics: list[Metric]) -> RunRecord:
    card, _ = aggregate_with_breakdowns(scores, metrics, resamples=100, seed=0)
    return RunRecord(id=run_id, name=run_id, created_at="", config={}, datasets=[], scorecard=card)


def test_compare_shows_a_totals_change(tmp_path: Path) -> None:
    metrics = [count_metric("correct", higher=True)]
    base = {"a": 1.0, "b": 1.0, "c": 0.0, "d": 0.0, "e": 1.0}  # 3 correct
    cand = {"a": 1.0, "b": 0.0, "c": 1.0, "d": 1.0, "f": 1.0}  # 4 correct; e, f not shared
    runs = [
        CaseValues(_record(run_id, [Score(c, "correct", v) for c, v in values.items()], metrics),
                  {"correct": values})
        for run_id, values in (("base", base), ("cand", cand))
    ]  # fmt: skip
    row = compare_runs(*runs, resamples=500).rows[0]
    assert (row.baseline, row.candidate, row.delta) == (3.0, 4.0, 1.0)
    # over the shared cases a-d: 2 -> 3 correct
    assert row.aggregation == "sum" and row.total_diff == 1.0 and row.n_paired == 4
    assert row.mean_diff == pytest.approx(0.25)
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(comparison_table(compare_runs(*runs, resamples=500), show_all=True))
    line = next(x for x in console.export_text().splitlines() if "correct ↑" in x)
    assert re.search(r"correct ↑\s+│\s+3\s+│\s+4\s+│\s+\+1\s+│", line), line


def test_totals_survive_the_store_and_the_run_file(tmp_path: Path) -> None:
    metrics = [count_metric()]
    scores = [Score(c, "n_wrong", v) for c, v in {"a": 1.0, "b": 1.0, "c": 0.0}.items()]
    scores.append(Score("d", "n_wrong", None, "skipped", "no reference"))
    card, _ = aggregate_with_breakdowns(scores, metrics, resamples=100, seed=0)
    store = RunStore(tmp_path / "runs.db")
    try:
        run_id = "r1"
        record = RunRecord(id=run_id, name="r", created_at="2026-01-01", config={}, datasets=[])
        store.create_run(record, [Case(case_id=c, question="q") for c in "abcd"])
        store.replace_scores(run_id, scores)
        store.finish_run(run_id, card, "2026-01-01T00:00:01", 0)
        stored = store.get_run(run_id).scorecard
    finally:
        store.close()
    assert stored is not None
    total = stored.get("n_wrong")
    assert total is not None and total.aggregation == "sum" and total.value == 2.0
    assert (total.n_scored, total.n_skipped) == (3, 1)
    dumped = json.loads(card.model_dump_json())
    assert dumped["metrics"][0]["aggregation"] == "sum" and dumped["metrics"][0]["value"] == 2.0


def test_abstention_family_declares_each_count_beside_its_rate() -> None:
    metrics = resolve_metrics(["abstention"], MetricSettings())
    names = [m.name for m in metrics]
    for stem in ("correct_answer", "wrong_answer", "dont_know"):
        rate, count = names.index(f"{stem}_rate"), names.index(f"{stem}_count")
        assert count == rate + 1
        declared = metrics[count]
        assert declared.kind == "count" and declared.aggregation == "sum"
        assert declared.higher_is_better == metrics[rate].higher_is_better


# through the real command line --------------------------------------------------------------
CASES = [
    # answerable, the reference in the answer: CORRECT
    ({"case_id": "paris", "question": "Capital of France?", "reference_answer": "Paris"},
     {"answer": "Paris is the capital of France."}),
    ({"case_id": "berlin", "question": "Capital of Germany?", "reference_answer": "Berlin"},
     {"answer": "Berlin."}),
    ({"case_id": "rome", "question": "Capital of Italy?", "reference_answer": "Rome"},
     {"answer": "Rome, of course."}),
    # answerable, another city: WRONG
    ({"case_id": "oslo", "question": "Capital of Norway?", "reference_answer": "Oslo"},
     {"answer": "Stockholm."}),
    # unanswerable and answered: WRONG
    ({"case_id": "mars", "question": "Capital of Mars?", "answerable": False},
     {"answer": "Olympus City."}),
    # abstained: DON'T KNOW
    ({"case_id": "lima", "question": "Capital of Peru?", "reference_answer": "Lima"},
     {"answer": "I don't know."}),
    ({"case_id": "quito", "question": "Capital of Ecuador?", "reference_answer": "Quito"},
     {"answer": "I am not sure, sorry."}),
    # nothing to classify against: skipped, not counted
    ({"case_id": "blank", "question": "Anything?"}, {"answer": "Something."}),
    # the target failed: failed, not counted
    ({"case_id": "down", "question": "Capital of Chile?", "reference_answer": "Santiago"}, None),
]  # fmt: skip


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True, text=True, timeout=300, cwd=cwd,
        env={**os.environ, "COLUMNS": "160", "NO_COLOR": "1"},
    )  # fmt: skip


def test_eval_then_show_prints_the_true_counts(tmp_path: Path) -> None:
    dataset, replay = tmp_path / "cases.jsonl", tmp_path / "replay.jsonl"
    dataset.write_text("".join(json.dumps(case) + "\n" for case, _ in CASES))
    replies = [
        {"case_id": case["case_id"], "response": response}
        if response is not None
        else {"case_id": case["case_id"], "error_type": "http_500", "error_message": "down"}
        for case, response in CASES
    ]
    replay.write_text("".join(json.dumps(reply) + "\n" for reply in replies))
    store = tmp_path / "runs.db"
    common = ["--store", str(store)]
    evaluated = cli(
        "eval", "-d", str(dataset), "--target", f"replay:{replay}", "--metrics", "abstention",
        "--no-progress", "--output-dir", str(tmp_path / "out"), *common, cwd=tmp_path,
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stderr
    [run_file] = (tmp_path / "out").glob("*.json")
    run_id = json.loads(run_file.read_text())["id"]
    shown = cli("show", run_id, *common, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    # by hand: CORRECT paris, berlin, rome; WRONG oslo, mars; DON'T KNOW lima, quito; 7 classified,
    # blank skipped, down failed
    expected = {
        "correct_answer_count": ("3", "0.429"),
        "wrong_answer_count": ("2", "0.286"),
        "dont_know_count": ("2", "0.286"),
    }
    rows = {}
    for line in shown.stdout.splitlines():
        cells = [cell.strip() for cell in line.split("│")]
        if len(cells) > 2 and cells[1].split(" ")[0] in (
            *expected, "correct_answer_rate", "wrong_answer_rate", "dont_know_rate"
        ):  # fmt: skip
            rows[cells[1].split(" ")[0]] = cells[2:]
    for name, (total, rate) in expected.items():
        # value, 95% CI, n, skip, fail
        assert rows[name][:5] == [total, "-", "7", "1", "1"], rows[name]
        rate_name = name.replace("_count", "_rate")
        assert rows[rate_name][0] == rate and rows[rate_name][2:5] == ["7", "1", "1"]
    # the run file and the store hold the same totals
    header = RunFile.read(run_file).header
    assert header.scorecard is not None
    for name, (total, _) in expected.items():
        summary = header.scorecard.get(name)
        assert summary is not None and summary.aggregation == "sum"
        assert summary.value == float(total) and summary.n_scored == 7
    shown_json = cli("show", run_id, "--json", *common, cwd=tmp_path)
    data = json.loads(shown_json.stdout)
    metrics = {m["name"]: m for m in data["scorecard"]["metrics"]}
    assert metrics["correct_answer_count"]["value"] == 3.0
    assert metrics["correct_answer_count"]["aggregation"] == "sum"


def test_class_rates_and_counts_read_one_classification_per_case() -> None:
    from ragmeter.metrics.abstention import abstention_metrics
    from ragmeter.models import CaseResult, Response
    from ragmeter.runner.scoring import score_results

    metrics = [
        m
        for m in abstention_metrics(MetricSettings())
        if m.name.startswith(("correct_answer", "wrong_answer", "dont_know"))
    ]
    cases = [
        Case(case_id="right", question="q?", reference_answer="Paris"),
        Case(case_id="wrong", question="q?", reference_answer="Paris"),
        Case(case_id="unsure", question="q?", reference_answer="Paris"),
        Case(case_id="no-ref", question="q?"),
    ]
    answers = {"right": "Paris.", "wrong": "Lyon.", "unsure": "I don't know.", "no-ref": "X."}
    results = [
        CaseResult(case_id=c, status="ok", response=Response(answer=a)) for c, a in answers.items()
    ]
    scores = {(s.case_id, s.metric): s for s in score_results(cases, results, metrics)}
    expected = {"right": "correct_answer", "wrong": "wrong_answer", "unsure": "dont_know"}
    for case_id, stem in expected.items():
        for other in ("correct_answer", "wrong_answer", "dont_know"):
            for suffix in ("rate", "count"):
                value = scores[(case_id, f"{other}_{suffix}")].value
                assert value == float(other == stem), (case_id, other, suffix)
    for suffix in ("rate", "count"):
        skipped = scores[("no-ref", f"correct_answer_{suffix}")]
        assert skipped.status == "skipped"
        assert skipped.reason == "case has no reference answer, gold facts or expected number"

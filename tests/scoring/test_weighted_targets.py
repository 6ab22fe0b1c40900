"""Weighted score, targets table, breakdown fields, prices and the performance summary."""

from __future__ import annotations

import pytest

from ragmeter.config import ModelPrice
from ragmeter.metrics.performance import apply_prices, performance_summary
from ragmeter.models import Case, CaseResult, Response, Usage
from ragmeter.run_record import MetricSummary, Scorecard
from ragmeter.scoring.breakdowns import BreakdownFieldError, case_labels, labels_by_case
from ragmeter.scoring.goals import (
    DEFAULT_GOALS,
    GoalSpecError,
    check_goals,
    parse_goals,
)
from ragmeter.scoring.weighted import weighted_score


def _summary(name: str, group: str, value: float | None, **extra: object) -> MetricSummary:
    return MetricSummary(
        name=name, group=group, value=value, n_scored=10, n_skipped=0, n_failed=0, **extra
    )


def _card(*summaries: MetricSummary) -> Scorecard:
    by_group: dict[str, list[str]] = {}
    for s in summaries:
        by_group.setdefault(s.group, []).append(s.name)
    return Scorecard(metrics=list(summaries), by_group=by_group)


def test_weighted_score_renormalises_over_present_objectives() -> None:
    card = _card(
        _summary("recall_at_5", "retrieval", 0.8),
        _summary("scope_miss_rate", "retrieval", 0.2, higher_is_better=False),
        _summary("unanswerable_accuracy", "abstention", 0.6),
        _summary("latency_p50", "performance", 1000.0, unit="ms", higher_is_better=False),
    )
    result = weighted_score(card)
    assert result.objectives["retrieval"] == pytest.approx(0.8)  # (0.8 + (1 - 0.2)) / 2
    assert result.objectives["latency"] == pytest.approx(0.5)  # at the reference value
    assert result.missing == ["faithfulness", "citation", "cost"]
    total = 0.30 + 0.15 + 0.05
    assert result.effective_weights["accuracy"] == pytest.approx(0.30 / total)
    expected = (0.30 * 0.6 + 0.15 * 0.8 + 0.05 * 0.5) / total
    assert result.score == pytest.approx(expected)


def test_weighted_score_leaves_out_metrics_under_the_coverage_floor() -> None:
    card = _card(
        _summary("token_f1", "lexical", 0.9, coverage=0.25),
        _summary("exact_match", "lexical", 0.5, coverage=1.0),
        _summary("mrr", "retrieval", 0.4, coverage=0.5),
    )
    weights, feeds = {"answer": 1.0, "retrieval": 1.0}, {"answer": ["group:lexical"]}
    result = weighted_score(card, weights, feeds, coverage_floor=0.9)
    # token_f1 (25% of its cases) and mrr (50%) speak for a few cases: out
    assert result.objectives == {"answer": 0.5, "retrieval": None}
    assert result.score == pytest.approx(0.5)
    assert result.missing == ["retrieval"]
    thin = {o.name: o.under_coverage for o in result.detail}
    assert thin == {"answer": {"token_f1": 0.25}, "retrieval": {"mrr": 0.5}}
    # without a floor (a scorecard read without coverage, or floor 0) every metric counts
    assert weighted_score(card, weights, feeds).objectives["answer"] == pytest.approx(0.7)


def test_weighted_score_custom_weights_and_feeds() -> None:
    card = _card(_summary("token_f1", "lexical", 0.4), _summary("mrr", "retrieval", 1.0))
    result = weighted_score(card, {"answer": 1.0, "retrieval": 1.0}, {"answer": ["token_f1"]})
    assert result.score == pytest.approx(0.7)
    with pytest.raises(ValueError, match="no feeds"):
        weighted_score(card, {"speed": 1.0})
    with pytest.raises(ValueError, match="group:NAME"):
        weighted_score(card, {"answer": 1.0}, {"answer": ["metric:mrr"]})
    assert weighted_score(_card()).score is None


def test_targets_pass_fail_and_not_measured() -> None:
    card = _card(_summary("ndcg_at_5", "retrieval", 0.7), _summary("recall_at_5", "retrieval", 0.5))
    results = {r.metric: r.status for r in check_goals(card, parse_goals(None))}
    assert results["ndcg_at_5"] == "pass"
    assert results["recall_at_5"] == "fail"
    assert results["injection_auc"] == "not_measured"
    assert len(results) == len(DEFAULT_GOALS)
    empty = _card(_summary("mrr", "retrieval", None))
    assert check_goals(empty, parse_goals({"mrr": ">= 0.5"}))[0].status == "not_measured"


def test_target_specs_in_every_form() -> None:
    mapping = parse_goals({"mrr": ">= 0.5", "redundancy_ngram": "< 0.2"})
    listed = parse_goals(["mrr >= 0.5", {"metric": "redundancy_ngram", "op": "<", "value": 0.2}])
    assert [(t.metric, t.op, t.threshold) for t in mapping] == [
        (t.metric, t.op, t.threshold) for t in listed
    ]
    assert parse_goals({}) == []
    with pytest.raises(GoalSpecError, match=r"mrr.*'about 0\.5'"):
        parse_goals({"mrr": "about 0.5"})
    with pytest.raises(GoalSpecError, match="#1"):
        parse_goals(["mrr"])


def test_breakdown_labels() -> None:
    case = Case(
        case_id="1",
        question="q",
        tags=["b", "a"],
        answerable=False,
        metadata={"vault": "work", "deep": {"x": 1}},
    )
    assert case_labels(case, "tags") == ["a", "b"]
    assert case_labels(case, "answerable") == ["false"]
    assert case_labels(case, "metadata.vault") == ["work"]
    assert case_labels(case, "metadata.deep.x") == ["1"]
    assert case_labels(case, "category") == ["(none)"]
    assert labels_by_case([case], "difficulty") == [["(none)"]]
    with pytest.raises(BreakdownFieldError, match=r"metadata\.FIELD"):
        labels_by_case([case], "colour")


def test_prices_fill_missing_costs_and_summary_keeps_judge_apart() -> None:
    def result(case_id: str, usage: Usage | None, stages: dict[str, float]) -> CaseResult:
        return CaseResult(
            case_id=case_id, status="ok", response=Response(usage=usage, latency_ms=stages)
        )

    results = [
        result("a", Usage(prompt_tokens=1000, completion_tokens=500, model="m"), {"total": 10}),
        result("b", Usage(cost_usd=0.5, model="m"), {"total": 20, "retrieve": 5}),
        result("c", Usage(prompt_tokens=10, model="unknown"), {"total": 30, "retrieve": 7}),
        CaseResult(case_id="d", status="error", error_type="timeout"),
    ]
    priced = apply_prices(results, {"m": ModelPrice(input_per_1k=0.002, output_per_1k=0.004)})
    assert priced == 1
    assert results[0].response is not None and results[0].response.usage is not None
    assert results[0].response.usage.cost_usd == pytest.approx(0.002 + 0.002)
    summary = performance_summary(results, priced)
    assert list(summary["latency_ms"]) == ["total", "retrieve"]
    assert summary["latency_ms"]["total"]["p50"] == 20
    assert summary["errors_by_type"] == {"timeout": 1}
    system = summary["cost"]["system"]
    assert (system["n_costed"], system["n_without_cost"]) == (2, 1)
    assert summary["cost"]["judge"]["status"] == "not_measured"


def test_eval_withholds_a_weighted_score_measured_on_one_case_of_four(tmp_path) -> None:
    import json

    from click.testing import CliRunner

    from ragmeter.cli.main import main

    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "".join(
            json.dumps({"case_id": f"c{i}", "question": f"What is {i}?", "reference_answer": a})
            + "\n"
            for i, a in enumerate(["Alpha 42", "Beta 7", "Gamma 9", "Delta 1"])
        )
    )
    (tmp_path / "flaky.py").write_text(
        "def answer(question):\n"
        "    if question == 'What is 0?':\n"
        "        return {'answer': 'Alpha 42'}\n"
        "    raise RuntimeError('down')\n"
    )
    store = tmp_path / "runs.db"
    arguments = ["eval", "-d", str(cases), "--target", f"{tmp_path / 'flaky.py'}:answer"]
    arguments += ["--metrics", "lexical", "--store", str(store), "--no-progress"]
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 0, result.output
    shown = " ".join(result.output.split())
    assert "weighted score: - (no objective has a value)" in shown
    assert "left out, measured on too few cases: exact_match (25%), token_f1 (25%)" in shown
    run_file = next((tmp_path / "runs").glob("*.json"))
    weighted = json.loads(run_file.read_text())["weighted_score"]
    assert weighted["score"] is None
    assert weighted["detail"][0]["under_coverage"]["token_f1"] == 0.25
    report = next((tmp_path / "runs").glob("*.md")).read_text()
    assert "- weighted score: - (missing: accuracy" in report


def test_a_value_within_rounding_of_the_threshold_equals_it() -> None:
    from ragmeter.scoring.goals import holds

    rounded = sum([0.2] * 12) / 12  # 0.20000000000000004 or 0.19999999999999998
    assert rounded != 0.2
    assert holds("<=", rounded, 0.2) and holds(">=", rounded, 0.2)
    assert not holds("<", rounded, 0.2) and not holds(">", rounded, 0.2)
    assert holds("<", 0.1999, 0.2) and not holds("<=", 0.2001, 0.2)
    (result,) = check_goals(
        _card(_summary("precision_at_5", "retrieval", 0.20000000000000004)),
        parse_goals({"precision_at_5": "<= 0.2"}),
    )
    assert result.status == "pass"


def test_eval_gate_passes_a_metric_that_is_exactly_at_its_threshold(tmp_path) -> None:
    import json

    from click.testing import CliRunner

    from ragmeter.cli.main import main

    cases, replay = tmp_path / "cases.jsonl", tmp_path / "replay.jsonl"
    with cases.open("w") as c, replay.open("w") as r:
        for i in range(12):
            gold = {"doc_id": f"doc{i}", "chunk_id": f"doc{i}#a"}
            c.write(json.dumps({"case_id": f"c{i}", "question": f"q{i}?", "gold_passages": [gold]}))
            retrieved = [{"id": f"doc{i}#a"}] + [{"id": f"other{k}#a"} for k in range(4)]
            r.write(json.dumps({"case_id": f"c{i}", "answer": "a", "retrieved": retrieved}))
            c.write("\n")
            r.write("\n")
    (tmp_path / "targets.yaml").write_text('precision_at_5: "<= 0.2"\nprecision_at_1: "< 1"\n')
    arguments = ["eval", "-d", str(cases), "--target", f"replay:{replay}", "--metrics"]
    arguments += ["retrieval", "--targets", str(tmp_path / "targets.yaml"), "--gate"]
    arguments += ["--store", str(tmp_path / "runs.db"), "--no-progress"]
    result = CliRunner().invoke(main, arguments)
    shown = " ".join(result.output.split())
    # every case's precision_at_5 is 0.2 and precision_at_1 is 1: one target holds, one not
    assert result.exit_code == 4, result.output
    assert "precision_at_5 <= 0.2 0.200 pass" in shown
    assert (
        "goals failed: precision_at_1" in shown
        and "precision_at_5" not in shown.split("goals failed:")[1]
    )
    run_file = next((tmp_path / "runs").glob("*.json"))
    card = {m["name"]: m for m in json.loads(run_file.read_text())["scorecard"]["metrics"]}
    assert card["precision_at_5"]["value"] == 0.2  # the mean of twelve 0.2, not 0.2 + 4e-17
    assert (card["precision_at_5"]["ci_low"], card["precision_at_5"]["ci_high"]) == (0.2, 0.2)

"""Metrics declare the kind of value they produce and a known group; the weighted score,
compare's test choice and the margin read the declaration, never the data or the unit."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmeter import EvalConfig, evaluate
from ragmeter.errors import InputError, RagmeterError
from ragmeter.metrics import MetricSettings, resolve_metrics
from ragmeter.metrics.base import GROUPS, KINDS, Metric, MetricDeclarationError
from ragmeter.models import Case, Response
from ragmeter.registry import registry
from ragmeter.run_record import MetricSummary, RunRecord, Scorecard
from ragmeter.scoring.compare import CaseValues, compare_metric
from ragmeter.scoring.weighted import unit_interval, weighted_score


def word_count(case: Case, response: Response) -> float:
    return float(len(response.answer.split()))


def word_count_family(_: MetricSettings) -> list[Metric]:
    return [Metric("answer_word_count", "generation", word_count, kind="count")]


def bad_group_family(_: MetricSettings) -> list[Metric]:
    return [Metric("answer_chars", "factual_gradez", word_count, kind="count")]


def test_every_registered_metric_declares_a_known_kind_and_group() -> None:
    for family in registry.names("metrics"):
        for metric in registry.get("metrics", family)(MetricSettings()):
            assert metric.kind in KINDS and metric.group in GROUPS, metric.name
            if metric.kind in ("binary", "proportion"):
                assert metric.scale == (0.0, 1.0)
            if metric.kind == "duration":
                assert metric.unit == "ms"
            if metric.kind == "cost":
                assert metric.unit == "USD"


def test_undeclared_group_or_kind_is_rejected_when_declared() -> None:
    with pytest.raises(MetricDeclarationError, match="undeclared group 'factual_gradez'") as info:
        Metric("x", "factual_gradez", word_count, kind="count")
    assert "generation" in str(info.value) and isinstance(info.value, RagmeterError)
    with pytest.raises(MetricDeclarationError, match="unknown kind 'ratio'"):
        Metric("x", "generation", word_count, kind="ratio")  # type: ignore[arg-type]
    with pytest.raises(MetricDeclarationError, match="only a score declares a scale"):
        Metric("x", "generation", word_count, kind="count", scale=(0.0, 9.0))
    with pytest.raises(MetricDeclarationError, match="on 0-1"):
        Metric("x", "generation", word_count, kind="proportion", scale=(0.0, 5.0))


def test_a_plugin_family_with_an_undeclared_group_stops_before_the_first_question(
    tmp_path: Path,
) -> None:
    registry.register("metrics", "test_bad_group", bad_group_family)
    config = EvalConfig(
        store=str(tmp_path / "r.db"), output_dir=str(tmp_path / "o"), progress=False,
        metrics=["lexical", "test_bad_group"], samples=2,
    )  # fmt: skip
    with pytest.raises(InputError, match=r"test_bad_group .*undeclared group 'factual_gradez'"):
        evaluate(config)
    assert not (tmp_path / "r.db").exists()  # nothing was stored: no run was started


def test_a_count_metric_in_generation_leaves_every_weighted_objective_unchanged(
    tmp_path: Path,
) -> None:
    registry.register("metrics", "test_word_count", word_count_family)
    common = {"progress": False, "samples": 12, "seed": 2}
    families = ["retrieval", "lexical", "abstention", "performance"]
    plain = evaluate(
        EvalConfig(
            store=str(tmp_path / "a.db"), output_dir=str(tmp_path / "a"), metrics=families,
            **common,
        )
    )  # fmt: skip
    counted = evaluate(
        EvalConfig(
            store=str(tmp_path / "b.db"), output_dir=str(tmp_path / "b"),
            metrics=[*families, "test_word_count"], **common,
        )
    )  # fmt: skip
    card = counted.record.scorecard
    assert card is not None
    summary = card.get("answer_word_count")
    assert summary is not None and summary.kind == "count" and (summary.value or 0) > 1
    assert "answer_word_count" in card.by_group["generation"]
    before, after = plain.record.weighted_score, counted.record.weighted_score
    assert before is not None and after is not None
    # the two runs differ only by timing: every objective but latency is the same
    for objective in ("accuracy", "faithfulness", "citation", "retrieval", "cost"):
        assert after.objectives[objective] == before.objectives[objective], objective
    fed = {name for objective in after.detail for name in objective.metrics}
    assert "answer_word_count" not in fed
    # and on the same run, taking the count out changes nothing at all
    without = Scorecard(
        metrics=[m for m in card.metrics if m.name != "answer_word_count"],
        by_group={g: [n for n in names if n != "answer_word_count"]
                  for g, names in card.by_group.items()},
    )  # fmt: skip
    assert weighted_score(without) == weighted_score(card) == after


def _summary(kind: str | None, unit: str | None = None, **extra: object) -> MetricSummary:
    return MetricSummary(
        name="m", group="generation", value=0.5, kind=kind, unit=unit,
        n_scored=4, n_skipped=0, n_failed=0, **extra,
    )  # type: ignore[arg-type]  # fmt: skip


def test_weighted_reading_follows_the_kind_and_scale() -> None:
    assert unit_interval(_summary("count"), 0.01, 1000.0) is None
    assert unit_interval(_summary("proportion"), 0.01, 1000.0) == 0.5
    lower = _summary("binary", higher_is_better=False).model_copy(update={"value": 0.2})
    assert unit_interval(lower, 0.01, 1000.0) == pytest.approx(0.8)
    five = _summary("score", scale=(0.0, 5.0)).model_copy(update={"value": 4.0})
    assert unit_interval(five, 0.01, 1000.0) == pytest.approx(0.8)
    duration = _summary("duration", "ms").model_copy(update={"value": 1000.0})
    assert unit_interval(duration, 0.01, 1000.0) == pytest.approx(0.5)
    # an older run without kinds is read by unit, as before
    assert unit_interval(_summary(None, "claims"), 0.01, 1000.0) is None
    assert unit_interval(_summary(None), 0.01, 1000.0) == 0.5


def _scores(values: dict[str, float], kind: str) -> CaseValues:
    summary = _summary(kind).model_copy(update={"name": "m", "value": 0.0})
    record = RunRecord(
        id="r", name="r", created_at="", config={}, datasets=[],
        scorecard=Scorecard(metrics=[summary], by_group={"generation": ["m"]}),
    )  # fmt: skip
    return CaseValues(record, {"m": values})


def test_compare_chooses_its_test_by_declared_kind_not_by_the_data() -> None:
    cases = [f"c{i}" for i in range(20)]
    base = {c: float(i % 2) for i, c in enumerate(cases)}  # 0/1 data
    cand = {c: 1.0 for c in cases}
    as_proportion = compare_metric(
        "m", _scores(base, "proportion"), _scores(cand, "proportion"), 0.05, 0.02, 2000, 0, True
    )
    as_binary = compare_metric(
        "m", _scores(base, "binary"), _scores(cand, "binary"), 0.05, 0.02, 2000, 0, True
    )
    assert as_binary.test == "mcnemar_exact" and as_binary.metric_kind == "binary"
    assert as_proportion.test == "sign_flip_permutation"
    assert as_proportion.metric_kind == "proportion"


def test_the_judged_family_declares_its_metrics_from_the_tasks() -> None:
    from ragmeter.judges.tasks import TASKS

    declared = {m.name for task in TASKS.values() for m in task.metrics}
    built = {m.name: m for m in resolve_metrics(["judged"], MetricSettings())}
    assert set(built) == declared | {"ragas_score"}
    assert built["groundedness"].scale == (0.0, 5.0) and built["groundedness"].unit == "0-5"
    assert built["judged_hallucination_rate"].requires == ("unanswerable",)
    assert built["judged_wrong_rate"].higher_is_better is False
    assert built["factual_grade_a_rate"].group == "factual_grades"


def test_regression_margin_is_a_share_of_the_declared_scale() -> None:
    cases = [f"c{i}" for i in range(200)]
    base = {c: 4.0 for c in cases}
    cand = {c: 4.0 - (0.1 if i % 2 else 0.0) for i, c in enumerate(cases)}  # mean drop 0.05

    def scores(values: dict[str, float], scale: tuple[float, float]) -> CaseValues:
        run = _scores(values, "score")
        assert run.record.scorecard is not None
        run.record.scorecard.metrics[0].scale = scale
        return run

    on_five = compare_metric(
        "m", scores(base, (0.0, 5.0)), scores(cand, (0.0, 5.0)), 0.05, 0.02, 2000, 0, True
    )
    assert on_five.p_value is not None and on_five.p_value < 0.05
    assert on_five.verdict == "worse"  # 0.05 is under 0.02 of the 0-5 scale (0.1)
    on_one = compare_metric(
        "m", scores(base, (0.0, 1.0)), scores(cand, (0.0, 1.0)), 0.05, 0.02, 2000, 0, True
    )
    assert on_one.verdict == "regression"  # the same drop is over 0.02 of a 0-1 scale

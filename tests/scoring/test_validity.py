"""The validity statistics (scoring/validity.py) against hand-computed tables, SciPy when it is
installed, and properties; the labels file and the report (scoring/validity_report.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.errors import InputError
from ragmeter.models import Score
from ragmeter.run_record import GoalResult, MetricSummary, RunRecord, Scorecard
from ragmeter.scoring.validity import (
    auc,
    average_ranks,
    balanced_accuracy,
    binary_validity,
    cohens_kappa,
    graded_validity,
    kendall_tau_b,
    kendall_tau_b_counts,
    spearman_rho,
)
from ragmeter.scoring.validity_report import (
    gate_failures,
    measure_validity,
    parse_floors,
    read_labels,
    reports_from_rows,
    stored_rows,
    threshold_for,
)


def pairwise_auc(scores: list[float], labels: list[int]) -> float:
    """AUC straight from its definition: every (positive, negative) pair, ties 1/2."""
    positives = [s for s, y in zip(scores, labels, strict=True) if y]
    negatives = [s for s, y in zip(scores, labels, strict=True) if not y]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


# hand-computed tables ----------------------------------------------------------------------------
def test_average_ranks_share_ties() -> None:
    assert average_ranks([3, 1, 3, 2]).tolist() == [[3.5, 1.0, 3.5, 2.0]]
    assert average_ranks([[2, 2, 2], [1, 3, 2]]).tolist() == [[2, 2, 2], [1, 3, 2]]


def test_auc_by_hand() -> None:
    # the textbook example: 3 of the 4 (positive, negative) pairs are ordered right
    assert auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == 0.75
    # ties count half: pos {1, 3} vs neg {1, 2}: 0.5 + 0 + 1 + 1 = 2.5 of 4
    assert auc([1, 1, 2, 3], [0, 1, 0, 1]) == 0.625
    assert auc([1, 2, 3], [1, 1, 1]) is None  # one class: undefined


def test_balanced_accuracy_and_kappa_by_hand() -> None:
    predicted, labels = [1, 0, 1, 1, 0], [1, 0, 0, 1, 1]
    # TPR 2/3 (cases 0, 3 of 0, 3, 4), TNR 1/2 (case 1 of 1, 2)
    assert balanced_accuracy(predicted, labels) == pytest.approx((2 / 3 + 1 / 2) / 2)
    # p_o = 3/5; both raters say 1 three times in five: p_e = 0.6^2 + 0.4^2 = 0.52
    assert cohens_kappa(predicted, labels) == pytest.approx((0.6 - 0.52) / (1 - 0.52))
    assert cohens_kappa([1, 1, 1], [1, 1, 1]) is None  # p_e = 1: undefined
    assert cohens_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == -1.0


def test_spearman_and_kendall_by_hand() -> None:
    # ranks of y: 1, 2, 3.5, 5, 3.5; centred x.y = 8, |x|^2 = 10, |y|^2 = 9.5
    assert spearman_rho([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / math.sqrt(95))
    # pairs: 3 concordant, 2 discordant, 1 tied in y: S = 1, tau-b = 1 / sqrt(6 * 5)
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 2]) == pytest.approx(1 / math.sqrt(30))
    assert spearman_rho([1, 1, 1], [1, 2, 3]) is None
    # counts repeat cases: case 0 twice is the list [1, 1, 2, 3] against [1, 1, 3, 2]
    counted = kendall_tau_b_counts([1, 2, 3], [1, 3, 2], [[2, 1, 1]])[0]
    assert counted == pytest.approx(kendall_tau_b([1, 1, 2, 3], [1, 1, 3, 2]))


def test_against_scipy_on_data_with_ties() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(5)
    for _ in range(50):
        n = int(rng.integers(4, 60))
        x = rng.integers(0, 6, n).astype(float)
        y = rng.integers(0, 4, n).astype(float)
        labels = (rng.random(n) < 0.4).astype(int)
        if 0 < labels.sum() < n:
            u = stats.mannwhitneyu(x[labels == 1], x[labels == 0]).statistic
            assert auc(x, labels) == pytest.approx(u / (labels.sum() * (n - labels.sum())))
            assert auc(x, labels) == pytest.approx(pairwise_auc(x.tolist(), labels.tolist()))
        if len(set(x)) > 1 and len(set(y)) > 1:
            assert spearman_rho(x, y) == pytest.approx(stats.spearmanr(x, y).statistic)
            assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic)


def test_the_bootstrap_is_the_percentile_of_resampled_cases() -> None:
    rng = np.random.default_rng(0)
    scores = rng.normal(size=40)
    labels = (scores + rng.normal(size=40) > 0).astype(int)
    found = binary_validity(scores, labels, resamples=300, seed=11)["auc"]
    draws = np.random.default_rng(11).integers(0, 40, size=(300, 40))
    replicates = [
        pairwise_auc(scores[row].tolist(), labels[row].tolist())
        for row in draws
        if 0 < labels[row].sum() < 40
    ]
    low, high = np.percentile(replicates, [2.5, 97.5])
    assert found.value == pytest.approx(pairwise_auc(scores.tolist(), labels.tolist()))
    assert (found.ci_low, found.ci_high) == (pytest.approx(low), pytest.approx(high))
    again = binary_validity(scores, labels, resamples=300, seed=11)["auc"]
    assert again == found  # seeded


def test_graded_validity_and_a_constant_metric() -> None:
    rng = np.random.default_rng(1)
    grades = rng.integers(0, 6, 50).astype(float)
    scores = grades + rng.normal(scale=2.0, size=50)
    found = graded_validity(scores, grades, resamples=200, seed=0)
    assert found["spearman"].value == pytest.approx(spearman_rho(scores, grades))
    assert found["kendall_tau_b"].value == pytest.approx(kendall_tau_b(scores, grades))
    for estimate in found.values():
        assert estimate.ci_low is not None and estimate.ci_high is not None
        assert -1 <= estimate.ci_low <= estimate.ci_high <= 1
    flat = binary_validity(np.zeros(20), np.arange(20) % 2, resamples=100)["auc"]
    assert (flat.value, flat.ci_low, flat.ci_high) == (0.5, 0.5, 0.5)
    assert graded_validity(np.zeros(20), np.arange(20) % 3)["spearman"].value is None


# properties --------------------------------------------------------------------------------------
finite = st.floats(-1e6, 1e6, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(finite, min_size=1, max_size=30), st.lists(finite, min_size=1, max_size=30))
def test_auc_of_a_perfect_separator_is_1_and_of_its_reverse_0(
    low: list[float], high: list[float]
) -> None:
    negatives = [v - 3e6 for v in low]  # every negative below every positive
    scores = negatives + high
    labels = [0] * len(negatives) + [1] * len(high)
    assert auc(scores, labels) == 1.0
    assert auc([-s for s in scores], labels) == 0.0
    assert auc(scores, [1 - y for y in labels]) == 0.0


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-50, 50), st.integers(0, 1)), min_size=2, max_size=40),
    st.integers(-5, 5),
)
def test_auc_and_spearman_are_unchanged_by_a_monotone_transform(
    cases: list[tuple[int, int]], shift: int
) -> None:
    scores = np.array([s for s, _ in cases], dtype=float)
    labels = [y for _, y in cases]
    transformed = scores**3 + 7 * scores + shift  # strictly increasing, exact on these ints
    assert auc(transformed, labels) == auc(scores, labels)
    assert spearman_rho(transformed, labels) == spearman_rho(scores, labels)
    assert kendall_tau_b(transformed, labels) == kendall_tau_b(scores, labels)
    if 0 < sum(labels) < len(labels):
        assert auc(scores, labels) == pytest.approx(pairwise_auc(scores.tolist(), labels))
        complement = auc(scores, [1 - y for y in labels])
        assert complement == pytest.approx(1 - auc(scores, labels))  # type: ignore[operator]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 1), min_size=2, max_size=50))
def test_kappa_and_balanced_accuracy_of_identical_ratings_are_1(ratings: list[int]) -> None:
    if 0 < sum(ratings) < len(ratings):
        assert cohens_kappa(ratings, ratings) == pytest.approx(1.0)
        assert balanced_accuracy(ratings, ratings) == 1.0
    else:
        assert cohens_kappa(ratings, ratings) is None


# the labels file ---------------------------------------------------------------------------------
def write(path: Path, *lines: Any) -> Path:
    path.write_text(
        "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"
    )
    return path


def test_labels_binary_graded_and_zero_one(tmp_path: Path) -> None:
    binary = read_labels(
        write(tmp_path / "b.jsonl", {"case_id": "a", "label": True}, "", {"case_id": 7, "label": 0})
    )
    assert (binary.form, binary.values, binary.lines) == (
        "binary",
        {"a": 1.0, "7": 0.0},
        {"a": 1, "7": 3},
    )
    assert len(binary.sha256) == 64
    graded = read_labels(
        write(
            tmp_path / "g.jsonl",
            {"case_id": "a", "label": 4, "note": "ok"},
            {"case_id": "b", "label": 0},
        )
    )
    assert (graded.form, graded.values) == ("graded", {"a": 4.0, "b": 0.0})
    ones = read_labels(write(tmp_path / "o.jsonl", {"case_id": "a", "label": 1.0}))
    assert ones.form == "binary"


@pytest.mark.parametrize(
    "lines,message",
    [
        ([{"case_id": "a", "label": 1}, "{oops"], r"x\.jsonl:2: not valid JSON"),
        (["[1, 2]"], r"x\.jsonl:1: expected a JSON object"),
        ([{"label": 1}], r"x\.jsonl:1: case_id: missing"),
        ([{"case_id": " ", "label": 1}], r"x\.jsonl:1: case_id: missing"),
        ([{"case_id": "a"}], r"x\.jsonl:1: label: missing"),
        ([{"case_id": "a", "label": None}], r"x\.jsonl:1: label: missing"),
        ([{"case_id": "a", "label": "yes"}], r"x\.jsonl:1: label: must be true/false or a finite"),
        (['{"case_id": "a", "label": NaN}'], r"x\.jsonl:1: label: must be"),
        (
            [
                {"case_id": "a", "label": 1},
                {"case_id": "b", "label": 0},
                {"case_id": "a", "label": 0},
            ],
            r"x\.jsonl:3: case_id: 'a' is labelled twice \(first on line 1\)",
        ),
        (
            [{"case_id": "a", "label": 3}, {"case_id": "b", "label": True}],
            r"x\.jsonl:2: label: true/false in a file of graded labels \(line 1 has 3\)",
        ),
        (["", "  "], r"x\.jsonl: no labels"),
    ],
)
def test_labels_file_errors_name_the_line_and_field(
    tmp_path: Path, lines: list[Any], message: str
) -> None:
    with pytest.raises(InputError, match=message):
        read_labels(write(tmp_path / "x.jsonl", *lines))


def test_a_missing_labels_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"--labels .*nope\.jsonl: cannot read it"):
        read_labels(tmp_path / "nope.jsonl")


# the report --------------------------------------------------------------------------------------
def summary(
    name: str, kind: str = "proportion", higher: bool = True, **extra: Any
) -> MetricSummary:
    return MetricSummary(
        name=name, group="lexical", value=0.5, higher_is_better=higher, kind=kind,
        n_scored=1, n_skipped=0, n_failed=0, **extra,
    )  # fmt: skip


def record(*summaries: MetricSummary, targets: list[GoalResult] | None = None) -> RunRecord:
    return RunRecord(
        id="run1", name="r", status="completed", created_at="2026-01-01T00:00:00+00:00",
        config={}, datasets=["d"], targets=targets or [],
        scorecard=Scorecard(metrics=list(summaries), by_group={}),
    )  # fmt: skip


def test_threshold_rule() -> None:
    target = GoalResult(metric="m", op=">", threshold=0.85, value=0.9, status="pass")
    assert threshold_for(summary("m"), [target]) == (">", 0.85, "the run's goal > 0.85")
    assert threshold_for(summary("m"), []) == (">=", 0.5, "midpoint of its 0-1 scale")
    lower = summary("m", kind="score", higher=False, scale=(0.0, 5.0))
    assert threshold_for(lower, []) == ("<=", 2.5, "midpoint of its 0-5 scale")
    assert threshold_for(summary("m", kind="count"), []) is None


def test_measure_validity_counts_what_it_leaves_out(tmp_path: Path) -> None:
    ids = [f"c{i}" for i in range(16)]
    values = [0.9, 0.8, 0.2, 0.7, 0.1, 0.6, 0.3, 0.95, 0.4, 0.05, 0.5, 0.55]
    truth = [1, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0]
    scores = [Score(ids[i], "m", v) for i, v in enumerate(values)]
    scores += [
        Score("c12", "m", None, "skipped", "no reference"),
        Score("c13", "m", None, "failed"),
    ]
    scores += [Score(ids[i], "n", float(i)) for i in range(12)]
    lines = [{"case_id": ids[i], "label": bool(y)} for i, y in enumerate(truth)]
    lines += [{"case_id": c, "label": True} for c in ("c12", "c13", "c14")]
    lines += [{"case_id": f"ghost{i}", "label": False} for i in range(7)]
    labels = read_labels(write(tmp_path / "l.jsonl", *lines))
    run = record(summary("m"), summary("n", kind="count", higher=False), summary("q"))

    report = measure_validity(run, ids, scores, labels, resamples=200, seed=3)

    assert (report.n_labels, report.n_unknown) == (22, 7)
    assert report.unknown_case_ids == ["ghost0", "ghost1", "ghost2", "ghost3", "ghost4"]
    m = report.get("m")
    assert m is not None and m.measured
    assert (m.n_labelled, m.n_scored, m.n_skipped, m.n_failed, m.n_unscored) == (15, 12, 1, 1, 1)
    assert m.statistics["auc"].value == pytest.approx(pairwise_auc(values, truth))
    predicted = [int(v >= 0.5) for v in values]
    assert m.statistics["balanced_accuracy"].value == pytest.approx(
        balanced_accuracy(predicted, truth)
    )
    assert m.statistics["kappa"].value == pytest.approx(cohens_kappa(predicted, truth))
    assert m.statistics["base_rate"].value == pytest.approx(6 / 12)
    n = report.get("n")  # lower is better: the AUC of the negated values; no threshold
    assert n is not None and n.threshold is None and "kappa" not in n.statistics
    assert n.statistics["auc"].value == pytest.approx(pairwise_auc([-i for i in range(12)], truth))
    q = report.get("q")  # no scores at all
    assert q is not None and not q.measured and q.n_unscored == 15
    assert q.reason == "0 labelled cases scored (fewer than 10)"

    # a gate on the AUC
    assert gate_failures(report, {"m": 0.1}) == []
    assert gate_failures(report, {"m": 0.99}) == [
        f"m: AUC {m.statistics['auc'].value:.3f} is below its floor 0.99"
    ]
    assert gate_failures(report, {"q": 0.5}) == [
        "q: AUC not measured (0 labelled cases scored (fewer than 10)); floor 0.5"
    ]
    # stored and read back
    assert reports_from_rows([]) == []
    context, results = stored_rows(report)
    [back] = reports_from_rows([(context, result) for result in results.values()])
    assert back == report


def test_one_class_and_unknown_metrics(tmp_path: Path) -> None:
    ids = [f"c{i}" for i in range(12)]
    labels = read_labels(write(tmp_path / "l.jsonl", *[{"case_id": c, "label": 1} for c in ids]))
    scores = [Score(c, "m", 0.5) for c in ids]
    report = measure_validity(record(summary("m")), ids, scores, labels)
    assert report.metrics[0].reason == "all 12 labelled cases scored are positive; AUC needs both"
    with pytest.raises(InputError, match="--metric zz: run run1 has no such metric"):
        measure_validity(record(summary("m")), ids, scores, labels, ["zz"])
    assert parse_floors({"m": "0.7"}) == {"m": 0.7}
    for bad in ("x", "1.5", "nan"):
        with pytest.raises(InputError, match="--floor m="):
            parse_floors({"m": bad})


def test_a_report_stored_before_label_form_had_its_name_is_read() -> None:
    """Validity reports stored by an older ragmeter say ``label_kind``."""
    from ragmeter.scoring.validity_report import ValidityReport

    stored = {
        "run_id": "r", "labels_path": "l.jsonl", "labels_sha256": "0" * 64, "label_kind": "graded",
        "created_at": "2026-01-01T00:00:00+00:00", "n_labels": 3, "n_unknown": 0,
        "resamples": 10, "seed": 0, "level": 0.95, "min_cases": 1,
    }  # fmt: skip
    report = ValidityReport.model_validate(stored)
    assert report.label_form == "graded"
    assert "label_kind" not in report.model_dump() and report.model_dump()["label_form"] == "graded"

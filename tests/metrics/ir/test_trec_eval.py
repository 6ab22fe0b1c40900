"""Cross-check of the retrieval measures against trec_eval (pytrec-eval-terrier) on generated
runs and qrels: graded, with ties, negative grades, and queries missing on either side."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter.metrics.ir import Measure, parse_measure, query_measures, trec_order

pytrec_eval = pytest.importorskip("pytrec_eval")

CUTOFFS = (1, 3, 5, 10)
_CUTS = ",".join(str(k) for k in CUTOFFS)
# trec_eval's uncut "ndcg" hangs inside pytrec-eval-terrier after some calls; with at most 12
# documents a query, ndcg_cut.1000 is the same number, so the uncut ndcg is checked against it.
TREC_MEASURES = {f"{name}.{_CUTS}" for name in ("P", "recall", "map_cut", "success")} | {
    f"ndcg_cut.{_CUTS},1000",
    "map",
    "recip_rank",
    "Rprec",
    "num_rel",
    "num_rel_ret",
    "num_ret",
}
REFERENCE_LABEL = {"ndcg": "ndcg_cut_1000"}
MEASURES = [
    parse_measure(m)
    for m in (
        [
            f"{name}.{k}"
            for name in ("P", "recall", "ndcg_cut", "map_cut", "success")
            for k in CUTOFFS
        ]
        + ["ndcg", "map", "recip_rank", "Rprec", "num_rel", "num_rel_ret", "num_ret"]
    )
]

doc_ids = st.sampled_from([f"d{i}" for i in range(12)])
# scores exactly representable in float32, drawn from a small set so ties are frequent
scores = st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 2.0, -1.0, 3.75])
grades = st.integers(min_value=-1, max_value=3)
query_ids = st.sampled_from(["q1", "q2", "q3", "q4"])
qrels_strategy = st.dictionaries(
    query_ids, st.dictionaries(doc_ids, grades, min_size=1, max_size=8), min_size=1, max_size=4
)
run_strategy = st.dictionaries(
    query_ids, st.dictionaries(doc_ids, scores, min_size=1, max_size=12), min_size=1, max_size=4
)


def reference(qrels: dict, run: dict, level: int) -> dict[str, dict[str, float]]:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES, relevance_level=level)
    return evaluator.evaluate(run)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels_strategy, run_strategy, st.integers(min_value=1, max_value=2))
def test_every_measure_matches_trec_eval(qrels: dict, run: dict, level: int) -> None:
    expected = reference(qrels, run, level)
    assert set(expected) == set(qrels) & set(run)
    for qid, values in expected.items():
        ours = query_measures(trec_order(run[qid]), qrels[qid], MEASURES, relevance_level=level)
        for measure in MEASURES:
            expected_value = values[REFERENCE_LABEL.get(measure.label, measure.label)]
            assert ours[measure.label] == pytest.approx(expected_value, abs=1e-9), (
                qid,
                measure.label,
            )


@settings(max_examples=150, deadline=None)
@given(qrels_strategy, run_strategy)
def test_mrr_at_10_matches_trec_eval_on_a_truncated_run(qrels: dict, run: dict) -> None:
    truncated = {q: {d: docs[d] for d in trec_order(docs)[:3]} for q, docs in run.items()}
    expected = reference(qrels, truncated, 1)
    for qid, values in expected.items():
        ours = query_measures(trec_order(run[qid]), qrels[qid], [Measure("recip_rank", 3)])
        assert ours["recip_rank_3"] == pytest.approx(values["recip_rank"], abs=1e-9)


def test_f1_and_exponential_gain_by_hand() -> None:
    qrel = {"a": 3, "b": 1, "c": 2, "z": 0}
    ranked = ["x", "b", "a", "y"]
    values = query_measures(
        ranked,
        qrel,
        [parse_measure("f1.2"), parse_measure("ndcg_cut.2"), Measure("ndcg_cut", 4)],
        gain="exponential",
    )
    # top 2: x (0), b (1): P = 1/2, R = 1/3, F1 = 2 * (1/6) / (5/6) = 0.4
    assert values["f1_2"] == pytest.approx(0.4)
    # exponential gains: a 7, c 3, b 1. DCG@2 = 0 + 1/log2(3); IDCG@2 = 7 + 3/log2(3)
    import math

    assert values["ndcg_cut_2"] == pytest.approx((1 / math.log2(3)) / (7 + 3 / math.log2(3)))
    dcg4 = 1 / math.log2(3) + 7 / 2
    idcg4 = 7 + 3 / math.log2(3) + 1 / 2
    assert values["ndcg_cut_4"] == pytest.approx(dcg4 / idcg4)


def test_measure_names() -> None:
    assert parse_measure("P.5") == parse_measure("P_5") == parse_measure("P@5") == Measure("P", 5)
    assert parse_measure("mrr@10") == Measure("recip_rank", 10)
    assert parse_measure("ndcg_cut.10").label == "ndcg_cut_10"
    with pytest.raises(ValueError, match="needs a cutoff"):
        parse_measure("P")
    with pytest.raises(ValueError, match="takes no cutoff"):
        parse_measure("map.5")
    with pytest.raises(ValueError, match="unknown measure"):
        parse_measure("no_such_measure")
    assert parse_measure("bpref") == Measure("bpref")
    assert parse_measure("ndcg.1=3,2=9").label == "ndcg_1=3,2=9"
    assert parse_measure("iprec_at_recall.0.5").label == "iprec_at_recall_0.50"
    with pytest.raises(ValueError, match="names 2 measures"):
        parse_measure("P.5,10")


BATCH_MEASURES = [
    *MEASURES,
    *(parse_measure(f"f1.{k}") for k in CUTOFFS),
    *(parse_measure(f"recip_rank.{k}") for k in CUTOFFS),
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    qrels_strategy,
    run_strategy,
    st.integers(min_value=1, max_value=2),
    st.sampled_from(["linear", "exponential"]),
)
def test_batch_engine_equals_per_query_measures_and_trec_eval(
    qrels: dict, run: dict, level: int, gain: str
) -> None:
    from ragmeter.metrics.ir.batch import evaluate_batch

    batch = evaluate_batch(qrels, run, BATCH_MEASURES, relevance_level=level, gain=gain)  # type: ignore[arg-type]
    assert batch.query_ids == sorted(set(qrels) & set(run))
    per_query = batch.per_query()
    expected = reference(qrels, run, level) if gain == "linear" else {}
    for qid in batch.query_ids:
        ours = query_measures(
            trec_order(run[qid]), qrels[qid], BATCH_MEASURES, relevance_level=level, gain=gain
        )  # type: ignore[arg-type]
        for label, value in ours.items():
            assert per_query[qid][label] == pytest.approx(value, abs=1e-9), (qid, label)
        for label, value in expected.get(qid, {}).items():
            ours_label = {"ndcg_cut_1000": "ndcg"}.get(label, label)
            assert per_query[qid][ours_label] == pytest.approx(value, abs=1e-9), (qid, label)


def test_batch_complete_adds_qrels_only_queries_as_zero() -> None:
    from ragmeter.metrics.ir.batch import evaluate_batch

    # trec_eval -c: a missing query ranks one unjudged document, num_ret then set to 0
    qrels = {"a": {"d1": 1}, "b": {"d2": 2, "d3": 1}}
    run = {"a": {"d1": 1.0, "d9": 0.5}, "z": {"d1": 1.0}}
    measures = [parse_measure("P.1"), parse_measure("num_rel"), parse_measure("num_ret")]
    plain = evaluate_batch(qrels, run, measures)
    assert plain.query_ids == ["a"] and plain.mean("P_1") == 1.0
    complete = evaluate_batch(qrels, run, measures, complete=True)
    assert complete.query_ids == ["a", "b"]
    assert complete.per_query() == {
        "a": {"P_1": 1.0, "num_rel": 1.0, "num_ret": 2.0},
        "b": {"P_1": 0.0, "num_rel": 2.0, "num_ret": 0.0},
    }


@pytest.mark.parametrize("name", ["P", "recall", "ndcg_cut", "map_cut", "success"])
def test_default_cutoffs_are_trec_eval_s(name: str) -> None:
    """A bare name stands for the cutoffs trec_eval reports for it, with the same values."""
    from ragmeter.metrics.ir import expand_measure

    qrels = {"q": {"d1": 2, "d3": 1, "d7": 1, "d9": 0}}
    run = {"q": {f"d{i}": float(20 - i) for i in range(12)}}
    expected = pytrec_eval.RelevanceEvaluator(qrels, {name}).evaluate(run)["q"]
    measures = expand_measure(name)
    assert {m.label for m in measures} == set(expected)
    ours = query_measures(trec_order(run["q"]), qrels["q"], measures)
    assert ours == pytest.approx(expected, abs=1e-12)

"""The TREC measure table: every declared measure is computed by both engines, and they agree."""

from __future__ import annotations

import random

import pytest

from ragmeter.metrics.ir import (
    TREC_MEASURES,
    Gain,
    Measure,
    MeasureError,
    declaration_of,
    evaluate_batch,
    expand_measure,
    parse_measure,
    query_measures,
    trec_order,
)

CUTOFFS = (1, 2, 3, 10, 50)
FRACTIONS = (0.0, 0.1, 0.25, 0.5, 1.0, 1.5)
PARAMS = {  # parameters besides the defaults
    "numbers": {"utility": "2,-1,0.5,0.1", "11pt_avg": "0.2,0.5", "set_F": "0.5", "relstring": "4"},
    "pairs": {"rbp": "p=0.5,2=3", "rbp_resid": "p=0.8"},
}


def every_measure() -> list[Measure]:
    """Each declared measure, at a few cutoffs where it takes one (uncut too where optional),
    with its default parameters and one other set."""
    measures: list[Measure] = []
    for name, declared in TREC_MEASURES.items():
        if declared.cutoff != "required":
            measures.append(Measure(name))
        if declared.cutoff != "none":
            measures += [Measure(name, k) for k in (FRACTIONS if declared.fractional else CUTOFFS)]
        if declared.params != "none":
            measures.append(Measure(name, params=PARAMS[declared.params].get(name, "1=2,3=0.5")))
    return measures


def random_trec(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Graded qrels (negative and zero grades too) and a run with many tied scores, leaning
    towards the relevant documents; some queries only in the qrels, some only in the run, some
    with an empty ranking."""
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(20)]
    qrels = {
        f"q{q}": {d: rng.choice([-1, 0, 1, 1, 2, 3]) for d in rng.sample(docs, rng.randint(1, 10))}
        for q in range(20)
    }
    run: dict[str, dict[str, float]] = {}
    for q in range(3, 24):
        judged = qrels.get(f"q{q}", {})
        run[f"q{q}"] = {
            d: rng.choice([0.0, 0.5, 1.0]) + rng.choice([0.0, 0.5]) * max(judged.get(d, 0), 0)
            for d in rng.sample(docs, rng.choice([0, 1, 5, 12, 20]))
        }
    return qrels, run


def test_every_declared_measure_has_both_computations() -> None:
    assert len(TREC_MEASURES) >= 41
    names = set(TREC_MEASURES)
    aliases = [alias for declared in TREC_MEASURES.values() for alias in declared.aliases]
    assert len(aliases) == len(set(aliases)) and not names & set(aliases)
    for name, declared in TREC_MEASURES.items():
        assert declared.name == name and declared.description
        assert callable(declared.query) and callable(declared.batch)
        assert declared.cutoff in ("none", "optional", "required")
        assert bool(declared.default_cutoffs) <= (declared.cutoff != "none")
        if declared.cutoff == "required":
            assert declared.default_cutoffs
        assert all(alias == alias.lower() for alias in declared.aliases)
        assert declared.summary in ("mean", "sum", "geometric", "none")
        for alias in (name, *declared.aliases):
            text = f"{alias}.5" if declared.cutoff == "required" else alias
            assert parse_measure(text).name == name


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("level", [1, 2])
@pytest.mark.parametrize("gain", ["linear", "exponential"])
def test_per_query_and_batch_agree_on_every_measure(seed: int, level: int, gain: Gain) -> None:
    qrels, run = random_trec(seed)
    measures = every_measure()
    options = [{}, {"judged_only": True}, {"max_retrieved": 4}, {"num_docs": 100}]
    for option in options:
        batch = evaluate_batch(qrels, run, measures, level, gain, complete=True, **option)
        assert batch.query_ids == sorted(qrels)
        per_query = batch.per_query()
        for qid in batch.query_ids:
            # trec_eval -c ranks one unjudged document for a query the run lacks
            ranked = trec_order(run[qid]) if qid in run else ["ceci_nest_pas_un_docno"]
            ours = query_measures(ranked, qrels[qid], measures, level, gain, **option)
            assert list(ours) == [m.label for m in measures]
            for measure in measures:
                expected = ours[measure.label]
                if qid not in run and declaration_of(measure)[0].zero_when_missing:
                    expected = 0.0
                found = per_query[qid][measure.label]
                assert found == pytest.approx(expected, abs=1e-12, nan_ok=True), (qid, measure)


def test_a_measure_the_table_does_not_allow_is_refused_by_both_engines() -> None:
    qrels, run = {"q": {"a": 1}}, {"q": {"a": 1.0}}
    bad_ones = (
        Measure("prefs_simp"),
        Measure("P"),
        Measure("map", 5),
        Measure("P", 0),
        Measure("P", 2.5),
        Measure("utility", params="1,2"),
        Measure("ndcg", params="1:3"),
        Measure("map", params="1"),
    )
    for bad in bad_ones:
        with pytest.raises(MeasureError):
            query_measures(["a"], qrels["q"], [bad])
        with pytest.raises(MeasureError):
            evaluate_batch(qrels, run, [bad])


def test_expand_measure_reads_trec_eval_m_option() -> None:
    assert [m.label for m in expand_measure("success")] == ["success_1", "success_5", "success_10"]
    assert [m.label for m in expand_measure("P")][:3] == ["P_5", "P_10", "P_15"]
    assert expand_measure("P.10,5,5") == [Measure("P", 5), Measure("P", 10)]
    assert expand_measure("mrr") == [Measure("recip_rank")]
    assert expand_measure("map") == [Measure("map")]
    with pytest.raises(MeasureError, match="takes no cutoff"):
        expand_measure("map.5,10")
    with pytest.raises(MeasureError, match="unknown measure"):
        expand_measure("nosuch")
    with pytest.raises(MeasureError, match="does not read"):
        expand_measure("prefs_simp")

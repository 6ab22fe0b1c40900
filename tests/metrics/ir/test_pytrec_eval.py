"""Every measure pytrec_eval supports (its 34 families), per query and over queries, against
pytrec-eval-terrier: both engines, with and without -c, -J, -M, relevance levels 1 and 2.

pytrec_eval reads scores as float32, so the generated scores are exact in float32 (and drawn
from a few values, so ties are common); its measures are then computed in double precision,
as trec_eval does, and ours must agree to 1e-9. It has no -c and no -M: -M is the run cut to
its top M (trec_eval cuts after ranking), -c is what trec_eval 10 does for a query the run
lacks (it ranks one unjudged document, then sets num_ret and utility to 0). Every generated
query judges at least one document with a grade >= 0: with only negative grades trec_eval
reads uninitialised counts (pytrec_eval can hang on them).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter.metrics.ir import (
    Measure,
    declaration_of,
    evaluate_batch,
    expand_measures,
    query_measures,
    trec_order,
)
from ragmeter.metrics.ir.report import summary

pytrec_eval = pytest.importorskip("pytrec_eval")
from pytrec_eval_ext import RelevanceEvaluator as RawEvaluator  # noqa: E402 (takes -m text as is)

# the 34 families with cutoffs suited to runs of at most 12 documents
FAMILIES = str.split(
    "runid num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank iprec_at_recall "
    "P.1,2,3,5,10 relstring recall.1,2,5,10 infAP gm_bpref Rprec_mult utility 11pt_avg binG G "
    "ndcg ndcg_rel Rndcg ndcg_cut.1,2,3,5,10 map_cut.1,2,5,10 relative_P.1,2,5 success.1,2,5 "
    "set_P set_relative_P set_recall set_map set_F num_nonrel_judged_ret"
)
# parameters: custom gains, utility coefficients, F's beta, recall levels, multiples of R
VARIANTS = [
    "ndcg.1=3,2=9",
    "G.2=5,0=1",
    "Rndcg.1=2,3=1",
    "ndcg_rel.0=1,4=2",
    "utility.2,-1,0.5,0",
    "set_F.0.5",
    "11pt_avg.0.2,0.5,0.8",
    "iprec_at_recall.0.25,0.33",
    "Rprec_mult.0.5,1.5",
]
MISSING_DOC = "ceci_nest_pas_un_docno"  # trec_eval's stand-in ranking for a missing query

doc_ids = st.sampled_from([f"d{i}" for i in range(12)])
scores = st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 2.0, -1.0, 3.75])
grades = st.integers(min_value=-1, max_value=4)
query_ids = st.sampled_from(["q1", "q2", "q3", "q4", "q10"])
judgments = st.dictionaries(doc_ids, grades, min_size=1, max_size=9).filter(
    lambda docs: max(docs.values()) >= 0
)
qrels_strategy = st.dictionaries(query_ids, judgments, min_size=1, max_size=4)
run_strategy = st.dictionaries(
    query_ids, st.dictionaries(doc_ids, scores, min_size=1, max_size=12), min_size=1, max_size=4
)
options = st.fixed_dictionaries(
    {
        "level": st.sampled_from([1, 2]),
        "judged_only": st.booleans(),
        "max_retrieved": st.sampled_from([None, None, 1, 3]),
        "complete": st.booleans(),
    }
)


def test_the_families_are_pytrec_eval_s() -> None:
    names = {text.split(".")[0] for text in FAMILIES}
    assert len(names) == 34 and names == set(pytrec_eval.supported_measures)


def reference(qrels: dict, run: dict, measure: str, opts: dict) -> dict[str, dict[str, float]]:
    """pytrec_eval's values, with trec_eval's -M and -c applied around it."""
    cut = opts["max_retrieved"]
    ranked = {q: {d: docs[d] for d in trec_order(docs)[:cut]} for q, docs in run.items()}
    missing = [q for q in qrels if q not in run] if opts["complete"] else []
    ranked.update({q: {MISSING_DOC: 1.0} for q in missing})
    evaluator = RawEvaluator(
        query_relevance=qrels,
        measures={measure},
        relevance_level=opts["level"],
        judged_docs_only_flag=opts["judged_only"],
    )
    values = evaluator.evaluate(ranked) if ranked else {}
    for q in missing:
        values[q].update({k: 0.0 for k in ("num_ret", "utility") if k in values[q]})
    return values


def same(ours: float, expected: float) -> bool:
    return (math.isnan(ours) and math.isnan(expected)) or abs(ours - expected) <= 1e-9


def expected_summary(name: str, values: list[float]) -> float:
    if name.startswith("num_"):
        return sum(values)
    if name.startswith("gm_"):
        return math.exp(sum(values) / len(values))
    return sum(values) / len(values)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels_strategy, run_strategy, options)
def test_every_family_matches_pytrec_eval(qrels: dict, run: dict, opts: dict) -> None:
    for text in FAMILIES + VARIANTS:
        check(qrels, run, text, opts)


def check(qrels: dict, run: dict, text: str, opts: dict) -> None:
    measures = expand_measures([text])
    expected = reference(qrels, run, text, opts)
    batch = evaluate_batch(
        qrels,
        run,
        measures,
        opts["level"],
        complete=opts["complete"],
        judged_only=opts["judged_only"],
        max_retrieved=opts["max_retrieved"],
    )
    assert batch.query_ids == sorted(expected)
    per_query = batch.per_query()
    for qid, values in expected.items():
        single = (
            query_measures(
                trec_order(run[qid]),
                qrels[qid],
                measures,
                opts["level"],
                judged_only=opts["judged_only"],
                max_retrieved=opts["max_retrieved"],
            )
            if qid in run
            else None
        )
        for measure in measures:
            wanted = values[reference_label(measure, values)]
            assert same(per_query[qid][measure.label], wanted), (text, qid, measure.label, opts)
            if single is not None:
                assert same(single[measure.label], wanted), (text, qid, measure.label, opts)
    for measure in measures if expected else ():
        declared = declaration_of(measure)[0]
        if declared.summary == "none":
            continue
        column = batch.values[measure.label]
        wanted_values = [v[reference_label(measure, v)] for _, v in sorted(expected.items())]
        wanted = expected_summary(measure.name, wanted_values)
        assert same(summary(declared, column), wanted), (text, measure.label, opts)


def reference_label(measure: Measure, values: dict[str, float]) -> str:
    """pytrec_eval names a parameterised value by the measure alone (``ndcg``, ``utility``)."""
    return measure.label if measure.label in values else measure.name


def test_a_known_case_by_hand_and_by_pytrec_eval() -> None:
    """One case spelled out: ties broken by document id descending, a pooled-unjudged
    document (grade -1) and an unjudged one (not in the qrels)."""
    qrels = {"q": {"a": 2, "b": 0, "c": 1, "u": -1, "z": 3}}
    run = {"q": {"x": 2.0, "a": 1.0, "c": 1.0, "u": 0.5, "b": 0.25}}
    assert trec_order(run["q"]) == ["x", "c", "a", "u", "b"]
    measures = expand_measures(["map", "bpref", "infAP", "P.2", "ndcg_cut.3", "num_rel"])
    ours = evaluate_batch(qrels, run, measures).per_query()["q"]
    # relevant (grade >= 1): a, c, z (R = 3); c at rank 2, a at rank 3
    assert ours["map"] == pytest.approx((1 / 2 + 2 / 3) / 3)
    assert ours["bpref"] == pytest.approx(2 / 3)  # no judged non-relevant above c or a
    assert ours["P_2"] == 0.5 and ours["num_rel"] == 3
    dcg = 1 / np.log2(3) + 2 / np.log2(4)
    ideal = 3 + 2 / np.log2(3) + 1 / np.log2(4)
    assert ours["ndcg_cut_3"] == pytest.approx(dcg / ideal)
    expected = RawEvaluator(
        query_relevance=qrels,
        measures={"map", "bpref", "infAP", "P.2", "ndcg_cut.3", "num_rel"},
        relevance_level=1,
        judged_docs_only_flag=False,
    ).evaluate(run)["q"]
    assert ours == pytest.approx(expected, abs=1e-12)

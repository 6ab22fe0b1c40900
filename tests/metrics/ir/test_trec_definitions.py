"""Measures pytrec_eval lacks (rbp, rbp_resid, unj, yaap, dcg, ideal_dcg, relstring) computed by
hand from trec_eval 10.0's definitions, both engines; and the rules around them (-c, NaN)."""

from __future__ import annotations

import math

import pytest

from ragmeter.metrics.ir import (
    declaration_of,
    evaluate_batch,
    expand_measures,
    parse_measure,
    query_measures,
    trec_order,
)
from ragmeter.metrics.ir.report import number, summary, trec_lines

# grades: a 2, b 1, c 0, d 3, u -1 (pooled, unjudged); x and y are not in the qrels
QREL = {"a": 2, "b": 1, "c": 0, "d": 3, "u": -1}
RUN = {"a": 5.0, "x": 4.0, "b": 3.0, "d": 2.0, "u": 1.5, "c": 1.0}
RANKED = trec_order(RUN)  # a x b d u c


def both(texts: list[str], qrel: dict = QREL, run: dict = RUN) -> dict[str, float]:
    """Values of one query from both engines (which must agree)."""
    measures = expand_measures(texts)
    single = query_measures(trec_order(run), qrel, measures)
    batch = evaluate_batch({"q": qrel}, {"q": run}, measures).per_query()["q"]
    assert single == pytest.approx(batch, abs=1e-12)
    return single


def test_ranking_under_test() -> None:
    assert RANKED == ["a", "x", "b", "d", "u", "c"]


def test_rbp() -> None:
    """RBP = (1 - p) * sum of gain(rank r) * p^(r - 1); gains above 1 are scaled to [0, 1] by
    the query's gain range (levels 0-3 here: g / 3)."""
    p = 0.9
    expected = (1 - p) * (2 / 3 + (1 / 3) * p**2 + 1 * p**3)
    assert both(["rbp"])["rbp"] == pytest.approx(expected)
    p = 0.5
    assert both(["rbp.p=0.5"])["rbp_p=0.5"] == pytest.approx((1 - p) * (2 / 3 + p**2 / 3 + p**3))
    # binary grades are not scaled
    binary = {"a": 1, "b": 1, "c": 0}
    assert both(["rbp"], binary)["rbp"] == pytest.approx(0.1 * (1 + 0.9**2))
    # a custom gain enters the range: level 2 gains 5, so the range is 0..5
    custom = both(["rbp.2=5"])["rbp_2=5"]
    assert custom == pytest.approx(0.1 * (5 / 5 + (1 / 5) * 0.9**2 + (3 / 5) * 0.9**3))


def test_rbp_resid() -> None:
    """p^n + (1 - p) * sum of p^(r - 1) over the unjudged ranks (not in the qrels, or judged
    negative); 0 when every retrieved document is judged."""
    p, n = 0.9, len(RANKED)
    unjudged = [2, 5]  # x, u
    expected = p**n + (1 - p) * sum(p ** (r - 1) for r in unjudged)
    assert both(["rbp_resid"])["rbp_resid"] == pytest.approx(expected)
    judged = {d: RUN[d] for d in ("a", "b", "c", "d")}
    assert both(["rbp_resid"], run=judged)["rbp_resid"] == 0.0


def test_unj() -> None:
    """Unjudged documents in the top k, over k; past the ranking's end nothing is unjudged."""
    values = both(["unj.1,2,5,10"])
    assert values == {"unj_1": 0.0, "unj_2": 0.5, "unj_5": 2 / 5, "unj_10": 2 / 10}
    assert [m.label for m in expand_measures(["unj"])] == ["unj_5", "unj_10", "unj_20"]


def test_yaap_dcg_ideal_dcg() -> None:
    precisions = [1 / 1, 2 / 3, 3 / 4]  # a at 1, b at 3, d at 4 (R = 3)
    s = sum(precisions)
    values = both(["yaap", "dcg", "ideal_dcg", "ndcg"])
    assert values["yaap"] == pytest.approx(math.log((1 + s) / (1 + 3 - s)))
    dcg = 2 / math.log2(2) + 1 / math.log2(4) + 3 / math.log2(5)
    ideal = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert values["dcg"] == pytest.approx(dcg)
    assert values["ideal_dcg"] == pytest.approx(ideal)
    assert values["ndcg"] == pytest.approx(dcg / ideal)
    # custom gains: level 1 gains 3, level 2 gains 9, level 3 keeps its grade
    custom = both(["dcg.1=3,2=9", "ideal_dcg.1=3,2=9"])
    assert custom["dcg_1=3,2=9"] == pytest.approx(9 + 3 / math.log2(4) + 3 / math.log2(5))
    assert custom["ideal_dcg_1=3,2=9"] == pytest.approx(9 + 3 / math.log2(3) + 3 / math.log2(4))


def test_relstring() -> None:
    """One character per rank: the grade, '>' above 9, '-' not in the qrels, '.' judged
    negative (pooled, unjudged)."""
    qrel = {**QREL, "x": 12}
    measures = [parse_measure("relstring"), parse_measure("relstring.4")]
    batch = evaluate_batch({"q": qrel}, {"q": RUN, "z": RUN}, measures)
    assert batch.texts["relstring"] == ["2>13.0"]
    assert batch.texts["relstring_4"] == ["2>13"]
    lines = list(trec_lines(batch, measures, per_query=True))
    assert lines == ["relstring             \tq\t'2>13.0'", "relstring_4           \tq\t'2>13'"]


def test_a_query_the_run_lacks_under_c() -> None:
    """trec_eval -c ranks one unjudged document for it, then sets num_ret, utility, unj and
    rbp_resid to 0; num_rel keeps its count; gm_map gets log(1e-5)."""
    measures = expand_measures(["num_ret", "num_rel", "unj.1", "rbp_resid", "utility", "gm_map"])
    batch = evaluate_batch({"q": QREL, "m": {"z": 1}}, {"q": RUN}, measures, complete=True)
    missing = batch.per_query()["m"]
    assert missing == {
        "num_ret": 0.0,
        "num_rel": 1.0,
        "unj_1": 0.0,
        "rbp_resid": 0.0,
        "utility": 0.0,
        "gm_map": pytest.approx(math.log(1e-5)),
    }
    assert batch.query_ids == ["m", "q"]
    gm = summary(declaration_of(parse_measure("gm_map"))[0], batch.values["gm_map"])
    assert gm == pytest.approx(math.exp((batch.values["gm_map"][1] + math.log(1e-5)) / 2))


def test_not_a_number_prints_as_trec_eval_prints_it() -> None:
    """-J can leave a query nothing retrieved: trec_eval's iprec_at_recall divides 0 by 0."""
    assert number(float("nan")) == "  -nan" and number(0.25) == "0.2500"
    measures = [parse_measure("iprec_at_recall.0")]
    batch = evaluate_batch({"q": {"a": 1}}, {"q": {"x": 1.0}}, measures, judged_only=True)
    assert math.isnan(batch.values["iprec_at_recall_0.00"][0])


def test_labels() -> None:
    assert [m.label for m in expand_measures(["iprec_at_recall.0.125,1"])] == [
        "iprec_at_recall_0.12",
        "iprec_at_recall_1.00",
    ]
    assert parse_measure("11pt_avg.0.2,0.5,0.8").label == "11pt_avg_0.2,0.5,0.8"
    assert parse_measure("set_F.0.5").label == "set_F_0.5"
    assert [m.label for m in expand_measures(["official"])][:6] == [
        "runid",
        "num_q",
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "map",
    ]

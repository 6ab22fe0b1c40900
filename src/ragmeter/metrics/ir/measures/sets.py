"""Measures of a set of documents: the top k (P, recall, success, relative_P, unj, f1), the
top R (Rprec, Rprec_mult) or everything retrieved (set_P, set_recall, set_relative_P, set_map,
set_F, utility)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..core import FloatArray, MeasureArg, fraction, need, params_of, relative_cutoff
from . import TREC_CUTOFFS, TrecMeasure

if TYPE_CHECKING:
    from ..batch import BatchFacts
    from ..query import QueryFacts


def _f1(precision: FloatArray, recall: FloatArray) -> FloatArray:
    total = precision + recall
    return np.where(total > 0, 2 * precision * recall / np.where(total > 0, total, 1), 0.0)


def _f1_query(q: QueryFacts, arg: MeasureArg) -> float:
    hits = q.hits(need(arg))
    precision, recall = hits / need(arg), hits / q.num_rel if q.num_rel else 0.0
    return 2 * precision * recall / (precision + recall) if hits else 0.0


def _f1_batch(b: BatchFacts, arg: MeasureArg) -> FloatArray:
    hits = b.hits(need(arg))
    return _f1(hits / need(arg), b.safe_divide(hits, b.num_rel))


def _relative_p_query(q: QueryFacts, arg: MeasureArg) -> float:
    k = need(arg)
    return q.hits(k) / min(k, q.num_rel) if q.num_rel else 0.0


def _relative_p_batch(b: BatchFacts, arg: MeasureArg) -> FloatArray:
    return b.safe_divide(b.hits(need(arg)), np.minimum(need(arg), b.num_rel))


def _unj_query(q: QueryFacts, arg: MeasureArg) -> float:
    k = need(arg)
    return sum(1 for code in q.rels[:k] if code < 0) / k


def _unj_batch(b: BatchFacts, arg: MeasureArg) -> FloatArray:
    k = need(arg)
    judged = b.count((b.ec >= 0) & (b.er <= k))
    return (np.minimum(b.num_ret, k) - judged) / k


def _rprec_query(q: QueryFacts, arg: MeasureArg) -> float:
    return q.hits(q.num_rel) / q.num_rel if q.num_rel and q.num_ret else 0.0


def _rprec_batch(b: BatchFacts, arg: MeasureArg) -> FloatArray:
    hits = b.count(b.relevant & (b.er <= b.num_rel[b.eq]))
    return np.where(b.num_ret > 0, b.safe_divide(hits, b.num_rel), 0.0)


def _rprec_mult_query(q: QueryFacts, arg: MeasureArg) -> float:
    k = relative_cutoff(fraction(arg), q.num_rel)
    return q.hits(k) / k if k > 0 else 0.0


def _rprec_mult_batch(b: BatchFacts, arg: MeasureArg) -> FloatArray:
    k = (fraction(arg) * b.num_rel + 0.9).astype(np.int64)
    return b.safe_divide(b.hits(k[b.eq]), np.where(k > 0, k, 0).astype(np.float64))


def _utility(
    rel_ret: FloatArray, ret: FloatArray, rel: FloatArray, b: float, a: MeasureArg
) -> FloatArray:
    p = params_of(a).numbers
    utility = (
        p[0] * rel_ret
        + p[1] * (ret - rel_ret)
        + p[2] * (rel - rel_ret)
        + p[3] * (b + rel_ret - ret - rel)
    )
    return np.asarray(utility, dtype=np.float64)  # typed alike by numpy 1.26's and 2.x's stubs


def _set_f(rel_ret: FloatArray, ret: FloatArray, rel: FloatArray, arg: MeasureArg) -> FloatArray:
    x = params_of(arg).numbers[0]
    safe_rel_ret = np.where(rel_ret > 0, rel_ret, 1)
    precision = safe_rel_ret / np.where(ret > 0, ret, 1)
    recall = safe_rel_ret / np.where(rel > 0, rel, 1)
    value = (x + 1.0) * precision * recall / (x * precision + recall)
    return np.where(rel_ret > 0, value, 0.0)


def _q(q: QueryFacts) -> tuple[FloatArray, FloatArray, FloatArray]:
    """num_rel_ret, num_ret, num_rel of one query as arrays (the set formulas are shared)."""
    return (
        np.array([q.num_rel_ret], float),
        np.array([q.num_ret], float),
        np.array([q.num_rel], float),
    )


def _set_relative_p(rel_ret: FloatArray, ret: FloatArray, rel: FloatArray) -> FloatArray:
    bottom = np.minimum(ret, rel)
    return np.where(bottom > 0, rel_ret / np.where(bottom > 0, bottom, 1), 0.0)


def _set_map(rel_ret: FloatArray, ret: FloatArray, rel: FloatArray) -> FloatArray:
    bottom = ret * rel
    return np.where(bottom > 0, rel_ret * rel_ret / np.where(bottom > 0, bottom, 1), 0.0)


def _b(b: BatchFacts) -> tuple[FloatArray, FloatArray, FloatArray]:
    return b.num_rel_ret, b.num_ret.astype(np.float64), b.num_rel


DECLARED = (
    TrecMeasure(
        "P",
        "relevant documents in the top k, over k",
        query=lambda q, arg: q.hits(need(arg)) / need(arg),
        batch=lambda b, arg: b.hits(need(arg)) / need(arg),
        cutoff="required",
        default_cutoffs=TREC_CUTOFFS,
        aliases=("p", "precision"),
    ),
    TrecMeasure(
        "recall",
        "relevant documents in the top k, over all relevant documents",
        query=lambda q, arg: q.hits(need(arg)) / q.num_rel if q.num_rel else 0.0,
        batch=lambda b, arg: b.safe_divide(b.hits(need(arg)), b.num_rel),
        cutoff="required",
        default_cutoffs=TREC_CUTOFFS,
    ),
    TrecMeasure(
        "success",
        "1 if a relevant document is in the top k",
        query=lambda q, arg: float(q.hits(need(arg)) > 0),
        batch=lambda b, arg: (b.hits(need(arg)) > 0).astype(np.float64),
        cutoff="required",
        default_cutoffs=(1, 5, 10),
        aliases=("hit_rate", "hit"),
    ),
    TrecMeasure(
        "f1",
        "harmonic mean of P@k and recall@k (ragmeter's)",
        query=_f1_query,
        batch=_f1_batch,
        cutoff="required",
        default_cutoffs=TREC_CUTOFFS,
    ),
    TrecMeasure(
        "relative_P",
        "relevant documents in the top k, over min(k, R)",
        query=_relative_p_query,
        batch=_relative_p_batch,
        cutoff="required",
        default_cutoffs=TREC_CUTOFFS,
    ),
    TrecMeasure(
        "unj",
        "documents in the top k the qrels do not judge (or judge negative), over k",
        query=_unj_query,
        batch=_unj_batch,
        cutoff="required",
        default_cutoffs=(5, 10, 20),
        zero_when_missing=True,
    ),
    TrecMeasure(
        "Rprec",
        "precision at rank R, R the number of relevant documents",
        query=_rprec_query,
        batch=_rprec_batch,
        aliases=("r_precision", "rprec"),
    ),
    TrecMeasure(
        "Rprec_mult",
        "precision at rank x * R (x R rounded as trec_eval: int(x R + 0.9))",
        query=_rprec_mult_query,
        batch=_rprec_mult_batch,
        cutoff="required",
        default_cutoffs=(0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0),
    ),
    TrecMeasure(
        "utility",
        "a * rel_ret + b * nonrel_ret + c * rel_not_ret + d * nonrel_not_ret (-N documents)",
        query=lambda q, arg: float(_utility(*_q(q), q.num_docs, arg)[0]),
        batch=lambda b, arg: _utility(*_b(b), b.num_docs, arg),
        params="numbers",
        default_numbers=(1.0, -1.0, 0.0, 0.0),
        zero_when_missing=True,
    ),
    TrecMeasure(
        "set_P",
        "relevant retrieved / retrieved",
        query=lambda q, arg: q.num_rel_ret / q.num_ret if q.num_ret else 0.0,
        batch=lambda b, arg: b.safe_divide(b.num_rel_ret, b.num_ret.astype(np.float64)),
    ),
    TrecMeasure(
        "set_relative_P",
        "relevant retrieved / min(retrieved, R)",
        query=lambda q, arg: float(_set_relative_p(*_q(q))[0]),
        batch=lambda b, arg: _set_relative_p(*_b(b)),
    ),
    TrecMeasure(
        "set_recall",
        "relevant retrieved / R",
        query=lambda q, arg: q.num_rel_ret / q.num_rel if q.num_rel else 0.0,
        batch=lambda b, arg: b.safe_divide(b.num_rel_ret, b.num_rel),
    ),
    TrecMeasure(
        "set_map",
        "relevant retrieved squared / (retrieved * R)",
        query=lambda q, arg: float(_set_map(*_q(q))[0]),
        batch=lambda b, arg: _set_map(*_b(b)),
    ),
    TrecMeasure(
        "set_F",
        "(x + 1) P R / (x P + R) over the retrieved set (x: the parameter, default 1)",
        query=lambda q, arg: float(_set_f(*_q(q), arg)[0]),
        batch=lambda b, arg: _set_f(*_b(b), arg),
        params="numbers",
        default_numbers=(1.0,),
    ),
)

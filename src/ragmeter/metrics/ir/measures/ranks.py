"""Measures of where the relevant documents sit: map, gm_map, map_cut, recip_rank, bpref,
gm_bpref, infAP, iprec_at_recall, 11pt_avg, binG, yaap."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..core import (
    INFAP_EPSILON,
    MIN_GEO_MEAN,
    UNJUDGED,
    FloatArray,
    MeasureArg,
    fraction,
    need,
    params_of,
    relative_cutoff,
)
from . import RECALL_POINTS, TREC_CUTOFFS, TrecMeasure

if TYPE_CHECKING:
    from ..batch import BatchFacts
    from ..query import QueryFacts


def _recip_rank_query(q: QueryFacts, arg: MeasureArg) -> float:
    if q.first is None or (arg is not None and q.first > need(arg)):
        return 0.0
    return 1.0 / q.first


def _recip_rank_batch(b: BatchFacts, arg: MeasureArg) -> FloatArray:
    first = b.first_rank
    return np.where(first <= (np.inf if arg is None else need(arg)), 1.0 / first, 0.0)


def _average_precision(b: BatchFacts, k: int | None) -> FloatArray:
    where = b.relevant if k is None else b.relevant & (b.er <= k)
    return b.safe_divide(b.total(b.relevant_precision, where), b.num_rel)


def _bpref_query(q: QueryFacts, arg: MeasureArg) -> float:
    total = 0.0
    for _, _, nonrel, _ in q.judged_above:
        if nonrel:
            total += 1.0 - min(nonrel, q.num_rel) / min(q.num_nonrel, q.num_rel)
        else:
            total += 1.0
    return total / q.num_rel if q.num_rel else total


def _nonrel(b: BatchFacts) -> FloatArray:
    """Judged non-relevant entries at or above each entry."""
    return b.running(((b.ec >= 0) & ~b.relevant).astype(np.float64))


def _bpref_batch(b: BatchFacts, arg: MeasureArg) -> FloatArray:
    nonrel = _nonrel(b)
    num_rel = b.num_rel[b.eq]
    bottom = np.minimum(b.num_nonrel[b.eq], num_rel)
    part = 1.0 - np.minimum(nonrel, num_rel) / np.where(bottom > 0, bottom, 1)
    terms = np.where(nonrel > 0, part, 1.0)
    return b.safe_divide(b.total(terms, b.relevant), b.num_rel)


def _infap_term(j: float, rel: float, nonrel: float, pooled: float) -> float:
    if j == 0:
        return 1.0
    return 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((rel + nonrel + pooled) / j) * (
        (rel + INFAP_EPSILON) / (rel + nonrel + 2 * INFAP_EPSILON)
    )


def _infap_query(q: QueryFacts, arg: MeasureArg) -> float:
    total = sum(_infap_term(j, rel, nonrel, pooled) for j, rel, nonrel, pooled in q.judged_above)
    return total / q.num_rel if q.num_rel else total


def _infap_batch(b: BatchFacts, arg: MeasureArg) -> FloatArray:
    j = (b.er - 1).astype(np.float64)
    rel = b.cum_rel - 1
    nonrel = _nonrel(b)
    pooled = b.running((b.ec == UNJUDGED).astype(np.float64))
    safe_j = np.where(j > 0, j, 1.0)
    term = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((rel + nonrel + pooled) / safe_j) * (
        (rel + INFAP_EPSILON) / (rel + nonrel + 2 * INFAP_EPSILON)
    )
    terms = np.where(j == 0, 1.0, term)
    return b.safe_divide(b.total(terms, b.relevant), b.num_rel)


def _interpolated(q: QueryFacts, cut: int) -> float:
    """trec_eval's interpolated precision once ``cut`` relevant documents are found: the best
    precision at or after the cut-th relevant document (0 past the last one found)."""
    found = q.relevant_precisions
    if cut > len(found):
        return 0.0
    if cut <= 0:
        if not found:
            return math.nan if q.num_ret == 0 else 0.0
        cut = 1
    return max(found[cut - 1 :])


def _iprec_batch_cuts(b: BatchFacts, cuts: list[float]) -> list[FloatArray]:
    """Interpolated precision of every query at each fraction of R."""
    relevant = b.relevant
    query = b.eq[relevant]
    precision = b.relevant_precision[relevant]
    found = b.num_rel_ret.astype(np.int64)
    start = np.concatenate(([0], np.cumsum(found)))[:-1]
    best = np.zeros(max(len(precision), 1))
    if len(precision):  # running max from the end of each query, exactly, on value ranks
        values, codes = np.unique(precision, return_inverse=True)
        width = len(values)
        keyed = codes[::-1] + (query.max() - query[::-1]) * width
        best = values[(np.maximum.accumulate(keyed) % width)[::-1]]
    first = np.where(found > 0, best[np.minimum(start, len(best) - 1)], 0.0)
    at_zero = np.where(found > 0, first, np.where(b.num_ret > 0, 0.0, np.nan))
    columns = []
    for cut_fraction in cuts:
        cut = (cut_fraction * b.num_rel + 0.9).astype(np.int64)
        inside = (cut >= 1) & (cut <= found)
        index = np.where(inside, start + cut - 1, 0)
        picked = best[np.minimum(index, len(best) - 1)]
        columns.append(np.where(cut <= 0, at_zero, np.where(inside, picked, 0.0)))
    return columns


def _eleven_point_query(q: QueryFacts, arg: MeasureArg) -> float:
    cuts = params_of(arg).numbers
    return sum(_interpolated(q, relative_cutoff(c, q.num_rel)) for c in cuts) / len(cuts)


def _eleven_point_batch(b: BatchFacts, arg: MeasureArg) -> FloatArray:
    cuts = list(params_of(arg).numbers)
    total: FloatArray = np.sum(_iprec_batch_cuts(b, cuts), axis=0)
    return total / len(cuts)


def _bing_query(q: QueryFacts, arg: MeasureArg) -> float:
    total = 0.0
    found = 0
    for i, flag in enumerate(q.relevant):
        if flag:
            found += 1
            total += 1.0 / math.log2(3 + i - found)
    return total / q.num_rel if found else 0.0


def _bing_batch(b: BatchFacts, arg: MeasureArg) -> FloatArray:
    terms = 1.0 / np.log2(2.0 + b.er - b.cum_rel)
    return b.safe_divide(b.total(terms, b.relevant), b.num_rel)


def _yaap(total: float | FloatArray, num_rel: float | FloatArray) -> FloatArray:
    ratio = (1.0 + np.asarray(total)) / (1.0 + np.asarray(num_rel) - total)
    return np.asarray(np.log(ratio), dtype=np.float64)  # typed alike by numpy 1.26's and 2.x's


def _gm(value: float | FloatArray) -> FloatArray:
    return np.asarray(np.log(np.maximum(value, MIN_GEO_MEAN)), dtype=np.float64)


DECLARED = (
    TrecMeasure(
        "map",
        "average precision of the whole ranking",
        query=lambda q, arg: q.average_precision(None),
        batch=lambda b, arg: _average_precision(b, None),
        aliases=("ap",),
    ),
    TrecMeasure(
        "gm_map",
        "average precision, combined over queries by geometric mean (values floored at 1e-5)",
        query=lambda q, arg: float(_gm(q.average_precision(None))),
        batch=lambda b, arg: _gm(_average_precision(b, None)),
        summary="geometric",
        per_query=False,
    ),
    TrecMeasure(
        "map_cut",
        "average precision of the top k (over all relevant documents)",
        query=lambda q, arg: q.average_precision(need(arg)),
        batch=lambda b, arg: _average_precision(b, need(arg)),
        cutoff="required",
        default_cutoffs=TREC_CUTOFFS,
    ),
    TrecMeasure(
        "recip_rank",
        "1 / rank of the first relevant document (0 past k, if a cutoff is given)",
        query=_recip_rank_query,
        batch=_recip_rank_batch,
        cutoff="optional",
        aliases=("mrr", "rr"),
    ),
    TrecMeasure(
        "bpref",
        "binary preference: for each relevant document retrieved, 1 - (judged non-relevant "
        "documents above it, at most R) / min(judged non-relevant, R); over R",
        query=_bpref_query,
        batch=_bpref_batch,
    ),
    TrecMeasure(
        "gm_bpref",
        "bpref, combined over queries by geometric mean (values floored at 1e-5)",
        query=lambda q, arg: float(_gm(_bpref_query(q, arg))),
        batch=lambda b, arg: _gm(_bpref_batch(b, arg)),
        summary="geometric",
        per_query=False,
    ),
    TrecMeasure(
        "infAP",
        "inferred average precision (Yilmaz and Aslam): negative grades are pooled documents "
        "left unjudged",
        query=_infap_query,
        batch=_infap_batch,
    ),
    TrecMeasure(
        "iprec_at_recall",
        "interpolated precision at recall levels (fractions of R)",
        query=lambda q, arg: _interpolated(q, relative_cutoff(fraction(arg), q.num_rel)),
        batch=lambda b, arg: _iprec_batch_cuts(b, [fraction(arg)])[0],
        cutoff="required",
        default_cutoffs=RECALL_POINTS,
    ),
    TrecMeasure(
        "11pt_avg",
        "interpolated precision averaged over recall levels (default the 11 points 0 .. 1)",
        query=_eleven_point_query,
        batch=_eleven_point_batch,
        params="numbers",
        default_numbers=RECALL_POINTS,
    ),
    TrecMeasure(
        "binG",
        "binary G: for each relevant document 1 / log2(2 + non-relevant above it), over R",
        query=_bing_query,
        batch=_bing_batch,
    ),
    TrecMeasure(
        "yaap",
        "yet another average precision (Robertson): log((1 + S) / (1 + R - S)), S the sum of "
        "precisions at the relevant documents",
        query=lambda q, arg: float(_yaap(sum(q.relevant_precisions), q.num_rel)),
        batch=lambda b, arg: _yaap(b.total(b.relevant_precision, b.relevant), b.num_rel),
    ),
)

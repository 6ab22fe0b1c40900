"""Graded measures: ndcg_cut, ndcg, dcg, ideal_dcg, ndcg_rel, Rndcg, G, rbp, rbp_resid.

A level's gain is its grade (``gain: exponential``: ``2^grade - 1``) unless a ``level=gain``
parameter sets it (``ndcg.1=3,2=9``); the ideal ranking repeats each positive gain once per
judged document of its level, best first. ``ndcg_cut`` reads the grades only (trec_eval's).
DCG discounts rank r by log2(r + 1)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..core import FloatArray, MeasureArg, Params, dcg, need, params_of
from . import TREC_CUTOFFS, TrecMeasure

if TYPE_CHECKING:
    from ..batch import BatchFacts
    from ..query import QueryFacts


def _pairs(arg: MeasureArg) -> Params | None:
    params = params_of(arg)
    return params if params.text else None


def _ndcg_cut_batch(b: BatchFacts, k: int) -> FloatArray:
    gains = b.gain_values(b.ec, None)
    within = (b.er <= k) & (gains != 0)
    found = b.total(gains / np.log2(b.er + 1.0), within)
    ideal = b.grade_ideal.dcg(np.arange(b.n), k)
    return np.where(ideal > 0, found / np.where(ideal > 0, ideal, 1), found)


def _entry_dcg(b: BatchFacts, params: Params | None) -> tuple[FloatArray, FloatArray]:
    """Each entry's gain and the running DCG down its query's ranking."""
    gains = b.gain_values(b.ec, params)
    return gains, b.running(gains / np.log2(b.er + 1.0))


def _dcg_query(q: QueryFacts, params: Params | None) -> tuple[float, float]:
    table = q.gains(params)
    return dcg(table.of(code) for code in q.rels), dcg(table.ideal)


def _ndcg_query(q: QueryFacts, arg: MeasureArg) -> float:
    found, ideal = _dcg_query(q, _pairs(arg))
    return found / ideal if ideal > 0 else 0.0


def _ndcg_batch(b: BatchFacts, arg: MeasureArg, part: str = "ndcg") -> FloatArray:
    params = _pairs(arg)
    gains = b.gain_values(b.ec, params)
    found = b.total(gains / np.log2(b.er + 1.0), gains != 0)
    ideal = b.ideal(params).full_dcg()
    if part == "dcg":
        return found
    if part == "ideal":
        return ideal
    return np.where(ideal > 0, found / np.where(ideal > 0, ideal, 1), 0.0)


def _ndcg_rel_query(q: QueryFacts, arg: MeasureArg) -> float:
    table = q.gains(_pairs(arg))
    ideal, found, total, retrieved = table.ideal, 0.0, 0.0, 0
    if not ideal:
        return 0.0
    ideal_dcg = [0.0]
    for i, g in enumerate(ideal):
        ideal_dcg.append(ideal_dcg[-1] + g / math.log2(i + 2))
    for i, code in enumerate(q.rels):
        g = table.of(code)
        if g != 0:
            found += g / math.log2(i + 2)
        if g > 0:
            total += found / ideal_dcg[min(i + 1, len(ideal))]
            retrieved += 1
    total += (len(ideal) - retrieved) * found / ideal_dcg[-1]
    return total / len(ideal) if total > 0 else 0.0


def _ndcg_rel_batch(b: BatchFacts, arg: MeasureArg) -> FloatArray:
    params = _pairs(arg)
    gains, running = _entry_dcg(b, params)
    ideal = b.ideal(params)
    positive = gains > 0
    points = running / np.where(positive, ideal.dcg(b.eq, b.er), 1.0)
    total = b.total(points, positive)
    length = ideal.lengths.astype(np.float64)
    full = b.total(gains / np.log2(b.er + 1.0), gains != 0)
    ideal_full = ideal.full_dcg()
    total = total + (length - b.count(positive)) * full / np.where(ideal_full > 0, ideal_full, 1)
    return np.where((length > 0) & (total > 0), total / np.where(length > 0, length, 1), 0.0)


def _rndcg_points(ideal: list[float], num_ret: int) -> list[tuple[int, int]]:
    """Where Rndcg reads nDCG: (results cut, ideal cut) at every rank where the ideal gain
    changes, and at the end of the ranking when it runs two ranks past the ideal one."""
    length = len(ideal)
    cuts = [i for i in range(1, length + 1) if i == length or ideal[i] != ideal[i - 1]]
    points = [(min(i, num_ret), i) for i in cuts]
    if length + 1 < num_ret:
        points.append((num_ret, length))
    return points


def _rndcg_query(q: QueryFacts, arg: MeasureArg) -> float:
    if not q.num_rel:
        return 0.0
    table = q.gains(_pairs(arg))
    points = _rndcg_points(table.ideal, q.num_ret)
    gains = [table.of(code) for code in q.rels]
    total = sum(dcg(gains[:cut]) / dcg(table.ideal[:ideal_cut]) for cut, ideal_cut in points)
    return total / len(points) if points else math.nan


def _rndcg_batch(b: BatchFacts, arg: MeasureArg) -> FloatArray:
    params = _pairs(arg)
    _, running = _entry_dcg(b, params)
    ideal = b.ideal(params)
    change = np.ones(len(ideal.gains), dtype=bool)  # the ideal gain changes after this rank
    if len(change) > 1:
        same_query = ideal.query[1:] == ideal.query[:-1]
        change[:-1] = ~same_query | (ideal.gains[1:] != ideal.gains[:-1])
    query = ideal.query[change]
    cut = ideal.position[change] + 1
    tail = (ideal.lengths + 1 < b.num_ret) & (b.num_rel > 0)
    query = np.concatenate((query, np.flatnonzero(tail)))
    ideal_cut = np.concatenate((cut, ideal.lengths[tail]))
    results_cut = np.minimum(np.concatenate((cut, b.num_ret[tail])), b.num_ret[query])
    found = b.running_at(running, query, results_cut)
    values = found / ideal.dcg(query, ideal_cut)
    total = np.bincount(query, weights=values, minlength=b.n)
    count = np.bincount(query, minlength=b.n).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(b.num_rel > 0, total / count, 0.0)


def _g_query(q: QueryFacts, arg: MeasureArg) -> float:
    table = q.gains(_pairs(arg))
    ideal = table.ideal
    found = cost = total = 0.0
    for i, code in enumerate(q.rels):
        g = table.of(code)
        found += g
        cost += max(ideal[i], 1.0) if i < len(ideal) else 1.0
        if g != 0:
            total += g / math.log2(2 + cost - found)
    best = sum(ideal)
    return total / best if best > 0 else 0.0


def _g_batch(b: BatchFacts, arg: MeasureArg) -> FloatArray:
    params = _pairs(arg)
    gains = b.gain_values(b.ec, params)
    ideal = b.ideal(params)
    found = b.running(gains)
    length = ideal.lengths[b.eq]
    cost = ideal.at(ideal.cost, b.eq, b.er) + np.maximum(b.er - length, 0)
    terms = gains / np.log2(2 + cost - found)
    best = ideal.at(ideal.total, np.arange(b.n), ideal.lengths)
    return b.safe_divide(b.total(terms, gains != 0), best)


def _rbp_table(table: dict[int, float]) -> dict[int, float]:
    low, high = min(table.values(), default=0.0), max(table.values(), default=0.0)
    if low < 0 or high > 1:  # one gain above 1 alone scales to 0 / 0, as in C
        span = high - low
        return {level: (g - low) / span if span else math.nan for level, g in table.items()}
    return table


def _rbp_query(q: QueryFacts, arg: MeasureArg) -> float:
    p = params_of(arg).named("p", 0.9)
    table = _rbp_table(q.gains(_pairs(arg)).table)
    total, weight = 0.0, 1.0
    for code in q.rels:
        g = table.get(code, 0.0)
        if g != 0:
            total += g * weight
        weight *= p
    return (1.0 - p) * total


def _rbp_batch(b: BatchFacts, arg: MeasureArg) -> FloatArray:
    params = params_of(arg)
    p = params.named("p", 0.9)
    custom = params.level_gains()
    top = int(b.top_level.max(initial=-1))
    low, high = np.zeros(top + 2), np.zeros(top + 2)  # per highest level (index top + 1)
    for t in range(-1, top + 1):
        levels = b.gain_values(np.arange(t + 1), _pairs(arg)).tolist() + list(custom.values())
        low[t + 1], high[t + 1] = min(levels, default=0.0), max(levels, default=0.0)
    gains = b.gain_values(b.ec, _pairs(arg))
    lo, hi = low[b.top_level[b.eq] + 1], high[b.top_level[b.eq] + 1]
    scale = (lo < 0) | (hi > 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        normal = np.where(scale, (gains - lo) / np.where(scale, hi - lo, 1), gains)
    weights = np.where(b.ec >= 0, normal, 0.0) * np.power(p, b.er - 1.0)
    return (1.0 - p) * b.total(weights)


def _rbp_resid_query(q: QueryFacts, arg: MeasureArg) -> float:
    p = params_of(arg).named("p", 0.9)
    total, weight, unjudged = 0.0, 1.0, 0
    for code in q.rels:
        if code < 0:
            unjudged += 1
            total += weight
        weight *= p
    return weight + (1 - p) * total if unjudged else 0.0


def _rbp_resid_batch(b: BatchFacts, arg: MeasureArg) -> FloatArray:
    p = params_of(arg).named("p", 0.9)
    n = b.num_ret.astype(np.float64)
    judged = b.ec >= 0
    every = n if p == 1 else (1.0 - np.power(p, n)) / (1.0 - p)
    judged_weight = b.total(np.power(p, b.er - 1.0), judged)
    unjudged = n - b.count(judged)
    return np.where(unjudged > 0, np.power(p, n) + (1 - p) * (every - judged_weight), 0.0)


def _gain_measure(
    name: str,
    description: str,
    query: Callable[[QueryFacts, MeasureArg], float],
    batch: Callable[[BatchFacts, MeasureArg], FloatArray],
) -> TrecMeasure:
    return TrecMeasure(name, description, query=query, batch=batch, params="pairs")


def _ideal_query(q: QueryFacts, arg: MeasureArg) -> float:
    return _dcg_query(q, _pairs(arg))[1]


DECLARED = (
    TrecMeasure(
        "ndcg_cut",
        "nDCG of the top k (gain = grade)",
        query=lambda q, arg: q.ndcg_cut(need(arg)),
        batch=lambda b, arg: _ndcg_cut_batch(b, need(arg)),
        cutoff="required",
        default_cutoffs=TREC_CUTOFFS,
        aliases=("ndcg_at",),
    ),
    _gain_measure("ndcg", "nDCG of the whole ranking", _ndcg_query, _ndcg_batch),
    _gain_measure(
        "dcg",
        "DCG of the whole ranking",
        lambda q, arg: _dcg_query(q, _pairs(arg))[0],
        lambda b, arg: _ndcg_batch(b, arg, "dcg"),
    ),
    _gain_measure(
        "ideal_dcg",
        "DCG of the ideal ranking",
        _ideal_query,
        lambda b, arg: _ndcg_batch(b, arg, "ideal"),
    ),
    _gain_measure(
        "ndcg_rel",
        "nDCG averaged over the relevant (positive-gain) documents; one not retrieved counts "
        "the nDCG at the end of the ranking",
        _ndcg_rel_query,
        _ndcg_rel_batch,
    ),
    _gain_measure(
        "Rndcg",
        "nDCG averaged over the ranks where the ideal gain changes (R levels)",
        _rndcg_query,
        _rndcg_batch,
    ),
    _gain_measure(
        "G",
        "normalised gain: each document gains g / log2(2 + ideal cost so far - gain so far)",
        _g_query,
        _g_batch,
    ),
    _gain_measure(
        "rbp",
        "rank-biased precision, persistence p (rbp.p=0.8; default 0.9), gains scaled to [0, 1]",
        _rbp_query,
        _rbp_batch,
    ),
    TrecMeasure(
        "rbp_resid",
        "RBP's residual: what unjudged documents could add, p^n + (1 - p) sum p^(r-1) over them",
        query=_rbp_resid_query,
        batch=_rbp_resid_batch,
        params="pairs",
        zero_when_missing=True,
    ),
)

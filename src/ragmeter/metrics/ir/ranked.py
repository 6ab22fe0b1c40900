"""From a run and its qrels to what every measure reads: the rank of each judged document.

trec_eval ranks a query's documents by score descending, then document id descending, and
gives each retrieved document the code of :mod:`.core` (its grade, NONPOOL or UNJUDGED). Only
the judged retrieved documents ("entries") need a rank: the others are NONPOOL, and the
measures only need to know how many there are. The rank of an entry is one plus the number of
its query's scores above its own, plus the number of equal scores with a greater document id;
the scores are sorted once per query, and a vectorised binary search counts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from .core import BoolArray, FloatArray, IntArray

Qrels = Mapping[str, Mapping[str, int]]
Run = Mapping[str, Mapping[str, float]]


@dataclass(frozen=True)
class Ranked:
    """Evaluated queries (trec_eval's order) with their judged retrieved documents.

    ``entry_*`` are parallel arrays (query index, 1-based rank, grade as in the qrels);
    ``judged_*`` hold every qrels line of the evaluated queries; ``missing`` marks queries the
    run lacks (``-c``). trec_eval scores those on a ranking of one unjudged document, then
    sets num_ret, utility, unj and rbp_resid to 0: ``num_ret`` is 1 for them here, and the
    measures so marked are zeroed (see ``TrecMeasure.zero_when_missing``)."""

    query_ids: list[str]
    num_ret: IntArray
    entry_query: IntArray
    entry_rank: IntArray
    entry_grade: IntArray
    judged_query: IntArray
    judged_grade: IntArray
    missing: BoolArray
    runid: str = ""


def sorted_rows(scores: FloatArray, offsets: IntArray) -> tuple[FloatArray, IntArray]:
    """Each query's scores sorted ascending, as the rows of a matrix padded with -inf in front
    (or, for very uneven queries, one flat array sorted by query then score). Returns the
    sorted values and, per query, where its row starts in them."""
    lengths = np.diff(offsets)
    n = len(lengths)
    width = int(lengths.max(initial=0))
    if n and (lengths == width).all():
        return np.sort(scores.reshape(n, width), axis=1).ravel(), np.arange(n) * width
    if n * width <= 4 * len(scores) + 1024:
        matrix = np.full((n, width), -np.inf)
        matrix[np.arange(width) >= (width - lengths)[:, None]] = scores
        return np.sort(matrix, axis=1).ravel(), np.arange(n) * width
    query = np.repeat(np.arange(n), lengths)
    return scores[np.lexsort((scores, query))], offsets[:-1] - 0


def _bound(values: FloatArray, lo: IntArray, hi: IntArray, x: FloatArray, strict: bool) -> IntArray:
    """Per entry, the first index in ``values[lo:hi]`` (ascending) holding a value >= x
    (``strict``) or > x."""
    lo, hi = lo.copy(), hi.copy()
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) // 2
        probe = values[np.minimum(mid, len(values) - 1)]
        go = active & ((probe < x) if strict else (probe <= x))
        lo = np.where(go, mid + 1, lo)
        hi = np.where(active & ~go, mid, hi)


def rank_entries(
    scores: FloatArray,
    offsets: IntArray,
    entry_query: IntArray,
    entry_score: FloatArray,
    tie_break: Callable[[IntArray], IntArray],
) -> IntArray:
    """1-based ranks of the entries in trec_eval's order. ``tie_break(positions)`` counts, for
    the entries at those positions (whose score other documents share), the documents with
    the same score and a greater id."""
    lengths = np.diff(offsets)
    width = int(lengths.max(initial=0))
    if width and len(entry_query) * width <= 8 * len(scores) and (lengths == width).all():
        above, equal = _count_directly(scores.reshape(-1, width), entry_query, entry_score)
    else:
        values, starts = sorted_rows(scores, offsets)
        row_end = np.append(starts[1:], len(values)) if len(starts) else starts
        lo, hi = starts[entry_query], row_end[entry_query]
        upper = _bound(values, lo, hi, entry_score, strict=False)
        above, equal = hi - upper, upper - _bound(values, lo, hi, entry_score, strict=True)
    ranks = above.astype(np.int64) + 1
    tied = np.flatnonzero(equal > 1)
    if len(tied):
        ranks[tied] += tie_break(tied)
    return ranks


def _count_directly(
    matrix: FloatArray, entry_query: IntArray, entry_score: FloatArray
) -> tuple[IntArray, IntArray]:
    """Scores above and equal to each entry's own, by comparing with its query's row (when
    the entries are few, cheaper than sorting every row)."""
    above = np.zeros(len(entry_query), dtype=np.int64)
    equal = np.zeros(len(entry_query), dtype=np.int64)
    step = max(1, 4_000_000 // max(matrix.shape[1], 1))
    for begin in range(0, len(entry_query), step):
        rows = matrix[entry_query[begin : begin + step]]
        own = entry_score[begin : begin + step, None]
        above[begin : begin + step] = np.count_nonzero(rows > own, axis=1)
        equal[begin : begin + step] = np.count_nonzero(rows == own, axis=1)
    return above, equal


def from_dicts(qrels: Qrels, run: Run, complete: bool = False) -> Ranked:
    """The entries of a run held as dicts (query -> document -> score)."""
    query_ids = sorted(q for q in qrels if (q in run or complete) and qrels[q])
    lengths = np.fromiter((len(run.get(q, ())) for q in query_ids), np.int64, len(query_ids))
    missing = np.array([q not in run for q in query_ids], dtype=bool)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    scores = np.fromiter(
        (s for q in query_ids for s in run.get(q, {}).values()), np.float64, int(offsets[-1])
    )
    e_query: list[int] = []
    e_score: list[float] = []
    e_grade: list[int] = []
    e_doc: list[str] = []
    j_query: list[int] = []
    j_grade: list[int] = []
    for qi, qid in enumerate(query_ids):
        retrieved = run.get(qid, {})
        for doc, grade in qrels[qid].items():
            j_query.append(qi)
            j_grade.append(int(grade))
            score = retrieved.get(doc)
            if score is not None:
                e_query.append(qi)
                e_score.append(score)
                e_grade.append(int(grade))
                e_doc.append(doc)
    entry_query = np.array(e_query, dtype=np.int64)
    entry_score = np.array(e_score, dtype=np.float64)

    def tie_break(positions: IntArray) -> IntArray:
        above = []
        for p in positions.tolist():
            doc, score = e_doc[p], e_score[p]
            retrieved = run[query_ids[e_query[p]]]
            above.append(sum(1 for d, s in retrieved.items() if s == score and d > doc))
        return np.array(above, dtype=np.int64)

    ranks = rank_entries(scores, offsets, entry_query, entry_score, tie_break)
    return Ranked(
        query_ids,
        np.where(missing, 1, lengths),
        entry_query,
        ranks,
        np.array(e_grade, dtype=np.int64),
        np.array(j_query, dtype=np.int64),
        np.array(j_grade, dtype=np.int64),
        missing,
    )

"""The vectorised engine: trec_eval measures over many queries at once (TREC files, large runs).

Same conventions as the per-query engine (and trec_eval): ranking by score descending then
document id descending, measures over the queries in both qrels and run (``complete=True``
adds qrels-only queries, scored as trec_eval ``-c`` scores them). :mod:`.ranked` gives every
judged retrieved document ("entry") its rank; :class:`BatchFacts` applies ``-M`` and ``-J``,
orders the entries by query then rank, and offers the counts and running sums the measures'
``batch`` computations (in :mod:`.measures`) turn into one column of values each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .core import UNJUDGED, BoolArray, FloatArray, Gain, IntArray, Measure, Params
from .measures import declaration_of
from .ranked import Qrels, Ranked, Run, from_dicts

__all__ = [
    "BatchFacts",
    "BatchResult",
    "Ideal",
    "Qrels",
    "Run",
    "evaluate_batch",
    "evaluate_ranked",
]


@dataclass(frozen=True)
class BatchResult:
    query_ids: list[str]
    values: dict[str, FloatArray]  # measure label -> one value per query, in query_ids order
    texts: dict[str, list[str]] = field(default_factory=dict)  # relstring's strings
    missing: BoolArray | None = None  # queries the run lacks (complete=True)

    def mean(self, label: str) -> float:
        column = self.values[label]
        return float(column.mean()) if len(column) else 0.0

    def per_query(self) -> dict[str, dict[str, float]]:
        return {
            qid: {label: float(column[i]) for label, column in self.values.items()}
            for i, qid in enumerate(self.query_ids)
        }


class Ideal:
    """Each query's ideal ranking under one gain table: the positive gains of its judged
    documents, best first, as one flat array with per-query offsets, and running sums."""

    def __init__(self, query: IntArray, gains: FloatArray, n_queries: int) -> None:
        keep = gains > 0
        query, gains = query[keep], gains[keep]
        order = np.lexsort((-gains, query))
        self.query, self.gains = query[order], gains[order]
        self.lengths = np.bincount(self.query, minlength=n_queries)
        self.offsets = np.concatenate(([0], np.cumsum(self.lengths)))[:-1]
        position = np.arange(len(self.query)) - self.offsets[self.query]
        self.position = position
        self.discounted = _group_cumsum(self.gains / np.log2(position + 2.0), self.query)
        self.total = _group_cumsum(self.gains, self.query)
        self.cost = _group_cumsum(np.maximum(self.gains, 1.0), self.query)

    def dcg(self, query: IntArray, k: IntArray | int) -> FloatArray:
        """Ideal DCG of the top k, per item (query, k)."""
        return _prefix(self.discounted, self.offsets[query], np.minimum(k, self.lengths[query]))

    def full_dcg(self) -> FloatArray:
        return self.dcg(np.arange(len(self.lengths)), self.lengths)

    def at(self, running: FloatArray, query: IntArray, k: IntArray | int) -> FloatArray:
        """One of the running sums (``discounted``, ``total``, ``cost``) at the top k."""
        return _prefix(running, self.offsets[query], np.minimum(k, self.lengths[query]))


def _group_cumsum(values: FloatArray, groups: IntArray) -> FloatArray:
    """Running sums restarting at each group (``groups`` sorted)."""
    total = np.cumsum(values)
    if not len(values):
        return total
    first = np.searchsorted(groups, groups, side="left")
    return total - (total[first] - values[first])


def _prefix(running: FloatArray, start: IntArray, count: IntArray) -> FloatArray:
    """Sum of the first ``count`` values of each group from its running sums."""
    count = np.asarray(count)
    safe = np.maximum(start + count - 1, 0)
    picked = running[np.minimum(safe, max(len(running) - 1, 0))] if len(running) else safe * 0.0
    return np.where(count > 0, picked, 0.0)


class BatchFacts:
    """The entries of many queries after ``-M`` and ``-J``, by query then rank.

    ``eq``, ``er``, ``ec`` are parallel arrays over the entries (query, 1-based rank, code as
    in :mod:`.core`); ``jq``, ``jg`` the qrels lines (query, grade); per query: ``num_ret``,
    ``num_rel``, ``num_nonrel`` (judged with 0 <= grade < level)."""

    n: int
    level: int
    gain: Gain
    num_docs: int
    eq: IntArray
    er: IntArray
    ec: IntArray
    num_ret: IntArray
    jq: IntArray
    jg: IntArray
    num_rel: FloatArray
    num_nonrel: FloatArray
    relevant: BoolArray
    num_rel_ret: FloatArray

    def __init__(
        self,
        ranked: Ranked,
        relevance_level: int = 1,
        gain: Gain = "linear",
        judged_only: bool = False,
        max_retrieved: int | None = None,
        num_docs: int = 0,
    ) -> None:
        self.n = n = len(ranked.query_ids)
        self.level, self.gain, self.num_docs = relevance_level, gain, num_docs
        num_ret = ranked.num_ret.astype(np.int64)
        q, r = ranked.entry_query, ranked.entry_rank
        code = np.where(ranked.entry_grade >= 0, ranked.entry_grade, UNJUDGED)
        if max_retrieved is not None:
            keep = r <= max_retrieved
            q, r, code = q[keep], r[keep], code[keep]
            num_ret = np.minimum(num_ret, max(max_retrieved, 0))
        order = np.lexsort((r, q))
        q, r, code = q[order], r[order], code[order]
        if judged_only:
            keep = code >= 0
            q, code = q[keep], code[keep]
            num_ret = np.bincount(q, minlength=n).astype(np.int64)
            r = np.arange(len(q)) - np.searchsorted(q, q, side="left") + 1
        self.eq, self.er, self.ec = q, r.astype(np.int64), code.astype(np.int64)
        self.num_ret = num_ret
        self.jq, self.jg = ranked.judged_query, ranked.judged_grade
        judged = self.jg >= 0
        self.num_rel = self._bincount(self.jq[self.jg >= relevance_level])
        self.num_nonrel = self._bincount(self.jq[judged & (self.jg < relevance_level)])
        self.relevant = self.ec >= relevance_level
        self.num_rel_ret = self.count(self.relevant)
        self._ideal: dict[str, Ideal] = {}

    def _bincount(self, index: IntArray, weights: FloatArray | None = None) -> FloatArray:
        return np.bincount(index, weights=weights, minlength=self.n).astype(np.float64)

    def count(self, where: BoolArray) -> FloatArray:
        """Each query's entries where ``where`` holds."""
        return self._bincount(self.eq[where])

    def total(self, values: FloatArray, where: BoolArray | None = None) -> FloatArray:
        """Each query's sum of ``values`` over its entries (where ``where`` holds), in rank
        order, as trec_eval adds them."""
        if where is None:
            return self._bincount(self.eq, values)
        return self._bincount(self.eq[where], values[where])

    def hits(self, k: int | IntArray | None) -> FloatArray:
        """Relevant documents in each query's top k (``k`` one number or one per entry)."""
        if k is None:
            return self.num_rel_ret
        return self.count(self.relevant & (self.er <= k))

    def safe_divide(self, top: FloatArray, bottom: FloatArray) -> FloatArray:
        """``top / bottom``, 0 where ``bottom`` is 0."""
        return np.where(bottom != 0, top / np.where(bottom != 0, bottom, 1), 0.0)

    @cached_property
    def cum_rel(self) -> FloatArray:
        """Relevant entries at or above each entry, within its query."""
        return _group_cumsum(self.relevant.astype(np.float64), self.eq)

    def running(self, values: FloatArray) -> FloatArray:
        """Each entry's running sum of ``values`` down its query's ranking (itself included)."""
        return _group_cumsum(values, self.eq)

    @cached_property
    def _rank_keys(self) -> tuple[IntArray, int]:
        width = int(self.er.max(initial=0)) + 2
        return self.eq * width + self.er, width

    def running_at(self, running: FloatArray, query: IntArray, cutoff: IntArray) -> FloatArray:
        """A running sum (see :meth:`running`) at rank ``cutoff`` of ``query``: its value at
        the query's last entry ranked at or above the cutoff (0 if none), per item."""
        keys, width = self._rank_keys
        if not len(keys):
            return np.zeros(len(query))
        index = np.searchsorted(keys, query * width + np.minimum(cutoff, width - 1), "right") - 1
        safe = np.maximum(index, 0)
        return np.where((index >= 0) & (self.eq[safe] == query), running[safe], 0.0)

    @cached_property
    def group_start(self) -> IntArray:
        """Index of the first entry of each entry's query."""
        return np.searchsorted(self.eq, self.eq, side="left")

    @cached_property
    def first_rank(self) -> FloatArray:
        """Rank of each query's first relevant document (inf where none was retrieved)."""
        first = np.full(self.n, np.inf)
        np.minimum.at(first, self.eq[self.relevant], self.er[self.relevant].astype(np.float64))
        return first

    @cached_property
    def relevant_precision(self) -> FloatArray:
        """Precision at each relevant entry (0 at the others)."""
        return np.where(self.relevant, self.cum_rel / self.er, 0.0)

    def gain_values(self, grades: IntArray, params: Params | None) -> FloatArray:
        """Gains of grades under trec_eval's table: the grade (or ``2^grade - 1``), unless a
        ``level=gain`` parameter says otherwise; 0 for negative codes."""
        positive = np.maximum(grades, 0).astype(np.float64)
        values = positive if self.gain == "linear" else np.exp2(positive) - 1.0
        for level, value in (params.level_gains() if params is not None else {}).items():
            values = np.where(grades == level, value, values)
        return np.where(grades >= 0, values, 0.0)

    def ideal(self, params: Params | None) -> Ideal:
        key = params.text if params is not None else ""
        found = self._ideal.get(key)
        if found is None:
            judged = self.jg >= 0
            gains = self.gain_values(self.jg[judged], params)
            found = self._ideal[key] = Ideal(self.jq[judged], gains, self.n)
        return found

    @cached_property
    def grade_ideal(self) -> Ideal:
        """ndcg_cut's ideal ranking: every judged grade > 0 as its gain (no parameters)."""
        return self.ideal(None)

    @cached_property
    def top_level(self) -> IntArray:
        """Each query's highest judged level (-1 for none): its gain table runs from 0 to it."""
        top = np.full(self.n, -1, dtype=np.int64)
        judged = self.jg >= 0
        np.maximum.at(top, self.jq[judged], self.jg[judged])
        return top


def evaluate_ranked(
    ranked: Ranked,
    measures: Sequence[Measure],
    relevance_level: int = 1,
    gain: Gain = "linear",
    *,
    judged_only: bool = False,
    max_retrieved: int | None = None,
    num_docs: int = 0,
) -> BatchResult:
    """Every requested measure for every query of ``ranked``."""
    facts = BatchFacts(ranked, relevance_level, gain, judged_only, max_retrieved, num_docs)
    values: dict[str, FloatArray] = {}
    texts: dict[str, list[str]] = {}
    for measure in measures:
        declared, arg = declaration_of(measure)
        column = np.asarray(declared.batch(facts, arg), dtype=np.float64)
        if declared.zero_when_missing and ranked.missing.any():
            column = np.where(ranked.missing, 0.0, column)
        values[measure.label] = column
        if declared.text_batch is not None:
            texts[measure.label] = [
                "" if gone else text
                for text, gone in zip(declared.text_batch(facts, arg), ranked.missing, strict=True)
            ]
    return BatchResult(ranked.query_ids, values, texts, ranked.missing)


def evaluate_batch(
    qrels: Qrels,
    run: Run,
    measures: Sequence[Measure],
    relevance_level: int = 1,
    gain: Gain = "linear",
    complete: bool = False,
    *,
    judged_only: bool = False,
    max_retrieved: int | None = None,
    num_docs: int = 0,
) -> BatchResult:
    """Measures of a run held as dicts (query -> document -> score) against qrels (query ->
    document -> grade), over the queries in both (every qrels query with ``complete``)."""
    return evaluate_ranked(
        from_dicts(qrels, run, complete),
        measures,
        relevance_level,
        gain,
        judged_only=judged_only,
        max_retrieved=max_retrieved,
        num_docs=num_docs,
    )

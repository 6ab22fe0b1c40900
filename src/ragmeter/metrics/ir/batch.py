"""The vectorised engine: trec_eval measures over many queries at once (TREC files, large runs).

Same conventions as the per-query engine (and trec_eval): ranking by score descending then
document id descending, ``P@k`` over k, measures over the queries present in both qrels and run
(``complete=True`` adds qrels-only queries, scored as an empty ranking, like ``trec_eval -c``).

Only the judged relevant documents are looked up in the run (a few per query); every run score
is touched once, by NumPy: the rank of a relevant document is one plus the number of the query's
scores above its own (ties broken by document id, in Python, only where scores are equal).
:class:`BatchFacts` holds those ranks; each measure's ``batch`` computation in :mod:`.measures`
turns them into one column of values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain

import numpy as np

from .core import BoolArray, FloatArray, Gain, IntArray, Measure, gain_of
from .measures import declaration_of
from .query import query_measures

Qrels = Mapping[str, Mapping[str, float]]
Run = Mapping[str, Mapping[str, float]]


@dataclass(frozen=True)
class BatchResult:
    query_ids: list[str]
    values: dict[str, FloatArray]  # measure label -> one value per query, in query_ids order

    def mean(self, label: str) -> float:
        column = self.values[label]
        return float(column.mean()) if len(column) else 0.0

    def per_query(self) -> dict[str, dict[str, float]]:
        return {
            qid: {label: float(column[i]) for label, column in self.values.items()}
            for i, qid in enumerate(self.query_ids)
        }


def _scores_matrix(run: Run, query_ids: list[str]) -> tuple[FloatArray, IntArray]:
    lengths = np.fromiter((len(run[q]) for q in query_ids), dtype=np.int64, count=len(query_ids))
    flat = np.fromiter(
        chain.from_iterable(run[q].values() for q in query_ids),
        dtype=np.float64,
        count=int(lengths.sum()),
    )
    width = int(lengths.max()) if len(lengths) else 0
    if len(lengths) and (lengths == width).all():
        return flat.reshape(len(query_ids), width), lengths
    matrix = np.full((len(query_ids), width), -np.inf)
    matrix[np.arange(width) < lengths[:, None]] = flat
    return matrix, lengths


class BatchFacts:
    """The retrieved judged documents of many queries: one entry each, with its query and rank.

    ``qidx``, ``ranks``, ``relevant`` and ``entry_gain`` are parallel arrays over the entries;
    ``num_rel`` and ``lengths`` (documents retrieved) hold one value per query.
    """

    lengths: IntArray
    n_queries: int
    qidx: IntArray
    ranks: IntArray
    relevant: BoolArray
    num_rel: IntArray
    safe_rel: IntArray
    ideal_width: int
    ideal_gains: FloatArray
    discounts: FloatArray
    entry_gain: FloatArray

    def __init__(
        self, qrels: Qrels, run: Run, query_ids: list[str], relevance_level: float, gain: Gain
    ) -> None:
        matrix, self.lengths = _scores_matrix(run, query_ids)
        self.n_queries = n_queries = len(query_ids)

        # judged documents with grade > 0 that the run retrieved: (query, score, grade, doc)
        entry_query: list[int] = []
        entry_score: list[float] = []
        entry_grade: list[float] = []
        entry_doc: list[str] = []
        num_rel = np.zeros(n_queries, dtype=np.int64)
        ideal: list[list[float]] = []
        for qi, qid in enumerate(query_ids):
            judged = qrels[qid]
            retrieved = run[qid]
            positive: list[float] = []
            for doc, grade in judged.items():
                if grade <= 0:
                    continue
                positive.append(grade)
                if grade >= relevance_level:
                    num_rel[qi] += 1
                score = retrieved.get(doc)
                if score is not None:
                    entry_query.append(qi)
                    entry_score.append(score)
                    entry_grade.append(grade)
                    entry_doc.append(doc)
            ideal.append(sorted((gain_of(g, gain) for g in positive), reverse=True))

        self.qidx = qidx = np.array(entry_query, dtype=np.int64)
        scores = np.array(entry_score, dtype=np.float64)
        grades = np.array(entry_grade, dtype=np.float64)
        rows = matrix[qidx]
        above = (rows > scores[:, None]).sum(axis=1)
        tied = (rows == scores[:, None]).sum(axis=1) - 1
        for position in np.flatnonzero(tied > 0):
            retrieved = run[query_ids[qidx[position]]]
            doc, score = entry_doc[position], scores[position]
            above[position] += sum(1 for d, s in retrieved.items() if s == score and d > doc)
        self.ranks = above + 1
        self.relevant = grades >= relevance_level
        self.num_rel = num_rel
        self.safe_rel = np.maximum(num_rel, 1)

        self.ideal_width = ideal_width = max((len(g) for g in ideal), default=0)
        self.ideal_gains = np.zeros((n_queries, ideal_width))
        for qi, gains in enumerate(ideal):
            self.ideal_gains[qi, : len(gains)] = gains
        longest = max(ideal_width, int(self.lengths.max(initial=0)))
        self.discounts = 1.0 / np.log2(np.arange(2, longest + 2))
        self.entry_gain = np.array([gain_of(g, gain) for g in entry_grade], dtype=np.float64)

    def count_relevant(self, where: BoolArray | None = None) -> FloatArray:
        """Each query's relevant entries (only those where ``where`` is true, if given)."""
        mask = self.relevant if where is None else self.relevant & where
        return np.bincount(self.qidx[mask], minlength=self.n_queries).astype(np.float64)

    def hits(self, k: int | None) -> FloatArray:
        """Relevant documents in each query's top k (in its whole ranking without k)."""
        return self.count_relevant(self.ranks <= (np.inf if k is None else k))

    def over_num_rel(self, counts: FloatArray | IntArray) -> FloatArray:
        """``counts / num_rel``, 0 for a query without relevant documents."""
        return np.where(self.num_rel > 0, counts / self.safe_rel, 0.0)

    @cached_property
    def first_rank(self) -> FloatArray:
        """Rank of each query's first relevant document (inf where none was retrieved)."""
        first = np.full(self.n_queries, np.inf)
        relevant = self.relevant
        np.minimum.at(first, self.qidx[relevant], self.ranks[relevant].astype(np.float64))
        return first

    @cached_property
    def _hits_in_order(self) -> tuple[IntArray, IntArray, FloatArray]:
        """Relevant entries by query then rank: (query, rank, precision at that rank)."""
        order = np.lexsort((self.ranks, self.qidx))
        keep = self.relevant[order]
        queries = self.qidx[order][keep]
        ranks = self.ranks[order][keep]
        group_start = np.searchsorted(queries, queries, side="left")
        return queries, ranks, (np.arange(len(queries)) - group_start + 1) / ranks

    def average_precision(self, k: int | None) -> FloatArray:
        queries, ranks, precision = self._hits_in_order
        keep = ranks <= (np.inf if k is None else k)
        total = np.bincount(queries[keep], weights=precision[keep], minlength=self.n_queries)
        return self.over_num_rel(total)

    def ndcg(self, k: int | None) -> FloatArray:
        mask = (self.entry_gain > 0) & (self.ranks <= (np.inf if k is None else k))
        dcg = np.bincount(
            self.qidx[mask],
            weights=self.entry_gain[mask] * self.discounts[self.ranks[mask] - 1],
            minlength=self.n_queries,
        )
        cut = self.ideal_width if k is None else min(k, self.ideal_width)
        ideal_dcg = (self.ideal_gains[:, :cut] * self.discounts[:cut]).sum(axis=1)
        return np.where(ideal_dcg > 0, dcg / np.where(ideal_dcg > 0, ideal_dcg, 1), 0.0)


def evaluate_batch(
    qrels: Qrels,
    run: Run,
    measures: Sequence[Measure],
    relevance_level: float = 1,
    gain: Gain = "linear",
    complete: bool = False,
) -> BatchResult:
    query_ids = sorted(q for q in run if q in qrels)
    facts = BatchFacts(qrels, run, query_ids, relevance_level, gain)
    values = {m.label: declaration_of(m).batch(facts, m.cutoff) for m in measures}
    missing = sorted(q for q in qrels if q not in run) if complete else []
    if not missing:
        return BatchResult(query_ids, values)
    # a query the run lacks is scored as an empty ranking, by the per-query engine
    everyone = sorted(query_ids + missing)
    positions = {q: i for i, q in enumerate(everyone)}
    present = [positions[q] for q in query_ids]
    empty = {q: query_measures([], qrels[q], measures, relevance_level, gain) for q in missing}
    for label, column in values.items():
        full = np.zeros(len(everyone))
        full[present] = column
        for q in missing:
            full[positions[q]] = empty[q][label]
        values[label] = full
    return BatchResult(everyone, values)

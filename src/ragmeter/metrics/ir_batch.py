"""Vectorised trec_eval measures over many queries at once (TREC files, large runs).

Same conventions as :mod:`ragmeter.metrics.ir` (and trec_eval): ranking by score descending then
document id descending, ``P@k`` over k, measures over the queries present in both qrels and run
(``complete=True`` adds qrels-only queries with every measure 0, like ``trec_eval -c``).

Only the judged relevant documents are looked up in the run (a few per query); every run score
is touched once, by NumPy: the rank of a relevant document is one plus the number of the query's
scores above its own (ties broken by document id, in Python, only where scores are equal).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import numpy.typing as npt

from ragmeter.metrics.ir import Gain, Measure, gain_of

Qrels = Mapping[str, Mapping[str, float]]
Run = Mapping[str, Mapping[str, float]]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


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


def evaluate_batch(
    qrels: Qrels,
    run: Run,
    measures: Sequence[Measure],
    relevance_level: float = 1,
    gain: Gain = "linear",
    complete: bool = False,
) -> BatchResult:
    query_ids = sorted(q for q in run if q in qrels)
    matrix, lengths = _scores_matrix(run, query_ids)
    n_queries = len(query_ids)

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

    qidx = np.array(entry_query, dtype=np.int64)
    scores = np.array(entry_score, dtype=np.float64)
    grades = np.array(entry_grade, dtype=np.float64)
    rows = matrix[qidx]
    above = (rows > scores[:, None]).sum(axis=1)
    tied = (rows == scores[:, None]).sum(axis=1) - 1
    for position in np.flatnonzero(tied > 0):
        retrieved = run[query_ids[qidx[position]]]
        doc, score = entry_doc[position], scores[position]
        above[position] += sum(1 for d, s in retrieved.items() if s == score and d > doc)
    ranks = above + 1
    relevant = grades >= relevance_level

    ideal_width = max((len(g) for g in ideal), default=0)
    ideal_gains = np.zeros((n_queries, ideal_width))
    for qi, gains in enumerate(ideal):
        ideal_gains[qi, : len(gains)] = gains
    discounts = 1.0 / np.log2(np.arange(2, max(ideal_width, int(lengths.max(initial=0))) + 2))
    entry_gain = np.array([gain_of(g, gain) for g in entry_grade], dtype=np.float64)
    safe_rel = np.maximum(num_rel, 1)

    def count_within(k: float) -> FloatArray:
        mask = relevant & (ranks <= k)
        return np.bincount(qidx[mask], minlength=n_queries).astype(np.float64)

    first_rank = np.full(n_queries, np.inf)
    np.minimum.at(first_rank, qidx[relevant], ranks[relevant].astype(np.float64))

    order = np.lexsort((ranks, qidx))
    sorted_rel = relevant[order]
    sorted_q = qidx[order][sorted_rel]
    sorted_ranks = ranks[order][sorted_rel]
    group_start = np.searchsorted(sorted_q, sorted_q, side="left")
    position_in_query = np.arange(len(sorted_q)) - group_start + 1
    precision_at_hit = position_in_query / sorted_ranks

    values: dict[str, FloatArray] = {}
    for measure in measures:
        k = measure.cutoff
        name = measure.name
        if name in ("P", "recall", "f1", "success"):
            assert k is not None
            hits = count_within(k)
            precision = hits / k
            recall = np.where(num_rel > 0, hits / safe_rel, 0.0)
            if name == "P":
                column = precision
            elif name == "recall":
                column = recall
            elif name == "success":
                column = (hits > 0).astype(np.float64)
            else:
                total = precision + recall
                column = np.where(
                    hits > 0, 2 * precision * recall / np.where(total > 0, total, 1), 0.0
                )
        elif name == "recip_rank":
            limit = k if k is not None else np.inf
            column = np.where(first_rank <= limit, 1.0 / first_rank, 0.0)
        elif name in ("map", "map_cut"):
            limit = k if k is not None else np.inf
            keep = sorted_ranks <= limit
            precision_sum = np.bincount(
                sorted_q[keep], weights=precision_at_hit[keep], minlength=n_queries
            )
            column = np.where(num_rel > 0, precision_sum / safe_rel, 0.0)
        elif name == "Rprec":
            mask = relevant & (ranks <= num_rel[qidx])
            hits_within_r = np.bincount(qidx[mask], minlength=n_queries)
            column = np.where(num_rel > 0, hits_within_r / safe_rel, 0.0)
        elif name in ("ndcg", "ndcg_cut"):
            limit = k if k is not None else np.inf
            mask = (entry_gain > 0) & (ranks <= limit)
            dcg = np.bincount(
                qidx[mask],
                weights=entry_gain[mask] * discounts[ranks[mask] - 1],
                minlength=n_queries,
            )
            cut = ideal_width if k is None else min(k, ideal_width)
            ideal_dcg = (ideal_gains[:, :cut] * discounts[:cut]).sum(axis=1)
            column = np.where(ideal_dcg > 0, dcg / np.where(ideal_dcg > 0, ideal_dcg, 1), 0.0)
        elif name == "num_rel":
            column = num_rel.astype(np.float64)
        elif name == "num_rel_ret":
            column = np.bincount(qidx[relevant], minlength=n_queries).astype(np.float64)
        elif name == "num_ret":
            column = lengths.astype(np.float64)
        else:  # pragma: no cover - parse_measure guards the names
            raise ValueError(f"unknown measure {measure}")
        values[measure.label] = column

    if complete:
        missing = sorted(q for q in qrels if q not in run)
        if missing:
            query_ids = sorted(query_ids + missing)
            positions = {q: i for i, q in enumerate(query_ids)}
            for label, column in values.items():
                full = np.zeros(len(query_ids))
                full[[positions[q] for q in sorted(set(query_ids) - set(missing))]] = column
                if label == "num_rel":
                    for q in missing:
                        full[positions[q]] = sum(
                            1 for g in qrels[q].values() if g >= relevance_level
                        )
                values[label] = full
    return BatchResult(query_ids, values)

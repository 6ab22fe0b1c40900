"""The trec_eval measures, each declared once: name, cutoff, and how both engines compute it.

A declaration's ``query`` computation reads one query's :class:`~.query.QueryFacts` and returns a
float; its ``batch`` computation reads :class:`~.batch.BatchFacts` and returns one value per
query. ``parse_measure``, ``query_measures``, ``evaluate_batch`` (and so ``ragmeter trec``) all
read :data:`TREC_MEASURES`: a new measure is one more :class:`TrecMeasure` in it.

Conventions (checked against pytrec_eval in the tests):
- binary measures count a document as relevant when ``grade >= relevance_level`` (default 1);
- ``P@k`` divides by k; ``recall@k``, ``map``, ``Rprec`` are 0 for a query with no relevant
  documents;
- ``ndcg`` uses the grade as gain (``linear``) or ``2^grade - 1`` (``exponential``); documents
  with grade <= 0 gain nothing; the ideal ranking holds every judged document with grade > 0,
  retrieved or not; an ideal DCG of 0 gives 0;
- ``recip_rank`` has no cutoff unless one is given (``recip_rank.10`` is MRR@10).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

import numpy as np

from .core import FloatArray, Measure, MeasureError, need

if TYPE_CHECKING:
    from .batch import BatchFacts
    from .query import QueryFacts

CutoffRule = Literal["none", "optional", "required"]
# trec_eval's default cutoffs (what ``-m P`` reports); success has its own
TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


@dataclass(frozen=True)
class TrecMeasure:
    """One measure: ``query(facts, cutoff)`` and ``batch(facts, cutoff)`` give the same values."""

    name: str
    description: str
    query: Callable[[QueryFacts, int | None], float]
    batch: Callable[[BatchFacts, int | None], FloatArray]
    cutoff: CutoffRule = "none"
    default_cutoffs: tuple[int, ...] = ()  # what the bare name stands for in trec_eval's -m
    aliases: tuple[str, ...] = ()  # lower-case names parse_measure also reads


def _f1_query(q: QueryFacts, k: int | None) -> float:
    hits = q.hits(k)
    precision = hits / need(k)
    recall = hits / q.num_rel if q.num_rel else 0.0
    return 2 * precision * recall / (precision + recall) if hits else 0.0


def _f1_batch(b: BatchFacts, k: int | None) -> FloatArray:
    hits = b.hits(k)
    precision = hits / need(k)
    recall = b.over_num_rel(hits)
    total = precision + recall
    return np.where(hits > 0, 2 * precision * recall / np.where(total > 0, total, 1), 0.0)


def _recip_rank_batch(b: BatchFacts, k: int | None) -> FloatArray:
    first = b.first_rank
    return np.where(first <= (np.inf if k is None else k), 1.0 / first, 0.0)


_DECLARATIONS = (
    TrecMeasure(
        "P",
        "relevant documents in the top k, over k",
        query=lambda q, k: q.hits(k) / need(k),
        batch=lambda b, k: b.hits(k) / need(k),
        cutoff="required",
        default_cutoffs=TREC_CUTOFFS,
        aliases=("p", "precision"),
    ),
    TrecMeasure(
        "recall",
        "relevant documents in the top k, over all relevant documents",
        query=lambda q, k: q.hits(k) / q.num_rel if q.num_rel else 0.0,
        batch=lambda b, k: b.over_num_rel(b.hits(k)),
        cutoff="required",
        default_cutoffs=TREC_CUTOFFS,
    ),
    TrecMeasure(
        "f1",
        "harmonic mean of P@k and recall@k",
        query=_f1_query,
        batch=_f1_batch,
        cutoff="required",
        default_cutoffs=TREC_CUTOFFS,
    ),
    TrecMeasure(
        "success",
        "1 if a relevant document is in the top k",
        query=lambda q, k: float(q.hits(k) > 0),
        batch=lambda b, k: (b.hits(k) > 0).astype(np.float64),
        cutoff="required",
        default_cutoffs=(1, 5, 10),
        aliases=("hit_rate", "hit"),
    ),
    TrecMeasure(
        "ndcg_cut",
        "nDCG of the top k",
        query=lambda q, k: q.ndcg(k),
        batch=lambda b, k: b.ndcg(k),
        cutoff="required",
        default_cutoffs=TREC_CUTOFFS,
        aliases=("ndcg_at",),
    ),
    TrecMeasure(
        "ndcg",
        "nDCG of the whole ranking",
        query=lambda q, k: q.ndcg(None),
        batch=lambda b, k: b.ndcg(None),
    ),
    TrecMeasure(
        "map",
        "average precision of the whole ranking",
        query=lambda q, k: q.average_precision(None),
        batch=lambda b, k: b.average_precision(None),
        aliases=("ap",),
    ),
    TrecMeasure(
        "map_cut",
        "average precision of the top k (over all relevant documents)",
        query=lambda q, k: q.average_precision(k),
        batch=lambda b, k: b.average_precision(k),
        cutoff="required",
        default_cutoffs=TREC_CUTOFFS,
    ),
    TrecMeasure(
        "recip_rank",
        "1 / rank of the first relevant document (0 past k, if a cutoff is given)",
        query=lambda q, k: (
            1.0 / q.first if q.first is not None and (k is None or q.first <= k) else 0.0
        ),
        batch=_recip_rank_batch,
        cutoff="optional",
        aliases=("mrr", "rr"),
    ),
    TrecMeasure(
        "Rprec",
        "precision at rank R, R the number of relevant documents",
        query=lambda q, k: q.hits(q.num_rel) / q.num_rel if q.num_rel and q.num_ret else 0.0,
        batch=lambda b, k: b.over_num_rel(b.count_relevant(b.ranks <= b.num_rel[b.qidx])),
        aliases=("r_precision", "rprec"),
    ),
    TrecMeasure(
        "num_rel",
        "relevant documents judged",
        query=lambda q, k: float(q.num_rel),
        batch=lambda b, k: b.num_rel.astype(np.float64),
    ),
    TrecMeasure(
        "num_rel_ret",
        "relevant documents retrieved",
        query=lambda q, k: float(q.num_rel_ret),
        batch=lambda b, k: b.count_relevant(),
    ),
    TrecMeasure(
        "num_ret",
        "documents retrieved",
        query=lambda q, k: float(q.num_ret),
        batch=lambda b, k: b.lengths.astype(np.float64),
    ),
)

TREC_MEASURES: Mapping[str, TrecMeasure] = MappingProxyType({m.name: m for m in _DECLARATIONS})


def check_cutoff(declared: TrecMeasure, cutoff: int | None, shown: str) -> None:
    """Raise :class:`MeasureError` unless ``cutoff`` suits the measure (``shown`` names it)."""
    name = declared.name
    if cutoff is not None and declared.cutoff == "none":
        raise MeasureError(f"measure {name!r} takes no cutoff (got {shown!r})")
    if cutoff is None and declared.cutoff == "required":
        raise MeasureError(f"measure {name!r} needs a cutoff, e.g. {name}.10")
    if cutoff is not None and cutoff < 1:
        raise MeasureError(f"cutoff must be >= 1 (got {shown!r})")


_CHECKED: dict[tuple[str, int | None], TrecMeasure] = {}  # (name, cutoff) -> declaration


def declaration_of(measure: Measure) -> TrecMeasure:
    """The declaration that computes ``measure``, its cutoff checked (once per name and cutoff:
    the per-query engine asks for every measure of every query)."""
    key = (measure.name, measure.cutoff)
    declared = _CHECKED.get(key)
    if declared is None:
        declared = TREC_MEASURES.get(measure.name)
        if declared is None:
            raise MeasureError(f"unknown measure {measure}")
        check_cutoff(declared, measure.cutoff, measure.label)
        _CHECKED[key] = declared
    return declared

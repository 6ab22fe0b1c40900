"""Ranked-retrieval measures computed exactly as trec_eval 10.0 computes them.

Each measure is declared once in :mod:`.measures` (name, cutoff, per-query and batch
computation); :func:`query_measures` scores one ranked list, :func:`evaluate_batch` many queries
at once, and :func:`parse_measure` reads the names. See :mod:`.measures` for the conventions.
"""

from __future__ import annotations

from .batch import BatchResult, evaluate_batch
from .core import Gain, Measure, MeasureError, gain_of, trec_order
from .measures import TREC_MEASURES, TrecMeasure, declaration_of
from .parse import expand_measure, parse_measure
from .query import query_measures

__all__ = [
    "TREC_MEASURES",
    "BatchResult",
    "Gain",
    "Measure",
    "MeasureError",
    "TrecMeasure",
    "declaration_of",
    "evaluate_batch",
    "expand_measure",
    "gain_of",
    "parse_measure",
    "query_measures",
    "trec_order",
]

"""Ranked-retrieval measures computed exactly as trec_eval 10.0 computes them.

Each measure is declared once in :mod:`.measures` (name, parameters, per-query and batch
computation); :func:`query_measures` scores one ranked list, :func:`evaluate_batch` many queries
at once, :func:`evaluate_files` TREC files (read by :mod:`.files` without building dicts);
:func:`parse_measure` and :func:`expand_measures` read the names, trec_eval's ``-m`` syntax
included. :mod:`.report` prints trec_eval's output lines.
"""

from __future__ import annotations

from .batch import BatchFacts, BatchResult, evaluate_batch, evaluate_ranked
from .core import Gain, Measure, MeasureError, Params, gain_of, trec_order
from .files import evaluate_files, read_ranked
from .measures import NICKNAMES, TREC_MEASURES, TrecMeasure, declaration_of
from .parse import expand_measure, expand_measures, parse_measure
from .query import query_measures

__all__ = [
    "NICKNAMES",
    "TREC_MEASURES",
    "BatchFacts",
    "BatchResult",
    "Gain",
    "Measure",
    "MeasureError",
    "Params",
    "TrecMeasure",
    "declaration_of",
    "evaluate_batch",
    "evaluate_files",
    "evaluate_ranked",
    "expand_measure",
    "expand_measures",
    "gain_of",
    "parse_measure",
    "query_measures",
    "read_ranked",
    "trec_order",
]

"""Kept for its importers: the vectorised engine lives in :mod:`ragmeter.metrics.ir.batch`."""

from __future__ import annotations

from ragmeter.metrics.ir.batch import BatchResult, Qrels, Run, evaluate_batch
from ragmeter.metrics.ir.core import FloatArray, IntArray

__all__ = ["BatchResult", "FloatArray", "IntArray", "Qrels", "Run", "evaluate_batch"]

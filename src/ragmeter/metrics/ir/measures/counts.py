"""Counts and identifiers: runid, num_q, num_ret, num_rel, num_rel_ret, num_nonrel_judged_ret,
relstring. Counts are summed over queries, not averaged, and print as whole numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..core import NONPOOL, UNJUDGED, FloatArray, MeasureArg, params_of
from . import TrecMeasure

if TYPE_CHECKING:
    from ..batch import BatchFacts
    from ..query import QueryFacts


def _char(code: int) -> str:
    if code > 9:
        return ">"
    if code >= 0:
        return str(code)
    return {NONPOOL: "-", UNJUDGED: "."}.get(code, "<")


def _length(arg: MeasureArg) -> int:
    return max(int(params_of(arg).numbers[0]), 0)


def _relstring(q: QueryFacts, arg: MeasureArg) -> str:
    return "".join(_char(code) for code in q.rels[: _length(arg)])


def _relstring_batch(b: BatchFacts, arg: MeasureArg) -> list[str]:
    length = _length(arg)
    chars = [["-"] * min(length, int(n)) for n in b.num_ret.tolist()]
    keep = b.er <= length
    for query, rank, code in zip(
        b.eq[keep].tolist(), b.er[keep].tolist(), b.ec[keep].tolist(), strict=True
    ):
        chars[query][rank - 1] = _char(code)
    return ["".join(row) for row in chars]


def _nonrel_judged(b: BatchFacts) -> FloatArray:
    return b.count((b.ec >= 0) & ~b.relevant)


DECLARED = (
    TrecMeasure(
        "runid",
        "the run's tag (last column of the run file's last line)",
        query=lambda q, arg: 0.0,
        batch=lambda b, arg: np.zeros(b.n),
        summary="none",
        per_query=False,
    ),
    TrecMeasure(
        "num_q",
        "queries evaluated",
        query=lambda q, arg: 1.0,
        batch=lambda b, arg: np.ones(b.n),
        summary="sum",
        per_query=False,
        integer=True,
    ),
    TrecMeasure(
        "num_ret",
        "documents retrieved",
        query=lambda q, arg: float(q.num_ret),
        batch=lambda b, arg: b.num_ret.astype(np.float64),
        summary="sum",
        integer=True,
        zero_when_missing=True,
    ),
    TrecMeasure(
        "num_rel",
        "relevant documents judged",
        query=lambda q, arg: float(q.num_rel),
        batch=lambda b, arg: b.num_rel,
        summary="sum",
        integer=True,
    ),
    TrecMeasure(
        "num_rel_ret",
        "relevant documents retrieved",
        query=lambda q, arg: float(q.num_rel_ret),
        batch=lambda b, arg: b.num_rel_ret,
        summary="sum",
        integer=True,
    ),
    TrecMeasure(
        "num_nonrel_judged_ret",
        "judged non-relevant documents retrieved",
        query=lambda q, arg: float(sum(1 for c in q.rels if 0 <= c < q.level)),
        batch=lambda b, arg: _nonrel_judged(b),
        summary="sum",
        integer=True,
    ),
    TrecMeasure(
        "relstring",
        "the codes of the first N (default 10) documents: grade, '>' above 9, '-' not judged, "
        "'.' pooled but unjudged; printed per query only",
        query=lambda q, arg: 0.0,
        batch=lambda b, arg: np.zeros(b.n),
        params="numbers",
        default_numbers=(10.0,),
        summary="none",
        text=_relstring,
        text_batch=_relstring_batch,
    ),
)

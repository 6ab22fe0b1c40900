"""What the TREC-measure modules share: a requested measure, its parameters, trec_eval's codes.

trec_eval's relevance codes for a retrieved document: the grade from the qrels when it was
judged (>= 0), :data:`NONPOOL` (-1) when the qrels do not list it, :data:`UNJUDGED` (-2) when
the qrels list it with a negative grade ("in the pool, not judged", as infAP samples pools).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from ragmeter.errors import InputError

Gain = Literal["linear", "exponential"]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

NONPOOL = -1
UNJUDGED = -2
MIN_GEO_MEAN = 0.00001  # trec_eval's floor for a value under a geometric mean
INFAP_EPSILON = 0.00001


class MeasureError(InputError):
    pass


@dataclass(frozen=True)
class Params:
    """A measure's parameters as trec_eval reads them: ``text`` as written (it names the
    value, ``utility_2,-1,0,0``), ``numbers`` for comma-separated numbers (``utility``,
    ``11pt_avg``, ``set_F``, ``relstring``), ``pairs`` for ``level=gain`` pairs (``ndcg``,
    ``rbp``: ``p=0.8``)."""

    text: str = ""
    numbers: tuple[float, ...] = ()
    pairs: tuple[tuple[str, float], ...] = ()

    def level_gains(self) -> dict[int, float]:
        """The ``level=gain`` pairs whose name is an integer (trec_eval skips the others)."""
        gains: dict[int, float] = {}
        for name, value in self.pairs:
            digits = name[1:] if name[:1] in "+-" else name
            if digits.isdigit() and digits.isascii():
                gains[int(name)] = value
        return gains

    def named(self, name: str, default: float) -> float:
        return next((value for key, value in self.pairs if key == name), default)


Cutoff = int | float
MeasureArg = int | float | Params | None


@dataclass(frozen=True)
class Measure:
    """One reported value: ``Measure("P", 5)`` is ``P_5``, ``Measure("iprec_at_recall", 0.1)``
    is ``iprec_at_recall_0.10``, ``Measure("ndcg", params="1=3,2=9")`` is ``ndcg_1=3,2=9``."""

    name: str
    cutoff: Cutoff | None = None
    params: str | None = None

    @property
    def label(self) -> str:
        """trec_eval's output name: ``P_5``, ``ndcg_cut_10``, ``map``, ``Rprec_mult_0.20``."""
        if self.params is not None:
            return f"{self.name}_{self.params}"
        if self.cutoff is None:
            return self.name
        if isinstance(self.cutoff, float):
            return f"{self.name}_{self.cutoff:3.2f}"
        return f"{self.name}_{self.cutoff}"


def trec_order(run: Mapping[str, float]) -> list[str]:
    """trec_eval's ranking: score descending, then document id descending (ranks ignored)."""
    return sorted(run, key=lambda doc: (run[doc], doc), reverse=True)


def gain_of(grade: float, gain: Gain) -> float:
    if grade <= 0:
        return 0.0
    return float(grade) if gain == "linear" else 2.0**grade - 1.0


def dcg(gains: Iterable[float]) -> float:
    """Discounted cumulative gain of gains in rank order (rank r discounted by log2(r + 1))."""
    total = 0.0
    for i, g in enumerate(gains):
        if g != 0:
            total += g / math.log2(i + 2)
    return total


def need(arg: MeasureArg) -> int:
    """The integer cutoff of a measure that requires one (:func:`declaration_of` checked it)."""
    assert isinstance(arg, int)
    return arg


def fraction(arg: MeasureArg) -> float:
    """The fractional cutoff of ``iprec_at_recall`` and ``Rprec_mult``."""
    assert isinstance(arg, float)
    return arg


def params_of(arg: MeasureArg) -> Params:
    assert isinstance(arg, Params)
    return arg


def relative_cutoff(fraction_of_r: float, num_rel: int) -> int:
    """trec_eval's ``(long) (fraction * R + 0.9)``: a fraction of R as a number of documents."""
    return int(fraction_of_r * num_rel + 0.9)

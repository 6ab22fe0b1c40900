"""What the TREC-measure modules share: a requested measure, the nDCG gain, trec_eval's order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from ragmeter.errors import InputError

Gain = Literal["linear", "exponential"]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class MeasureError(InputError):
    pass


@dataclass(frozen=True)
class Measure:
    name: str
    cutoff: int | None = None

    @property
    def label(self) -> str:
        """trec_eval's output name: ``P_5``, ``ndcg_cut_10``, ``map``."""
        return self.name if self.cutoff is None else f"{self.name}_{self.cutoff}"


def trec_order(run: Mapping[str, float]) -> list[str]:
    """trec_eval's ranking: score descending, then document id descending (ranks ignored)."""
    return sorted(run, key=lambda doc: (run[doc], doc), reverse=True)


def gain_of(grade: float, gain: Gain) -> float:
    if grade <= 0:
        return 0.0
    return float(grade) if gain == "linear" else 2.0**grade - 1.0


def need(cutoff: int | None) -> int:
    """The cutoff of a measure that requires one (:func:`declaration_of` has checked it)."""
    assert cutoff is not None
    return cutoff

"""Ranked-retrieval measures for one query, computed exactly as trec_eval 10.0 computes them.

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

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

Gain = Literal["linear", "exponential"]

# measure name -> (takes a cutoff, requires a cutoff)
_MEASURES: dict[str, tuple[bool, bool]] = {
    "P": (True, True),
    "recall": (True, True),
    "f1": (True, True),
    "success": (True, True),
    "ndcg_cut": (True, True),
    "ndcg": (False, False),
    "map": (False, False),
    "map_cut": (True, True),
    "recip_rank": (True, False),
    "Rprec": (False, False),
    "num_rel": (False, False),
    "num_rel_ret": (False, False),
    "num_ret": (False, False),
}
_ALIASES = {
    "p": "P",
    "precision": "P",
    "mrr": "recip_rank",
    "rr": "recip_rank",
    "r_precision": "Rprec",
    "rprec": "Rprec",
    "ap": "map",
    "hit_rate": "success",
    "ndcg_at": "ndcg_cut",
    "hit": "success",
}
_SPEC = re.compile(r"^([A-Za-z][A-Za-z0-9_]*?)(?:[._@](\d+))?$")


class MeasureError(ValueError):
    pass


@dataclass(frozen=True)
class Measure:
    name: str
    cutoff: int | None = None

    @property
    def label(self) -> str:
        """trec_eval's output name: ``P_5``, ``ndcg_cut_10``, ``map``."""
        return self.name if self.cutoff is None else f"{self.name}_{self.cutoff}"


def parse_measure(text: str) -> Measure:
    """Read ``P.5``, ``P_5``, ``P@5``, ``ndcg_cut.10``, ``recip_rank``, ``mrr@10``, ``map``, ..."""
    match = _SPEC.match(text.strip())
    if not match:
        raise MeasureError(f"cannot read measure {text!r}")
    name, cutoff_text = match.group(1), match.group(2)
    name = _ALIASES.get(name.lower(), name) if name not in _MEASURES else name
    if name not in _MEASURES:
        known = ", ".join(sorted(_MEASURES))
        raise MeasureError(f"unknown measure {text!r} (known: {known}; cutoffs as P.5)")
    takes_cutoff, needs_cutoff = _MEASURES[name]
    cutoff = int(cutoff_text) if cutoff_text else None
    if cutoff is not None and not takes_cutoff:
        raise MeasureError(f"measure {name!r} takes no cutoff (got {text!r})")
    if cutoff is None and needs_cutoff:
        raise MeasureError(f"measure {name!r} needs a cutoff, e.g. {name}.10")
    if cutoff is not None and cutoff < 1:
        raise MeasureError(f"cutoff must be >= 1 (got {text!r})")
    return Measure(name, cutoff)


def trec_order(run: Mapping[str, float]) -> list[str]:
    """trec_eval's ranking: score descending, then document id descending (ranks ignored)."""
    return sorted(run, key=lambda doc: (run[doc], doc), reverse=True)


def gain_of(grade: float, gain: Gain) -> float:
    if grade <= 0:
        return 0.0
    return float(grade) if gain == "linear" else 2.0**grade - 1.0


def _dcg(gains: Iterable[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains) if g > 0)


def query_measures(
    ranked: Sequence[str],
    qrel: Mapping[str, float],
    measures: Sequence[Measure],
    relevance_level: float = 1,
    gain: Gain = "linear",
) -> dict[str, float]:
    """Every requested measure for one query's ranked document ids against its judgments."""
    grades = [qrel.get(doc, 0) for doc in ranked]
    relevant = [g >= relevance_level for g in grades]
    num_rel = sum(1 for g in qrel.values() if g >= relevance_level)
    hits_before: list[int] = []
    count = 0
    for flag in relevant:
        count += flag
        hits_before.append(count)
    first = next((i + 1 for i, flag in enumerate(relevant) if flag), None)
    values: dict[str, float] = {}
    for measure in measures:
        k = measure.cutoff
        name = measure.name
        if name in ("P", "recall", "f1", "success", "map_cut", "ndcg_cut") and k is not None:
            hits = hits_before[min(k, len(ranked)) - 1] if ranked else 0
            precision = hits / k
            recall = hits / num_rel if num_rel else 0.0
            if name == "P":
                value = precision
            elif name == "recall":
                value = recall
            elif name == "f1":
                value = 2 * precision * recall / (precision + recall) if hits else 0.0
            elif name == "success":
                value = float(hits > 0)
            elif name == "map_cut":
                value = _average_precision(relevant[:k], num_rel)
            else:
                value = _ndcg(grades[:k], qrel, gain, k)
        elif name == "ndcg":
            value = _ndcg(grades, qrel, gain, None)
        elif name == "map":
            value = _average_precision(relevant, num_rel)
        elif name == "recip_rank":
            value = 1.0 / first if first is not None and (k is None or first <= k) else 0.0
        elif name == "Rprec":
            value = (
                hits_before[min(num_rel, len(ranked)) - 1] / num_rel if num_rel and ranked else 0.0
            )
        elif name == "num_rel":
            value = float(num_rel)
        elif name == "num_rel_ret":
            value = float(count)
        elif name == "num_ret":
            value = float(len(ranked))
        else:  # pragma: no cover - parse_measure guards the names
            raise MeasureError(f"unknown measure {measure}")
        values[measure.label] = value
    return values


def _average_precision(relevant: Sequence[bool], num_rel: int) -> float:
    if not num_rel:
        return 0.0
    total = 0.0
    hits = 0
    for position, flag in enumerate(relevant, start=1):
        if flag:
            hits += 1
            total += hits / position
    return total / num_rel


def _ndcg(grades: Sequence[float], qrel: Mapping[str, float], gain: Gain, k: int | None) -> float:
    ideal = sorted((gain_of(g, gain) for g in qrel.values() if g > 0), reverse=True)
    ideal_dcg = _dcg(ideal[:k] if k is not None else ideal)
    if ideal_dcg == 0:
        return 0.0
    return _dcg(gain_of(g, gain) for g in grades) / ideal_dcg

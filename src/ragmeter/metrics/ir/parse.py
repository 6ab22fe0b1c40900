"""Measure names as people write them (``P.5``, ``P@5``, ``mrr@10``), read against the table."""

from __future__ import annotations

import re

from .core import Measure, MeasureError
from .measures import TREC_MEASURES, TrecMeasure, check_cutoff

ALIASES = {alias: m.name for m in TREC_MEASURES.values() for alias in m.aliases}
_SPEC = re.compile(r"^([A-Za-z][A-Za-z0-9_]*?)(?:[._@](\d+))?$")
_TREC_SPEC = re.compile(r"^([A-Za-z][A-Za-z0-9_]*?)(?:[._@](\d+(?:,\d+)*))?$")


def _declared(name: str, text: str) -> TrecMeasure:
    name = ALIASES.get(name.lower(), name) if name not in TREC_MEASURES else name
    if name not in TREC_MEASURES:
        known = ", ".join(sorted(TREC_MEASURES))
        raise MeasureError(f"unknown measure {text!r} (known: {known}; cutoffs as P.5)")
    return TREC_MEASURES[name]


def parse_measure(text: str) -> Measure:
    """Read ``P.5``, ``P_5``, ``P@5``, ``ndcg_cut.10``, ``recip_rank``, ``mrr@10``, ``map``, ..."""
    match = _SPEC.match(text.strip())
    if not match:
        raise MeasureError(f"cannot read measure {text!r}")
    declared = _declared(match.group(1), text)
    cutoff = int(match.group(2)) if match.group(2) else None
    check_cutoff(declared, cutoff, text)
    return Measure(declared.name, cutoff)


def expand_measure(text: str) -> list[Measure]:
    """Read a measure as trec_eval's ``-m`` does: ``P.5,10`` is P_5 and P_10, and a bare ``P``
    stands for its default cutoffs (P_5 ... P_1000); other names as :func:`parse_measure`."""
    match = _TREC_SPEC.match(text.strip())
    if not match:
        raise MeasureError(f"cannot read measure {text!r}")
    declared = _declared(match.group(1), text)
    if match.group(2):
        cutoffs: list[int | None] = [int(k) for k in match.group(2).split(",")]
    else:
        cutoffs = [*declared.default_cutoffs] or [None]
    for cutoff in cutoffs:
        check_cutoff(declared, cutoff, text)
    return [Measure(declared.name, k) for k in dict.fromkeys(cutoffs)]

"""Measure names as trec_eval's ``-m`` reads them (``P.5,10``, ``ndcg.1=3,2=9``, ``official``)
and as people write them (``P@5``, ``P_5``, ``mrr@10``), read against the measure table.

trec_eval's rule: the name is everything before the first ``.``, the rest its parameters,
comma-separated: cutoffs (``P.5,10``: P_5 and P_10, sorted), fractions of R
(``iprec_at_recall.0.25,0.5``), numbers (``utility.2,-1,0,0``) or ``level=gain`` pairs
(``ndcg.1=3,2=9``, ``rbp.p=0.8``). A bare name stands for its default cutoffs (``P``: P_5 ...
P_1000); ``official``, ``all_trec`` and ``set`` stand for trec_eval's sets of measures.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .core import Cutoff, Measure, MeasureError
from .measures import (
    DECLINED,
    NICKNAMES,
    TREC_MEASURES,
    TREC_ORDER,
    TrecMeasure,
    check_cutoff,
    read_params,
)

ALIASES = {alias: m.name for m in TREC_MEASURES.values() for alias in m.aliases}
_SHORT = re.compile(r"^(.+?)[_@](\d+)$")  # P_5, P@5, mrr@10


def _declared(name: str, text: str) -> TrecMeasure:
    found = name if name in TREC_MEASURES else ALIASES.get(name.lower())
    if found is None:
        if name in DECLINED:
            raise MeasureError(
                f"measure {name!r} reads preference or judgment-group files (trec_eval -R "
                "prefs, qrels_prefs, qrels_jg), which ragmeter trec does not read"
            )
        known = ", ".join(sorted(TREC_MEASURES, key=str.lower))
        raise MeasureError(
            f"unknown measure {text!r} (known: {known}; sets: {', '.join(NICKNAMES)}; "
            "cutoffs as P.5 or P.5,10)"
        )
    return TREC_MEASURES[found]


def _split(text: str) -> tuple[str, str | None]:
    """(name, parameters) as trec_eval splits them, reading ``P@5`` and ``P_5`` too."""
    text = text.strip()
    if not text:
        raise MeasureError("empty measure name")
    name, dot, params = text.partition(".")
    if dot:
        if not params:
            raise MeasureError(f"improper measure {text!r}: nothing after the '.'")
        return name, params
    known = text in TREC_MEASURES or text in NICKNAMES or text.lower() in ALIASES
    short = None if known else _SHORT.match(text)
    return (short.group(1), short.group(2)) if short else (text, None)


def _cutoff(declared: TrecMeasure, part: str, text: str) -> Cutoff:
    try:
        return float(part) if declared.fractional else int(part)
    except ValueError:
        expected = "a number" if declared.fractional else "a whole-number cutoff"
        raise MeasureError(f"not {expected} in {text!r}: {part!r}") from None


def _measures(declared: TrecMeasure, params: str | None, text: str) -> list[Measure]:
    name = declared.name
    if declared.cutoff != "none":
        if params is None:
            cutoffs: list[Cutoff | None] = [*declared.default_cutoffs] or [None]
        else:
            parts = sorted({_cutoff(declared, p.strip(), text) for p in params.split(",")})
            cutoffs = [*parts]
        for cutoff in cutoffs:
            check_cutoff(declared, cutoff, text)
        return [Measure(name, k) for k in cutoffs]
    if declared.params == "none" and params is not None:
        check_cutoff(declared, 0, text)  # raises: takes no cutoff
    if params is not None:
        read_params(declared, params)
    return [Measure(name, params=params)]


def expand_measure(text: str) -> list[Measure]:
    """Read one ``-m`` argument as trec_eval does: ``P.5,10`` is P_5 and P_10, a bare ``P``
    stands for its default cutoffs, ``official`` for trec_eval's default measures."""
    name, params = _split(text)
    if name in NICKNAMES:
        if params is not None:
            raise MeasureError(f"{name!r} names a set of measures and takes no parameters")
        return [m for member in NICKNAMES[name] for m in expand_measure(member)]
    return _measures(_declared(name, text), params, text)


def parse_measure(text: str) -> Measure:
    """Read one measure value: ``P.5``, ``P_5``, ``P@5``, ``ndcg_cut.10``, ``recip_rank``,
    ``mrr@10``, ``map``, ``ndcg.1=3,2=9``, ``utility.2,-1,0,0``, ``iprec_at_recall.0.5``."""
    name, params = _split(text)
    if name in NICKNAMES:
        raise MeasureError(f"{name!r} names a set of measures: read it with expand_measure")
    declared = _declared(name, text)
    if declared.cutoff == "required" and params is None:
        check_cutoff(declared, None, text)
    found = _measures(declared, params, text) if params is not None else [Measure(declared.name)]
    if len(found) != 1:
        raise MeasureError(f"{text!r} names {len(found)} measures: read it with expand_measure")
    return found[0]


def expand_measures(texts: Iterable[str]) -> list[Measure]:
    """Many ``-m`` arguments, as ``ragmeter trec`` prints them: in trec_eval's table order,
    cutoffs ascending. As in trec_eval, a measure given parameters is not also reported with
    its defaults because a set or a bare name mentioned it (``-m official -m P.5``: P_5, not
    P_5 ... P_1000); unlike trec_eval, which keeps the first, several ``-m`` of one measure add
    up (``-m P.5 -m P.10``: P_5 and P_10; ``-m recip_rank -m recip_rank.10``: both)."""
    defaults: dict[str, list[Measure]] = {}
    chosen: dict[str, list[Measure]] = {}
    for text in texts:
        name, params = _split(text)
        if name in NICKNAMES:
            if params is not None:
                raise MeasureError(f"{name!r} names a set of measures and takes no parameters")
            for member in NICKNAMES[name]:
                declared = _declared(member, text)
                defaults.setdefault(declared.name, []).extend(_measures(declared, None, text))
            continue
        declared = _declared(name, text)
        found = _measures(declared, params, text)
        overridable = params is None and declared.cutoff == "required"
        (defaults if overridable else chosen).setdefault(declared.name, []).extend(found)
    ordered: list[Measure] = []
    for name in TREC_ORDER:
        measures = list(dict.fromkeys(chosen.get(name) or defaults.get(name) or []))
        cut = [m for m in measures if m.cutoff is not None]
        ordered.extend([m for m in measures if m.cutoff is None] + sorted(cut, key=_key))
    return ordered


def _key(measure: Measure) -> float:
    return float(measure.cutoff or 0)

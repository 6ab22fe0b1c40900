"""The trec_eval measures, each declared once: name, parameters, and how both engines compute it.

A declaration's ``query`` computation reads one query's :class:`~..query.QueryFacts` and returns
a float; its ``batch`` computation reads :class:`~..batch.BatchFacts` and returns one value per
query. Both receive the measure's argument: its cutoff (``P.5``: 5, ``iprec_at_recall.0.1``:
0.1) or its :class:`~..core.Params` (``utility.1,-1,0,0``, ``ndcg.1=3,2=9``). ``parse_measure``,
``expand_measures``, ``query_measures``, ``evaluate_batch`` (and so ``ragmeter trec``) all read
:data:`TREC_MEASURES`, in trec_eval's order (its output order): a new measure is one more
:class:`TrecMeasure` in one of the family modules (``counts``, ``sets``, ``ranks``, ``gains``).

Conventions are trec_eval 10.0's (checked against pytrec_eval in the tests): binary measures
count ``grade >= relevance_level``; negative grades are "in the pool, not judged"; ``P@k``
divides by k; ``recip_rank.k`` (a ragmeter addition, as ``f1.k``) is MRR@k.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from ..core import Cutoff, FloatArray, Measure, MeasureArg, MeasureError, Params

if TYPE_CHECKING:
    from ..batch import BatchFacts
    from ..query import QueryFacts

CutoffRule = Literal["none", "optional", "required"]
ParamsRule = Literal["none", "numbers", "pairs"]
Summary = Literal["mean", "sum", "geometric", "none"]
# trec_eval's default cutoffs (what ``-m P`` reports)
TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
RECALL_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


@dataclass(frozen=True)
class TrecMeasure:
    """One measure: ``query(facts, arg)`` and ``batch(facts, arg)`` give the same values.

    ``summary`` is how ``ragmeter trec`` combines queries (``sum`` for counts, ``geometric``
    for ``gm_*``); ``per_query`` whether ``-q`` prints it; ``integer`` whether it prints as
    a whole number; ``zero_when_missing`` whether a query the run lacks scores 0 under ``-c``
    rather than the empty-ranking value; ``text`` gives ``relstring``'s string."""

    name: str
    description: str
    query: Callable[[QueryFacts, MeasureArg], float]
    batch: Callable[[BatchFacts, MeasureArg], FloatArray]
    cutoff: CutoffRule = "none"
    default_cutoffs: tuple[Cutoff, ...] = ()  # what the bare name stands for in trec_eval's -m
    params: ParamsRule = "none"
    default_numbers: tuple[float, ...] = ()
    summary: Summary = "mean"
    per_query: bool = True
    integer: bool = False
    zero_when_missing: bool = False
    aliases: tuple[str, ...] = ()  # lower-case names parse_measure also reads
    text: Callable[[QueryFacts, MeasureArg], str] | None = None
    text_batch: Callable[[BatchFacts, MeasureArg], list[str]] | None = None

    @property
    def fractional(self) -> bool:
        """Cutoffs are fractions of R (``iprec_at_recall``, ``Rprec_mult``)."""
        return any(isinstance(k, float) for k in self.default_cutoffs)


def _declarations() -> list[TrecMeasure]:
    from . import counts, gains, ranks, sets

    return [*counts.DECLARED, *ranks.DECLARED, *sets.DECLARED, *gains.DECLARED]


def _names(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# trec_eval 10.0's measure table order, which is its output order (f1 is ragmeter's)
TREC_ORDER = _names(
    "runid num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank iprec_at_recall "
    "P relstring recall infAP gm_bpref Rprec_mult utility 11pt_avg binG G dcg ideal_dcg ndcg "
    "ndcg_rel Rndcg ndcg_cut map_cut relative_P success f1 set_P set_relative_P set_recall "
    "set_map set_F num_nonrel_judged_ret yaap rbp rbp_resid unj"
)
NICKNAMES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "official": _names(
            "runid num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank "
            "iprec_at_recall P"
        ),
        "all_trec": _names(
            "runid num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank "
            "iprec_at_recall P relstring recall unj rbp rbp_resid infAP gm_bpref utility "
            "11pt_avg ndcg relative_P Rprec_mult success map_cut ndcg_cut ndcg_rel Rndcg binG G "
            "set_P set_recall set_relative_P set_map set_F num_nonrel_judged_ret"
        ),
        "set": _names(
            "runid num_q num_ret num_rel num_rel_ret utility set_P set_recall set_relative_P "
            "set_map set_F"
        ),
    }
)
# trec_eval measures that read other judgment formats (-R prefs, qrels_prefs, qrels_jg)
DECLINED = frozenset(
    _names(
        "all_prefs prefs qrels_jg prefs_num_prefs_poss prefs_num_prefs_ful prefs_num_prefs_ful_ret "
        "prefs_simp prefs_pair prefs_avgjg prefs_avgjg_Rnonrel prefs_simp_ret prefs_pair_ret "
        "prefs_avgjg_ret prefs_avgjg_Rnonrel_ret prefs_simp_imp prefs_pair_imp prefs_avgjg_imp "
        "map_avgjg P_avgjg Rprec_mult_avgjg"
    )
)

_ORDER = {name: i for i, name in enumerate(TREC_ORDER)}
TREC_MEASURES: Mapping[str, TrecMeasure] = MappingProxyType(
    {m.name: m for m in sorted(_declarations(), key=lambda m: _ORDER[m.name])}
)


def check_cutoff(declared: TrecMeasure, cutoff: Cutoff | None, shown: str) -> None:
    """Raise :class:`MeasureError` unless ``cutoff`` suits the measure (``shown`` names it)."""
    name = declared.name
    if cutoff is not None and declared.cutoff == "none":
        raise MeasureError(f"measure {name!r} takes no cutoff (got {shown!r})")
    if cutoff is None and declared.cutoff == "required":
        example = "0.5" if declared.fractional else "10"
        raise MeasureError(f"measure {name!r} needs a cutoff, e.g. {name}.{example}")
    if cutoff is not None and not declared.fractional:
        if not isinstance(cutoff, int):
            raise MeasureError(f"measure {name!r} needs whole-number cutoffs (got {shown!r})")
        if cutoff < 1:
            raise MeasureError(f"cutoff must be >= 1 (got {shown!r})")


def read_params(declared: TrecMeasure, text: str | None) -> Params:
    """A measure's parameters from their text (``None``: its defaults), checked."""
    name = declared.name
    if text is None:
        return Params(numbers=declared.default_numbers)
    if declared.params == "none":
        raise MeasureError(f"measure {name!r} takes no parameters (got {name}.{text})")
    parts = text.split(",")
    if declared.params == "pairs":
        pairs = []
        for part in parts:
            key, equals, value = part.partition("=")
            number = _number(value, f"{name}.{text}") if equals and key else None
            if number is None:
                raise MeasureError(
                    f"malformed pair parameters in {name}.{text}: write level=gain pairs, "
                    "e.g. ndcg.1=3,2=9 (rbp takes p=0.8 too)"
                )
            if key.lstrip("+").startswith("-"):
                raise MeasureError(f"gains for negative levels are not supported ({name}.{text})")
            pairs.append((key, number))
        return Params(text, pairs=tuple(pairs))
    numbers = tuple(_number(part, f"{name}.{text}") for part in parts)
    if name == "utility" and len(numbers) != 4:
        raise MeasureError(f"utility needs 4 coefficients, e.g. utility.1,-1,0,0 (got {text})")
    return Params(text, numbers=numbers)


def _number(text: str, shown: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise MeasureError(f"not a number in {shown!r}: {text!r}") from None


_CHECKED: dict[Measure, tuple[TrecMeasure, MeasureArg]] = {}


def declaration_of(measure: Measure) -> tuple[TrecMeasure, MeasureArg]:
    """The declaration that computes ``measure`` and the argument its computations receive,
    checked (once per measure: the per-query engine asks for every measure of every query)."""
    found = _CHECKED.get(measure)
    if found is None:
        declared = TREC_MEASURES.get(measure.name)
        if declared is None:
            raise MeasureError(f"unknown measure {measure}")
        check_cutoff(declared, measure.cutoff, measure.label)
        arg: MeasureArg = measure.cutoff
        if declared.params != "none":
            arg = read_params(declared, measure.params)
        elif measure.params is not None:
            raise MeasureError(f"measure {declared.name!r} takes no parameters")
        found = _CHECKED[measure] = (declared, arg)
    return found

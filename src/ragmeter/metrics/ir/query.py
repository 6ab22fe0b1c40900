"""The per-query engine: every requested measure for one ranked list against its judgments.

:class:`QueryFacts` holds what the measures read, in trec_eval's terms, computed once per query;
each measure's ``query`` computation in :mod:`.measures` turns it into a number by walking the
ranking as trec_eval does. The vectorised engine (:mod:`.batch`) computes the same values for
many queries at once; the tests hold the two (and pytrec_eval) together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING

from .core import NONPOOL, UNJUDGED, Gain, Measure, MeasureArg, Params, dcg, gain_of
from .measures import declaration_of

if TYPE_CHECKING:
    from .measures import TrecMeasure

# (label, declaration, argument) of each measure of a query_measures call
MeasurePlan = list[tuple[str, "TrecMeasure", MeasureArg]]


class GainTable:
    """trec_eval's gains for one query: every level from 0 to the highest judged one gains
    its grade (or ``2^grade - 1``), unless a ``level=gain`` parameter says otherwise; the ideal
    ranking repeats each positive gain once per judged document at its level, best first."""

    def __init__(self, levels: Mapping[int, int], params: Params | None, gain: Gain) -> None:
        top = max((level for level, count in levels.items() if count), default=-1)
        table = {level: gain_of(level, gain) for level in range(top + 1)}
        table.update(params.level_gains() if params is not None else {})
        self.table = table
        ordered = sorted(((g, levels.get(level, 0)) for level, g in table.items()), reverse=True)
        self.ideal = [g for g, count in ordered if g > 0 for _ in range(count)]

    def of(self, rel: int) -> float:
        return self.table.get(rel, 0.0)


class QueryFacts:
    """One query's ranking against its judgments: ``rels`` holds, rank by rank, the judged
    grade, :data:`~.core.NONPOOL` or :data:`~.core.UNJUDGED`."""

    level: int
    gain: Gain
    num_docs: int
    rels: list[int]
    num_ret: int
    levels: dict[int, int]
    num_rel: int
    num_nonrel: int
    relevant: list[bool]
    hits_within: list[int]
    num_rel_ret: int
    first: int | None

    def __init__(
        self,
        ranked: Sequence[str],
        qrel: Mapping[str, int],
        relevance_level: int,
        gain: Gain,
        judged_only: bool = False,
        max_retrieved: int | None = None,
        num_docs: int = 0,
    ) -> None:
        self.level = relevance_level
        self.gain = gain
        self.num_docs = num_docs
        rels = [_code(qrel.get(doc)) for doc in ranked[:max_retrieved]]
        if judged_only:
            rels = [rel for rel in rels if rel >= 0]
        self.rels = rels
        self.num_ret = len(rels)
        levels: dict[int, int] = {}
        for grade in qrel.values():
            if grade >= 0:
                levels[int(grade)] = levels.get(int(grade), 0) + 1
        self.levels = levels
        self.num_rel = sum(count for grade, count in levels.items() if grade >= relevance_level)
        self.num_nonrel = sum(count for grade, count in levels.items() if grade < relevance_level)
        self.relevant = [rel >= relevance_level for rel in rels]
        hits_within = [0]  # hits_within[i]: relevant documents in the top i
        for flag in self.relevant:
            hits_within.append(hits_within[-1] + flag)
        self.hits_within = hits_within
        self.num_rel_ret = hits_within[-1]
        self.first = next((i + 1 for i, flag in enumerate(self.relevant) if flag), None)
        self._gains: dict[str, GainTable] = {}

    def hits(self, k: int | None) -> int:
        """Relevant documents in the top k (in the whole ranking without k)."""
        return self.hits_within[self.num_ret if k is None or k > self.num_ret else max(k, 0)]

    def average_precision(self, k: int | None) -> float:
        total = 0.0
        for position, flag in enumerate(self.relevant[:k], start=1):
            if flag:
                total += self.hits_within[position] / position
        return total / self.num_rel if total else 0.0

    @cached_property
    def relevant_precisions(self) -> list[float]:
        """Precision at each relevant document, in rank order."""
        return [self.hits_within[i + 1] / (i + 1) for i, flag in enumerate(self.relevant) if flag]

    @cached_property
    def judged_above(self) -> list[tuple[int, int, int, int]]:
        """For each relevant document: its 0-based rank and the judged relevant, judged
        non-relevant and pooled-unjudged documents above it (bpref, infAP)."""
        found = []
        rel = nonrel = pooled = 0
        for index, code in enumerate(self.rels):
            if code == NONPOOL:
                continue
            if code == UNJUDGED:
                pooled += 1
            elif code < self.level:
                nonrel += 1
            else:
                found.append((index, rel, nonrel, pooled))
                rel += 1
        return found

    def gains(self, params: Params | None) -> GainTable:
        key = params.text if params is not None else ""
        table = self._gains.get(key)
        if table is None:
            table = self._gains[key] = GainTable(self.levels, params, self.gain)
        return table

    @cached_property
    def grade_ideal(self) -> list[float]:
        """ndcg_cut's ideal gains: every judged grade > 0, as gain, best first."""
        return sorted((gain_of(g, self.gain) for g, n in self.levels.items() for _ in range(n)),
                      reverse=True)  # fmt: skip

    def ndcg_cut(self, k: int) -> float:
        ideal_dcg = dcg(self.grade_ideal[:k])
        if ideal_dcg <= 0:
            return dcg(gain_of(rel, self.gain) for rel in self.rels[:k])
        return dcg(gain_of(rel, self.gain) for rel in self.rels[:k]) / ideal_dcg


def _code(grade: int | None) -> int:
    if grade is None:
        return NONPOOL
    return int(grade) if grade >= 0 else UNJUDGED


def query_measures(
    ranked: Sequence[str],
    qrel: Mapping[str, int],
    measures: Sequence[Measure],
    relevance_level: int = 1,
    gain: Gain = "linear",
    *,
    judged_only: bool = False,
    max_retrieved: int | None = None,
    num_docs: int = 0,
    plan: MeasurePlan | None = None,
) -> dict[str, float]:
    """Every requested measure for one query's ranked document ids against its judgments.

    ``judged_only`` and ``max_retrieved`` are trec_eval's ``-J`` and ``-M``; ``num_docs`` its
    ``-N`` (documents in the collection, read by ``utility``). ``plan``: ``measure_plan`` of
    ``measures``, made once by a caller that asks the same measures of many queries."""
    facts = QueryFacts(ranked, qrel, relevance_level, gain, judged_only, max_retrieved, num_docs)
    return {
        label: declared.query(facts, arg)
        for label, declared, arg in (plan if plan is not None else measure_plan(measures))
    }


def measure_plan(measures: Sequence[Measure]) -> MeasurePlan:
    """(label, declaration, argument) of each measure, checked: what ``query_measures``
    looks up for every query."""
    return [(measure.label, *declaration_of(measure)) for measure in measures]

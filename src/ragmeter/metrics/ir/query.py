"""The per-query engine: every requested measure for one ranked list against its judgments.

:class:`QueryFacts` holds what the measures read, computed once per query; each measure's
``query`` computation in :mod:`.measures` turns it into a number.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property

from .core import Gain, Measure, gain_of
from .measures import declaration_of


class QueryFacts:
    """One query's ranking against its judgments, in trec_eval's terms."""

    qrel: Mapping[str, float]
    gain: Gain
    num_ret: int
    grades: list[float]
    relevant: list[bool]
    num_rel: int
    hits_within: list[int]
    num_rel_ret: int
    first: int | None

    def __init__(
        self, ranked: Sequence[str], qrel: Mapping[str, float], relevance_level: float, gain: Gain
    ) -> None:
        self.qrel = qrel
        self.gain = gain
        self.num_ret = len(ranked)
        self.grades = [qrel.get(doc, 0) for doc in ranked]
        self.relevant = [g >= relevance_level for g in self.grades]
        self.num_rel = sum(1 for g in qrel.values() if g >= relevance_level)
        hits_within = [0]  # hits_within[i]: relevant documents in the top i
        count = 0
        for flag in self.relevant:
            count += flag
            hits_within.append(count)
        self.hits_within = hits_within
        self.num_rel_ret = count
        self.first = next((i + 1 for i, flag in enumerate(self.relevant) if flag), None)

    def hits(self, k: int | None) -> int:
        """Relevant documents in the top k (in the whole ranking without k)."""
        return self.hits_within[self.num_ret if k is None or k > self.num_ret else k]

    def average_precision(self, k: int | None) -> float:
        if not self.num_rel:
            return 0.0
        total = 0.0
        hits = 0
        for position, flag in enumerate(self.relevant[:k], start=1):
            if flag:
                hits += 1
                total += hits / position
        return total / self.num_rel

    @cached_property
    def ideal_gains(self) -> list[float]:
        """Every judged document with grade > 0, best first: the ideal ranking's gains."""
        return sorted((gain_of(g, self.gain) for g in self.qrel.values() if g > 0), reverse=True)

    def ndcg(self, k: int | None) -> float:
        ideal_dcg = _dcg(self.ideal_gains[:k])
        if ideal_dcg == 0:
            return 0.0
        return _dcg(gain_of(g, self.gain) for g in self.grades[:k]) / ideal_dcg


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
    facts = QueryFacts(ranked, qrel, relevance_level, gain)
    return {m.label: declaration_of(m).query(facts, m.cutoff) for m in measures}

"""trec_eval measures as run metrics where they add to the ``retrieval`` family: ``bpref`` and
``inf_ap`` for incomplete judgments (they read only judged documents: gold passages, grade 0
ones included), ``ndcg`` over the whole ranking, ``rbp`` (rank-biased precision, p = 0.9).

Each case is one TREC query, matched at the ``retrieval`` family's level (chunk, doc or anchor:
:func:`ragmeter.metrics.retrieval.judge_case`); a retrieved item no gold passage matches is
unjudged, as a document missing from the qrels is for trec_eval; the family's id-space check
is the ``retrieval`` family's (``IdSpace``). The family factory is
:func:`trec_metrics` (registered as ``trec``).
"""

from __future__ import annotations

from ragmeter.metrics.base import Metric, MetricSettings
from ragmeter.metrics.family import MetricFamily, setting

from .core import Measure

# (metric name, measure, description)
CASE_MEASURES = (
    (
        "bpref",
        Measure("bpref"),
        "binary preference: relevant items retrieved, each less the share of judged "
        "non-relevant (grade 0) items above it; unjudged items count for nothing (bpref)",
    ),
    (
        "inf_ap",
        Measure("infAP"),
        "inferred average precision: average precision estimated from the judged items (infAP)",
    ),
    (
        "ndcg",
        Measure("ndcg"),
        "nDCG of the whole ranking (gain = grade, or 2^grade - 1 with ndcg_gain: exponential)",
    ),
    (
        "rbp",
        Measure("rbp"),
        "rank-biased precision, persistence 0.9, grades scaled to [0, 1] (rbp)",
    ),
)


def trec_metrics(settings: MetricSettings) -> list[Metric]:
    from ragmeter.metrics.retrieval import CaseMemo, measure_reader

    memo = CaseMemo(settings, [measure for _, measure, _ in CASE_MEASURES])
    hooks = memo.id_space.hooks()  # the id-space check, before any case is scored
    return [
        Metric(
            name,
            "retrieval",
            measure_reader(memo, measure.label),
            ("gold_passages", "retrieved"),
            **hooks,
            description=description,
            kind="proportion",
        )
        for name, measure, description in CASE_MEASURES
    ]


trec_family = MetricFamily(
    trec_metrics,
    params=(
        setting("relevance_level", "the lowest gold grade that counts as relevant"),
        setting(
            "require_snippet",
            "a gold passage with a snippet counts only when a retrieved chunk holds it",
        ),
        setting(
            "id_space_min_overlap", "the share of retrieved ids that must fall in the gold id space"
        ),
    ),
    description="trec_eval's measures of one case's ranking (the `ragmeter trec` definitions)",
)

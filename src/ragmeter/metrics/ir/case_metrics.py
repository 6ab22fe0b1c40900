"""trec_eval measures as run metrics where they add to the ``retrieval`` family: ``bpref`` and
``inf_ap`` for incomplete judgments (they read only judged documents: gold passages, grade 0
ones included), ``ndcg`` over the whole ranking, ``rbp`` (rank-biased precision, p = 0.9).

Each case is one TREC query, matched at the ``retrieval`` family's level (chunk, doc or anchor:
:func:`ragmeter.metrics.retrieval.judge_case`); a retrieved item no gold passage matches is
unjudged, as a document missing from the qrels is for trec_eval. The family factory is
:func:`trec_metrics` (registered as ``trec``).
"""

from __future__ import annotations

from collections.abc import Callable

from ragmeter.metrics.base import Metric, MetricOutput, MetricSettings
from ragmeter.models import Case, Response

from .core import Measure
from .query import query_measures

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


class _Memo:
    """The last case's values: every metric of the family reads the same dict."""

    def __init__(self, settings: MetricSettings) -> None:
        self.settings = settings
        self.measures = [measure for _, measure, _ in CASE_MEASURES]
        self._key: tuple[Case, Response] | None = None
        self._value: tuple[dict[str, float], str] = ({}, "chunk")

    def __call__(self, case: Case, response: Response) -> tuple[dict[str, float], str]:
        if self._key is None or self._key[0] is not case or self._key[1] is not response:
            from ragmeter.metrics.retrieval import judge_case

            judged = judge_case(case, response, self.settings.require_snippet)
            values = query_measures(
                judged.ranked,
                judged.qrel,
                self.measures,
                self.settings.relevance_level,
                self.settings.ndcg_gain,
            )
            self._key, self._value = (case, response), (values, judged.level)
        return self._value


def _reader(memo: _Memo, label: str) -> Callable[[Case, Response], MetricOutput]:
    def compute(case: Case, response: Response) -> MetricOutput:
        values, level = memo(case, response)
        return values[label], {"level": level}

    return compute


def trec_metrics(settings: MetricSettings) -> list[Metric]:
    memo = _Memo(settings)
    return [
        Metric(
            name,
            "retrieval",
            _reader(memo, measure.label),
            ("gold_passages", "retrieved"),
            description=description,
            kind="proportion",
        )
        for name, measure, description in CASE_MEASURES
    ]

"""Aggregation: counts and interval of a metric, and the seeded bootstrap."""

from __future__ import annotations

import numpy as np

from ragmeter.metrics.base import Metric
from ragmeter.models import Score
from ragmeter.scoring.aggregate import aggregate_scores, bootstrap_interval


def _metric(name: str, aggregation: str = "mean") -> Metric:
    return Metric(name, "retrieval", lambda c, r: 0.0, aggregation=aggregation, kind="score")


def test_aggregate_counts_and_interval() -> None:
    scores = [Score(case_id=str(i), metric="m", value=float(i % 2)) for i in range(10)]
    scores += [
        Score(case_id="s", metric="m", value=None, status="skipped", reason="r"),
        Score(case_id="f", metric="m", value=None, status="failed", reason="r"),
    ]
    card = aggregate_scores(scores, [_metric("m"), _metric("empty")], resamples=500, seed=1)
    m = card.get("m")
    assert m is not None
    assert (m.value, m.n_scored, m.n_skipped, m.n_failed) == (0.5, 10, 1, 1)
    assert m.ci_low is not None and m.ci_high is not None
    assert 0.0 <= m.ci_low < 0.5 < m.ci_high <= 1.0
    empty = card.get("empty")
    assert empty is not None and (empty.value, empty.n_scored, empty.ci_low) == (None, 0, None)
    assert card.by_group == {"retrieval": ["m", "empty"]}


def test_bootstrap_is_seeded_and_supports_percentiles() -> None:
    values = np.arange(100, dtype=np.float64)
    assert bootstrap_interval(values, "mean", 200, seed=3) == bootstrap_interval(
        values, "mean", 200, seed=3
    )
    low, high = bootstrap_interval(values, "p95", 200, seed=3) or (0, 0)
    assert 85 <= low <= high <= 99
    assert bootstrap_interval(values[:1]) is None

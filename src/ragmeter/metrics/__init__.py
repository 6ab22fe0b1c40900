"""Metric plugins and the contract they follow."""

from __future__ import annotations

from ragmeter.metrics.base import Metric, MetricSettings, score_case
from ragmeter.registry import registry

__all__ = ["Metric", "MetricSettings", "resolve_metrics", "score_case"]


def resolve_metrics(names: list[str], settings: MetricSettings) -> list[Metric]:
    """Expand metric family names (``retrieval``, ``lexical``, ...) into concrete metrics."""
    metrics: list[Metric] = []
    seen: set[str] = set()
    for name in names:
        for metric in registry.get("metrics", name)(settings):
            if metric.name not in seen:
                seen.add(metric.name)
                metrics.append(metric)
    return metrics

"""Metric plugins and the contract they follow.

The names are imported on first use, so that ``ragmeter.metrics.ir`` (and ``ragmeter trec``,
which needs only it) starts without the models, the config and the registry."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragmeter.metrics.base import Metric, MetricSettings, score_case

__all__ = ["Metric", "MetricSettings", "resolve_metrics", "score_case"]

_LAZY = {"Metric", "MetricSettings", "score_case"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from ragmeter.metrics import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def resolve_metrics(names: list[str], settings: MetricSettings) -> list[Metric]:
    """Expand metric family names (``retrieval``, ``lexical``, ...) into concrete metrics, each
    family built with its own ``-P`` parameters (``settings.metric_params``)."""
    from ragmeter.metrics.family import build_family

    metrics: list[Metric] = []
    seen: set[str] = set()
    for name in names:
        for metric in build_family(name, settings):
            if metric.name not in seen:
                seen.add(metric.name)
                metrics.append(metric)
    return metrics

"""Operational metrics: latency percentiles, error rate, cost per query."""

from __future__ import annotations

from ragmeter.metrics.base import Metric, MetricOutput, MetricSettings
from ragmeter.models import Case, CaseResult, Response


def total_latency_ms(response: Response) -> float:
    return response.latency_ms["total"]


def _latency(_: Case, response: Response) -> MetricOutput:
    return total_latency_ms(response)


def _error(_: Case, result: CaseResult) -> MetricOutput:
    return float(result.status != "ok"), {"error_type": result.error_type}


def _cost(_: Case, response: Response) -> MetricOutput:
    assert response.usage is not None and response.usage.cost_usd is not None
    return response.usage.cost_usd


def performance_metrics(_: MetricSettings) -> list[Metric]:
    return [
        Metric(
            "latency_p50",
            "performance",
            _latency,
            higher_is_better=False,
            aggregation="p50",
            unit="ms",
            description="median end-to-end latency",
        ),
        Metric(
            "latency_p95",
            "performance",
            _latency,
            higher_is_better=False,
            aggregation="p95",
            unit="ms",
            description="95th percentile end-to-end latency",
        ),
        Metric(
            "error_rate",
            "performance",
            None,
            higher_is_better=False,
            on_result=_error,
            description="fraction of cases whose query failed (timeout, HTTP error, ...)",
        ),
        Metric(
            "cost_per_query",
            "performance",
            _cost,
            ("cost",),
            higher_is_better=False,
            unit="USD",
            description="system cost per query as reported by the target",
        ),
    ]

"""Operational metrics and the run's performance summary.

Metrics (per case, aggregated by the scorecard): latency p50/p95/p99 of the end-to-end time,
error rate, cost per query, and the operational rates of ``metrics/operational.py`` (timeouts,
empty answers).

The performance summary (``performance_summary``, stored with the run) adds what a per-case
metric cannot hold: latency percentiles of every stage the target reported in
``response.latency_ms`` (``retrieve``, ``generate``, ...), the system's cost (reported by the
target, or priced from token usage with the ``prices`` table), and a separate place for the
cost of LLM judges; given the cases, also the run's latency budgets (seed 003's per-stage p95,
``metrics/pipeline.py``) and coverage by document type (``metrics/operational.py``).

A replayed response that recorded no ``latency_ms.total`` has no latency: the latency metrics
skip it (the time taken to read it from the file is not the system's).
"""

from __future__ import annotations

from typing import Any

from ragmeter.config import ModelPrice
from ragmeter.metrics.base import NOT_REPORTED, Metric, MetricOutput, MetricSettings, SkipScore
from ragmeter.metrics.operational import operational_metrics
from ragmeter.metrics.performance_tally import LATENCY_QUANTILES, PerformanceTally
from ragmeter.models import Case, CaseResult, Response, Usage

# a response without a total latency: ragmeter adds its wall time to every live answer, so
# only a replayed response that recorded none has no total (its read time is not the system's)
# starts with NOT_REPORTED: such a case lowers the latency metrics' coverage
NO_LATENCY = (
    f"{NOT_REPORTED} a latency: the replayed response recorded no latency_ms.total (not measured)"
)


def total_latency_ms(response: Response) -> float:
    """The end-to-end latency; raises SkipScore when the response has none."""
    total = response.latency_ms.get("total")
    if total is None:
        raise SkipScore(NO_LATENCY)
    return total


def _latency(_: Case, response: Response) -> MetricOutput:
    return total_latency_ms(response)


def _error(_: Case, result: CaseResult) -> MetricOutput:
    return float(result.status != "ok"), {"error_type": result.error_type}


def _cost(_: Case, response: Response) -> MetricOutput:
    assert response.usage is not None and response.usage.cost_usd is not None
    return response.usage.cost_usd


def _latency_metric(quantile: int) -> Metric:
    return Metric(
        f"latency_p{quantile}",
        "performance",
        _latency,
        higher_is_better=False,
        aggregation=f"p{quantile}",
        unit="ms",
        description="median end-to-end latency"
        if quantile == 50
        else f"{quantile}th percentile end-to-end latency",
        kind="duration",
    )


def performance_metrics(_: MetricSettings) -> list[Metric]:
    return [
        *(_latency_metric(q) for q in LATENCY_QUANTILES),
        Metric(
            "error_rate",
            "performance",
            None,
            higher_is_better=False,
            on_result=_error,
            description="fraction of cases whose query failed (timeout, HTTP error, ...)",
            kind="binary",
        ),
        *operational_metrics(),
        Metric(
            "cost_per_query",
            "performance",
            _cost,
            ("cost",),
            higher_is_better=False,
            unit="USD",
            description="system cost per query: reported by the target, or priced from token "
            "usage with the 'prices' table",
            kind="cost",
        ),
    ]


def price_usage(usage: Usage, prices: dict[str, ModelPrice]) -> float | None:
    """USD for one response's tokens, or None when the model or the token counts are unknown."""
    if usage.model is None or usage.model not in prices:
        return None
    if usage.prompt_tokens is None and usage.completion_tokens is None:
        return None
    price = prices[usage.model]
    return (usage.prompt_tokens or 0) / 1000.0 * price.input_per_1k + (
        usage.completion_tokens or 0
    ) / 1000.0 * price.output_per_1k


def apply_prices(results: list[CaseResult], prices: dict[str, ModelPrice]) -> int:
    """Fill ``usage.cost_usd`` from the price table where the target reported tokens and a
    model but no cost (in memory, before scoring); returns how many responses were priced."""
    priced = 0
    for result in results:
        usage = result.response.usage if result.response is not None else None
        if usage is None or usage.cost_usd is not None:
            continue
        cost = price_usage(usage, prices)
        if cost is not None:
            usage.cost_usd = cost
            priced += 1
    return priced


def performance_summary(
    results: list[CaseResult], priced: int = 0, cases: list[Case] | None = None
) -> dict[str, Any]:
    """The run's performance summary (``PerformanceTally`` over one batch: every answer)."""
    return PerformanceTally(with_cases=cases is not None).add(results, priced, cases).summary()

"""The run's performance summary gathered batch by batch (latency percentiles per stage, errors
by type, system cost, latency budgets, coverage by document type), so that a large run's
answers need not be held at once. ``performance_summary`` is this over one batch."""

from __future__ import annotations

from array import array
from collections import Counter
from typing import Any

import numpy as np

from ragmeter.metrics.operational import coverage_by_doc_type
from ragmeter.metrics.pipeline import BudgetGroups, add_budget_latencies, budget_rows
from ragmeter.models import Case, CaseResult

LATENCY_QUANTILES = (50, 95, 99)
_COUNTS = ("cases", "errors", "empty", "retrieval_reported", "gold_retrieved")


def percentiles(values: array[float] | list[float]) -> dict[str, float | int]:
    data = np.asarray(values, dtype=np.float64)
    summary: dict[str, float | int] = {"n": len(data), "mean": float(data.mean())}
    for q, v in zip(LATENCY_QUANTILES, np.percentile(data, LATENCY_QUANTILES), strict=True):
        summary[f"p{q}"] = float(v)
    return summary


class PerformanceTally:
    """What the performance summary needs of a run's answers, added one batch at a time."""

    def __init__(self, with_cases: bool = True) -> None:
        self.with_cases = with_cases
        self.stages: dict[str, array[float]] = {}
        self.errors: Counter[str] = Counter()
        self.costs = array("d")
        self.priced = 0
        self.answered = 0
        self.budgets: BudgetGroups = {}
        self.coverage: dict[str, dict[str, Any]] = {}

    def add(
        self, results: list[CaseResult], priced: int = 0, cases: list[Case] | None = None
    ) -> PerformanceTally:
        self.priced += priced
        for result in results:
            if result.status != "ok":
                self.errors[result.error_type or "unknown"] += 1
            response = result.response
            if response is None:
                continue
            self.answered += 1
            for stage, value in response.latency_ms.items():
                self.stages.setdefault(stage, array("d")).append(float(value))
            usage = response.usage
            if usage is not None and usage.cost_usd is not None:
                self.costs.append(usage.cost_usd)
        if self.with_cases and cases is not None:
            add_budget_latencies(self.budgets, cases, results)
            for kind, row in coverage_by_doc_type(cases, results).items():
                total = self.coverage.setdefault(kind, dict.fromkeys(_COUNTS, 0))
                for key in _COUNTS:
                    total[key] += row[key]
        return self

    def summary(self) -> dict[str, Any]:
        costs = list(self.costs)
        ordered = ["total", *sorted(stage for stage in self.stages if stage != "total")]
        summary: dict[str, Any] = {
            "latency_ms": {
                stage: percentiles(self.stages[stage]) for stage in ordered if stage in self.stages
            },
            "errors_by_type": dict(self.errors),
            "cost": {
                "system": {
                    "n_costed": len(costs),
                    "n_priced_from_tokens": self.priced,
                    "n_without_cost": self.answered - len(costs),
                    "total_usd": float(sum(costs)) if costs else None,
                    "per_query_usd": float(sum(costs) / len(costs)) if costs else None,
                },
                # filled from the run's judge-call records when a judge ran (kept apart from
                # the system's cost)
                "judge": {"status": "not_measured", "reason": "no LLM judge ran in this run"},
            },
        }
        if self.with_cases:
            summary["latency_budgets"] = budget_rows(self.budgets)
            coverage = {}
            for kind, counts in sorted(self.coverage.items()):
                reported = counts["retrieval_reported"]
                rate = counts["gold_retrieved"] / reported if reported else None
                coverage[kind] = {**counts, "gold_retrieved_rate": rate}
            summary["coverage_by_doc_type"] = coverage
        return summary

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
from ragmeter.redaction import redact_text

LATENCY_QUANTILES = (50, 95, 99)
# an error type's example message is cut to this many characters (start ... end)
EXAMPLE_CHARS = 160
_COUNTS = ("cases", "errors", "empty", "retrieval_reported", "gold_retrieved")


def example_message(message: str | None) -> str:
    """A failed case's message as its error type's example: secrets masked, on one line, cut
    to ``EXAMPLE_CHARS`` characters (the start and the end kept: an HTTP 422's end names the
    field)."""
    text = " ".join(redact_text(message or "").split())
    if len(text) <= EXAMPLE_CHARS:
        return text
    half = (EXAMPLE_CHARS - 5) // 2
    return f"{text[:half]} ... {text[-half:]}"


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
        # error type -> the message of its first failed case (reports/failures.py shows it)
        self.error_examples: dict[str, str] = {}
        self.formats: Counter[str] = Counter()
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
                error_type = result.error_type or "unknown"
                self.errors[error_type] += 1
                if error_type not in self.error_examples:
                    self.error_examples[error_type] = example_message(result.error_message)
            response = result.response
            if response is None:
                continue
            self.answered += 1
            if response.response_format:  # how the target's reply was read (targets/formats.py)
                self.formats[response.response_format] += 1
            for stage, value in response.latency_ms.items():
                self.stages.setdefault(stage, array("d")).append(float(value))
            usage = response.usage
            if usage is not None and usage.cost_usd is not None:
                self.costs.append(usage.cost_usd)
        if self.with_cases and cases is not None:
            add_budget_latencies(self.budgets, cases, results)
            for doc_type, row in coverage_by_doc_type(cases, results).items():
                total = self.coverage.setdefault(doc_type, dict.fromkeys(_COUNTS, 0))
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
            # response format -> answers read in it ("native", "llamaindex", ..., "mapping")
            "response_formats": dict(self.formats.most_common()),
            "error_examples": dict(self.error_examples),
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
            for doc_type, counts in sorted(self.coverage.items()):
                reported = counts["retrieval_reported"]
                rate = counts["gold_retrieved"] / reported if reported else None
                coverage[doc_type] = {**counts, "gold_retrieved_rate": rate}
            summary["coverage_by_doc_type"] = coverage
        return summary

"""Aggregation with counts and bootstrap intervals, breakdowns, weighted score, goals,
paired comparisons and Pareto frontiers (see docs/statistics.md)."""

from ragmeter.scoring.aggregate import (
    aggregate_scores,
    aggregate_with_breakdowns,
    bootstrap_interval,
)

__all__ = ["aggregate_scores", "aggregate_with_breakdowns", "bootstrap_interval"]

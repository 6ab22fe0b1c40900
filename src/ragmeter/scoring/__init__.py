"""Aggregation with counts and bootstrap intervals."""

from ragmeter.scoring.aggregate import aggregate_scores, bootstrap_interval

__all__ = ["aggregate_scores", "bootstrap_interval"]

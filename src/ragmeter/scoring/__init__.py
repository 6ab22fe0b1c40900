"""Aggregation with counts and bootstrap intervals, breakdowns, weighted score, goals,
paired comparisons and Pareto frontiers (see docs/statistics.md); ``scoring.aggregate`` holds
the entry points."""

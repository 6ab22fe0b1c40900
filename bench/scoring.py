"""Scoring benchmark: aggregate 100,000 cases x 30 metrics with 95% bootstrap intervals
(1,000 resamples) and breakdowns by 3 fields (category, difficulty, answerable).

The per-case scores are synthetic (seeded): 26 binary or continuous 0-1 metrics with some
skipped and failed cases, 3 latency percentile metrics and one cost metric. The timed part is
``aggregate_with_breakdowns``: the dense table built from Score objects, the joint Poisson
bootstrap of every metric and group, the exact quantile intervals, the summaries.

    python bench/scoring.py [--cases 100000] [--metrics 30] [--resamples 1000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ragmeter.metrics.base import Metric
from ragmeter.models import Case, Score
from ragmeter.scoring.aggregate import aggregate_with_breakdowns


def _constant(*_: object) -> float:
    return 0.0


def build(n_cases: int, n_metrics: int, seed: int) -> tuple[list[Case], list[Metric], list[Score]]:
    rng = np.random.default_rng(seed)
    categories = ["factual", "multi_hop", "recency", "adversarial", "general"]
    cases = [
        Case(
            case_id=f"c{i}",
            question="q",
            category=categories[i % 5],
            difficulty=("easy", "medium", "hard")[i % 3],
            answerable=i % 7 != 0,
        )
        for i in range(n_cases)
    ]
    metrics: list[Metric] = []
    scores: list[Score] = []
    ids = [case.case_id for case in cases]
    for j in range(n_metrics):
        if j < 3:
            metric = Metric(
                f"latency_p{(50, 95, 99)[j]}",
                "performance",
                _constant,
                higher_is_better=False,
                aggregation=f"p{(50, 95, 99)[j]}",
                unit="ms",
                kind="duration",
            )
            values = rng.lognormal(5.0, 0.5, n_cases)
        elif j == 3:
            metric = Metric(
                "cost_per_query",
                "performance",
                _constant,
                higher_is_better=False,
                unit="USD",
                kind="cost",
            )
            values = rng.gamma(2.0, 0.001, n_cases)
        else:
            metric = Metric(
                f"m{j}", "retrieval", _constant, kind="binary" if j % 2 else "proportion"
            )
            values = (rng.random(n_cases) < 0.7).astype(float) if j % 2 else rng.beta(2, 2, n_cases)
        metrics.append(metric)
        status = rng.choice(3, size=n_cases, p=[0.9, 0.08, 0.02])
        for case_id, value, code in zip(ids, values.tolist(), status.tolist(), strict=True):
            if code == 0:
                scores.append(Score(case_id, metric.name, value))
            else:
                scores.append(
                    Score(case_id, metric.name, None, "skipped" if code == 1 else "failed", "x")
                )
    return cases, metrics, scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--metrics", type=int, default=30)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cases, metrics, scores = build(args.cases, args.metrics, seed=0)
    fields = ["category", "difficulty", "answerable"]
    timings = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        card, breakdowns = aggregate_with_breakdowns(
            scores, metrics, cases, fields, args.resamples, seed=0
        )
        timings.append(time.perf_counter() - started)
    groups = sum(len(groups) for groups in breakdowns.values())
    print(
        f"{args.cases} cases x {args.metrics} metrics, {args.resamples} resamples, "
        f"breakdowns by {len(fields)} fields ({groups} groups): "
        f"best {min(timings):.2f} s, median {sorted(timings)[len(timings) // 2]:.2f} s"
    )
    m4 = card.get("m4")
    assert m4 is not None and m4.ci_low is not None
    print(f"m4 = {m4.value:.4f} [{m4.ci_low:.4f}, {m4.ci_high:.4f}] n={m4.n_scored}")


if __name__ == "__main__":
    main()

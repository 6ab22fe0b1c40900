"""Judge reliability spot check (seed 004): re-judge a seeded random subset of cases with a
second judge (another model, or the same model behind another endpoint or prompt version) and
report how often the two disagree and Cohen's kappa, with the two judges and the prompt
versions each used (from the scores' own records).

Two verdicts on one case and metric *disagree* when a 0-5 score differs by more than 1 point,
a 0-1 score by more than 0.2 (the same share of its range), or a 0/1 classification differs.
Kappa is computed over categories: 0-5 scores rounded to integers, 0-1 scores split at 0.5.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from typing import Any

from ragmeter.models import Case, CaseResult, Score
from ragmeter.redaction import redact_url

DISAGREE_0_5 = 1.0
DISAGREE_0_1 = 0.2


def cohen_kappa(first: list[int], second: list[int]) -> float | None:
    """Cohen's kappa of two raters' category lists; None when it is undefined (fewer than two
    items, or both raters used one and the same category for everything)."""
    n = len(first)
    if n < 2 or n != len(second):
        return None
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    counts_a, counts_b = Counter(first), Counter(second)
    expected = sum(counts_a[c] * counts_b[c] for c in counts_a) / (n * n)
    if expected == 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def _category(value: float, scale: str) -> int:
    return round(value) if scale == "0-5" else int(value >= 0.5)


def _disagree(a: float, b: float, scale: str) -> bool:
    return abs(a - b) > (DISAGREE_0_5 if scale == "0-5" else DISAGREE_0_1)


def pick_cases(case_ids: list[str], n: int, seed: int) -> list[str]:
    if n >= len(case_ids):
        return list(case_ids)
    return sorted(random.Random(seed).sample(case_ids, n))


def compare_judges(
    first: list[Score], second: list[Score], scales: dict[str, str]
) -> dict[str, Any]:
    """Disagreement rate and kappa between two judges' scores on the same cases."""
    by_key = {(s.metric, s.case_id): s for s in first if s.status == "ok" and s.value is not None}
    per_metric: dict[str, dict[str, Any]] = {}
    all_a: list[int] = []
    all_b: list[int] = []
    disagreements = 0
    pairs = 0
    for score in second:
        other = by_key.get((score.metric, score.case_id))
        if other is None or score.status != "ok" or score.value is None or other.value is None:
            continue
        scale = scales.get(score.metric, "0-1")
        entry = per_metric.setdefault(score.metric, {"n": 0, "disagreements": 0, "a": [], "b": []})
        entry["n"] += 1
        disagree = _disagree(other.value, score.value, scale)
        entry["disagreements"] += disagree
        entry["a"].append(_category(other.value, scale))
        entry["b"].append(_category(score.value, scale))
        disagreements += disagree
        pairs += 1
    summary: dict[str, dict[str, Any]] = {}
    for metric, entry in per_metric.items():
        all_a.extend(entry["a"])
        all_b.extend(entry["b"])
        summary[metric] = {
            "n": entry["n"],
            "disagreement_rate": entry["disagreements"] / entry["n"],
            "kappa": cohen_kappa(entry["a"], entry["b"]),
        }
    return {
        "pairs": pairs,
        "disagreement_rate": disagreements / pairs if pairs else None,
        "kappa": cohen_kappa(all_a, all_b),
        "per_metric": summary,
    }


def prompts_used(scores: list[Score], metrics: set[str], cases: set[str]) -> dict[str, str]:
    """{template: version} of the ok scores of ``metrics`` on ``cases`` (their details)."""
    used: dict[str, str] = {}
    for score in scores:
        if score.status == "ok" and score.metric in metrics and score.case_id in cases:
            used.update(score.details.get("prompt_versions", {}))
    return dict(sorted(used.items()))


def spot_check(
    cases: list[Case],
    results: list[CaseResult],
    first_scores: list[Score],
    n: int,
    seed: int,
    second_judge: str,
    rescore: Callable[[list[Case], list[CaseResult]], tuple[list[Score], dict[str, str]]],
    *,
    first_judge: str | None = None,
    prompts: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Re-judge ``n`` seeded random answered cases with ``rescore`` (which runs the judged
    metrics under the second judge, with the templates ``prompts`` swaps) and compare with the
    first judge's scores. The report names both judges, the swaps and the prompt versions each
    side's compared scores used."""
    answered = [r.case_id for r in results if r.response is not None]
    chosen = set(pick_cases(answered, n, seed))
    subset_cases = [c for c in cases if c.case_id in chosen]
    subset_results = [r for r in results if r.case_id in chosen]
    second_scores, scales = rescore(subset_cases, subset_results)
    report = compare_judges(first_scores, second_scores, scales)
    compared = set(report["per_metric"])
    return {
        "spot_check_n": len(chosen),
        "judge": redact_url(first_judge) if first_judge else None,
        "second_judge": redact_url(second_judge),
        "same_judge": first_judge == second_judge,
        "prompts": dict(prompts or {}),
        "prompt_versions": {
            "first": prompts_used(first_scores, compared, chosen),
            "second": prompts_used(second_scores, compared, chosen),
        },
        **report,
    }

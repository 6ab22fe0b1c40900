"""What a run asks and scores: seed 003's ``--suite smoke`` subset and ``--perspective``.

The smoke suite is a stratified, seeded subset for pull-request checks: every category keeps
``ceil(share x its cases)`` cases (at least one), chosen with the run's seed and kept in dataset
order. A perspective selects the metric families that produce its groups
(:data:`ragmeter.metrics.base.PERSPECTIVES`), of their metrics those in its groups (a family such
as ``judged`` spans several perspectives; a judge is asked only for the metrics kept), and the
goals about them.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict

from ragmeter.config import EvalConfig
from ragmeter.metrics.base import PERSPECTIVES, MetricSettings, perspective_of
from ragmeter.metrics.family import declarations
from ragmeter.models import Case
from ragmeter.scoring.goals import Goal

SMOKE_SHARE = 0.15
NO_CATEGORY = "(none)"
# labels of goals stored by older versions that are not perspective names
TARGET_PERSPECTIVE_ALIASES = {"grounding": "groundedness", "citation": "groundedness"}

__all__ = [
    "SMOKE_SHARE",
    "family_groups",
    "for_perspectives",
    "goals_for",
    "perspective_groups",
    "run_families",
    "smoke_cases",
]


def smoke_cases(cases: list[Case], seed: int, share: float = SMOKE_SHARE) -> list[Case]:
    """Every category's ``ceil(share x n)`` cases (at least one), seeded, in dataset order."""
    strata: dict[str, list[int]] = defaultdict(list)
    for position, case in enumerate(cases):
        strata[case.category or NO_CATEGORY].append(position)
    chosen: set[int] = set()
    rng = random.Random(seed)
    for category in sorted(strata):
        positions = strata[category]
        count = max(1, math.ceil(share * len(positions)))
        chosen.update(rng.sample(positions, min(count, len(positions))))
    return [case for position, case in enumerate(cases) if position in chosen]


def perspective_groups(perspectives: list[str]) -> set[str]:
    """The metric groups of ``perspectives``."""
    return {group for name in perspectives for group in PERSPECTIVES[name]}


def run_families(config: EvalConfig) -> list[str]:
    """The metric families a run scores: its ``metrics`` and, with a judge, ``judged``."""
    families = list(config.metrics)
    if config.judge and "judged" not in families:
        families.append("judged")
    return families


def family_groups(family: str, config: EvalConfig) -> set[str]:
    """The metric groups a family produces (its declarations)."""
    return {metric.group for metric in declarations(family, MetricSettings.for_run(config))}


def for_perspectives(config: EvalConfig) -> EvalConfig:
    """The config with only the metric families of its perspectives (unchanged without)."""
    if config.perspectives is None:
        return config
    wanted = perspective_groups(config.perspectives)
    families = [f for f in config.metrics if family_groups(f, config) & wanted]
    return config.model_copy(update={"metrics": families})


def goals_for(
    goals: list[Goal], perspectives: list[str] | None, groups: dict[str, str]
) -> list[Goal]:
    """The goals about ``perspectives`` (all without): by the group of the metric when the run
    has it (``groups``: metric -> group), else by the goal's own perspective label."""
    if perspectives is None:
        return goals
    kept = []
    for goal in goals:
        if goal.metric in groups:
            perspective: str | None = perspective_of(groups[goal.metric])
        else:
            label = goal.perspective
            perspective = TARGET_PERSPECTIVE_ALIASES.get(label, label) if label else None
        if perspective is None or perspective in perspectives:
            kept.append(goal)
    return kept

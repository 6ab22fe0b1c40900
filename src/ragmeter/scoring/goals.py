"""The goals table (seed 003 calls them targets): a threshold per metric, checked against the
scorecard.

A goal whose metric was not measured (absent, or no case scored) is ``not_measured``; a gate
fails on it unless the goal is optional, so a run where every case failed cannot pass.
Goals are written as ``{metric: "> 0.6"}`` or as a list of ``"metric > 0.6"`` strings or
``{metric, op, value, optional}`` mappings; operators are ``>``, ``>=``, ``<``, ``<=``; a
condition ending in ``optional`` (``"> 0.85 optional"``) marks the goal optional.

Gate rules on intervals (issue 19): ``"> 0.8 @ lower"`` asks the 95% interval's lower bound to
clear the threshold (``@ upper`` the upper bound, for ``<`` / ``<=``), so a goal passes on
what the data supports, not on a lucky point estimate; ``"non_inferior(margin=0.02)"`` (or the
list item ``"non_inferior(faithfulness, margin=0.02)"``) passes when the candidate is not worse
than a baseline by the margin: the paired difference's interval, oriented so that higher is
better, has its lower bound above ``-margin``. It needs a baseline (``eval --baseline``);
without one it is not measured. A metric measured on less than the coverage floor of the cases
it applies to is not measured whatever the rule.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter.config import ConfigError
from ragmeter.errors import InputError
from ragmeter.run_record import GoalResult, Scorecard
from ragmeter.yamlio import YamlError, load_yaml

if TYPE_CHECKING:
    from ragmeter.scoring.compare import Comparison, MetricComparison

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}
OPERATORS = tuple(_OPS)


def holds(op: str, value: float, threshold: float) -> bool:
    """``value op threshold``, a value within rounding of the threshold (relative 1e-9)
    counting as equal to it: a mean of values that are all 0.2 sums to 0.20000000000000004,
    which must pass ``<= 0.2`` and fail ``> 0.2``."""
    if math.isclose(value, threshold, rel_tol=1e-9, abs_tol=1e-12):
        return op in (">=", "<=")
    return _OPS[op](value, threshold)


_EXPRESSION = re.compile(
    r"^\s*(>=|<=|>|<)\s*([-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?)\s*"
    r"(?:@\s*(lower|upper)\s*)?(optional)?\s*$"
)
_NON_INFERIOR = re.compile(
    r"^\s*non_inferior\(\s*(?:(?P<metric>[\w.\-]+)\s*,\s*)?margin\s*=\s*"
    r"(?P<margin>\d+(\.\d*)?|\.\d+)\s*\)\s*(?P<optional>optional)?\s*$"
)


@dataclass(frozen=True)
class Goal:
    metric: str
    op: str
    threshold: float
    perspective: str | None = None
    optional: bool = False
    # what is compared: the value ("point"), the interval's "lower" or "upper" bound, or the
    # paired difference with a baseline ("non_inferior", threshold = the margin)
    rule: str = "point"


# seed 003's table. The safety and pipeline goals are optional: a run whose dataset labels no
# attacks (or pipeline outcomes) is not failed for not measuring them; once measured, a miss
# fails the gate like any other goal (the bundled demo measures the injection goals)
DEFAULT_GOALS: tuple[Goal, ...] = (
    Goal("ndcg_at_5", ">", 0.6, "retrieval"),
    Goal("recall_at_5", ">", 0.7, "retrieval"),
    Goal("redundancy_ngram", "<", 0.2, "context_quality"),
    Goal("claim_support_rate", ">", 0.85, "groundedness"),
    Goal("citation_validity_form", ">", 0.95, "groundedness"),
    Goal("injection_auc", ">", 0.85, "safety", optional=True),
    Goal("injection_tpr_at_fpr_1", ">", 0.7, "safety", optional=True),
    Goal("pipeline_pass_rate", ">", 0.9, "pipeline", optional=True),
)


class GoalSpecError(InputError):
    pass


def parse_condition(metric: str, condition: str) -> Goal:
    inferior = _NON_INFERIOR.match(str(condition))
    if inferior is not None:
        named = inferior.group("metric")
        if named is not None and named != metric:
            raise GoalSpecError(f"goal {metric!r}: non_inferior names another metric {named!r}")
        return Goal(
            metric,
            "non_inferior",
            float(inferior.group("margin")),
            optional=inferior.group("optional") is not None,
            rule="non_inferior",
        )
    match = _EXPRESSION.match(str(condition))
    if match is None:
        raise GoalSpecError(
            f"goal {metric!r}: cannot read {condition!r}; write e.g. '> 0.6', '<= 0.2', "
            "'> 0.6 optional', '>= 0.8 @ lower' or 'non_inferior(margin=0.02)'"
        )
    threshold = float(match.group(2))
    if not math.isfinite(threshold):
        raise GoalSpecError(f"goal {metric!r}: the threshold must be a finite number")
    op, bound = match.group(1), match.group(6)
    if bound == "lower" and op not in (">", ">="):
        raise GoalSpecError(f"goal {metric!r}: '@ lower' goes with > or >= (use '@ upper')")
    if bound == "upper" and op not in ("<", "<="):
        raise GoalSpecError(f"goal {metric!r}: '@ upper' goes with < or <= (use '@ lower')")
    return Goal(metric, op, threshold, optional=match.group(7) is not None, rule=bound or "point")


def parse_goals(spec: dict[str, Any] | list[Any] | None) -> list[Goal]:
    """Goals from config; None gives the defaults, an empty mapping or list gives none."""
    if spec is None:
        return list(DEFAULT_GOALS)
    if isinstance(spec, dict):
        return [parse_condition(str(metric), str(condition)) for metric, condition in spec.items()]
    goals: list[Goal] = []
    for position, item in enumerate(spec, start=1):
        if isinstance(item, str) and (inferior := _NON_INFERIOR.match(item)) is not None:
            if inferior.group("metric") is None:
                raise GoalSpecError(
                    f"goal #{position}: name the metric: non_inferior(METRIC, margin=0.02)"
                )
            goals.append(parse_condition(inferior.group("metric"), item))
        elif isinstance(item, str):
            metric, _, condition = item.strip().partition(" ")
            if not condition:
                raise GoalSpecError(
                    f"goal #{position}: {item!r} must read 'METRIC OP VALUE', e.g. 'mrr > 0.5'"
                )
            goals.append(parse_condition(metric, condition))
        elif isinstance(item, dict) and {"metric", "op", "value"} <= set(item):
            goal = parse_condition(str(item["metric"]), f"{item['op']} {item['value']}")
            optional = item.get("optional", False)
            if not isinstance(optional, bool):
                raise GoalSpecError(f"goal #{position}: optional must be true or false")
            goals.append(
                Goal(
                    goal.metric,
                    goal.op,
                    goal.threshold,
                    item.get("perspective"),
                    optional,
                    rule=goal.rule,
                )
            )
        else:
            raise GoalSpecError(
                f"goal #{position}: expected 'METRIC OP VALUE' or a mapping with metric, op "
                f"and value, got {item!r}"
            )
    return goals


def check_goals(
    scorecard: Scorecard | None,
    goals: list[Goal],
    coverage_floor: float = 0.0,
    comparison: Comparison | None = None,
) -> list[GoalResult]:
    """Each goal's verdict: pass / fail, or not measured when its metric has no value, was
    measured on less than ``coverage_floor`` of the cases it applies to (a pass there could
    come from the failures left out), has no interval for an interval rule, or (non_inferior)
    has no baseline ``comparison``. ``reason`` says why, for every rule but the plain one."""
    rows = {row.metric: row for row in comparison.rows} if comparison is not None else {}
    results: list[GoalResult] = []
    for goal in goals:
        summary = scorecard.get(goal.metric) if scorecard is not None else None
        value = summary.value if summary is not None else None
        coverage = summary.coverage if summary is not None else None
        status, reason = "not_measured", None
        if value is None or summary is None:
            pass
        elif coverage is not None and coverage < coverage_floor:
            reason = f"coverage {coverage:.2f} < {coverage_floor:.2f}"
        elif goal.rule == "non_inferior":
            status, reason = _non_inferior(goal, rows.get(goal.metric), comparison, coverage_floor)
        elif goal.rule in ("lower", "upper"):
            bound = summary.ci_low if goal.rule == "lower" else summary.ci_high
            if bound is None:
                reason = f"no interval for the {goal.rule} bound (fewer than 2 cases)"
            else:
                bound_holds = holds(goal.op, bound, goal.threshold)
                status = "pass" if bound_holds else "fail"
                reason = f"{goal.rule} bound {bound:.4g} {goal.op} {goal.threshold:g}" + (
                    "" if bound_holds else ": no"
                )
        else:
            status = "pass" if holds(goal.op, value, goal.threshold) else "fail"
        results.append(
            GoalResult(
                metric=goal.metric,
                op=goal.op,
                threshold=goal.threshold,
                value=value,
                status=status,
                perspective=goal.perspective,
                optional=goal.optional,
                reason=reason,
                rule=goal.rule,
            )
        )
    return results


def goal_condition(result: GoalResult) -> str:
    """The goal as written: ``> 0.8``, ``>= 0.8 @ lower``, ``non_inferior(margin=0.02)``."""
    if result.rule == "non_inferior":
        return f"non_inferior(margin={result.threshold:g})"
    bound = f" @ {result.rule}" if result.rule in ("lower", "upper") else ""
    return f"{result.op} {result.threshold:g}{bound}"


def _non_inferior(
    goal: Goal,
    row: MetricComparison | None,
    comparison: Comparison | None,
    coverage_floor: float,
) -> tuple[str, str]:
    if comparison is None:
        return "not_measured", "non_inferior needs a baseline (eval --baseline RUN)"
    if row is None or row.ci_low is None or row.ci_high is None:
        return "not_measured", f"no paired interval against baseline {comparison.baseline}"
    if row.coverage is not None and row.coverage < coverage_floor:
        return "not_measured", (
            f"paired coverage {row.coverage:.2f} < {coverage_floor:.2f} (cases failed or not "
            "reported in either run)"
        )
    # oriented so that higher is better: the worst end of the paired difference's interval
    bound = row.ci_low if row.higher_is_better else row.ci_high
    worst = bound if row.higher_is_better else -bound
    holds = worst > -goal.threshold
    word = "lower" if row.higher_is_better else "upper"
    reason = (
        f"paired difference vs {comparison.baseline}: {word} bound {bound:+.4g} "
        f"{'within' if holds else 'beyond'} the margin {goal.threshold:g}"
    )
    return ("pass" if holds else "fail"), reason


def failed(results: list[GoalResult]) -> list[GoalResult]:
    return [result for result in results if result.status == "fail"]


def gate_failures(results: list[GoalResult]) -> list[GoalResult]:
    """The goals that fail a gate: failed ones, and required ones that were not measured."""
    return [
        result
        for result in results
        if result.status == "fail" or (result.status == "not_measured" and not result.optional)
    ]


def read_goals_file(path: str) -> dict[str, Any] | list[Any]:
    """A YAML goals file: ``{metric: '> 0.6'}``, a list, or either under ``goals:`` (or seed
    003's ``targets:``)."""
    try:
        loaded = load_yaml(Path(path), path)
    except YamlError as exc:
        raise ConfigError(f"cannot read goals: {exc}") from exc
    if isinstance(loaded, dict) and len(loaded) == 1 and set(loaded) <= {"goals", "targets"}:
        loaded = next(iter(loaded.values()))
    if not isinstance(loaded, dict | list):
        raise ConfigError(f"{path}: goals must be a mapping or a list")
    return loaded

"""The judge work behind each judged metric, one case at a time.

A task makes a fixed number of judge calls per case whatever the number of chunks (a repair
adds at most one call per call): faithfulness 2 (extract claims, then verify all claims in one
call), answer relevancy 1, context precision 1 (all contexts in one call), context recall 1
(split the reference into statements and attribute them in one call), groundedness 1,
correctness 1, answer classification 1, GEval factual accuracy 1, answer correctness 1,
abstention 1 (0 when the target reports ``abstained``). Each returns
``{metric name: (value, details)}``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragmeter.judges.session import JudgeSession
from ragmeter.judges.verdicts import (
    GRADES,
    Item,
    Values,
    abstention,
    answer_correctness,
    answer_relevancy,
    classification,
    context_precision,
    context_recall,
    correctness,
    factual_accuracy,
    faithfulness,
    groundedness,
    letter_grade,
)

if TYPE_CHECKING:
    from ragmeter.metrics.base import MetricKind

__all__ = ["TASKS", "Item", "JudgedMetric", "Task", "letter_grade"]

TaskFn = Callable[[JudgeSession, Item], Awaitable[Values]]


@dataclass(frozen=True, kw_only=True)
class JudgedMetric:
    """One metric a task's verdict yields (``ragmeter.metrics.judged`` builds the Metric)."""

    name: str
    group: str
    kind: MetricKind
    description: str
    higher_is_better: bool = True
    scale: tuple[float, float] | None = None
    requires: tuple[str, ...] = ()  # beyond the task's own: the cases it applies to
    aggregation: str = "mean"  # "sum": a count, the total over the judged cases


@dataclass(frozen=True, kw_only=True)
class Task:
    name: str
    fn: TaskFn
    metrics: tuple[JudgedMetric, ...]
    requires: tuple[str, ...] = ()  # metric input names (see ragmeter.metrics.base.INPUTS)
    needs_answer: bool
    prompts: tuple[str, ...]
    output_tokens: int  # typical completion tokens per case, for the dry-run estimate

    @property
    def metric_names(self) -> tuple[str, ...]:
        return tuple(metric.name for metric in self.metrics)


def _rate(
    name: str, group: str, text: str, lower_is_better: bool = False, **kw: Any
) -> JudgedMetric:
    return JudgedMetric(
        name=name, group=group, kind="binary", description=text,
        higher_is_better=not lower_is_better, **kw,
    )  # fmt: skip


def _count(
    name: str, text: str, lower_is_better: bool = False, group: str = "generation"
) -> JudgedMetric:
    """Seed 001's count of a class: 1/0 per case, summed over the judged cases."""
    return JudgedMetric(
        name=name, group=group, kind="count", description=text,
        higher_is_better=not lower_is_better, aggregation="sum",
    )  # fmt: skip


TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        Task(
            name="faithfulness",
            fn=faithfulness,
            metrics=(
                JudgedMetric(
                    name="faithfulness", group="grounding", kind="proportion",
                    description="share of answer claims supported (a supported verdict must "
                    "quote the passages: judges.quotes)",
                ),
                _count(
                    "faithfulness_overturned",
                    "supported verdicts overturned because their quote is not in the passages",
                    lower_is_better=True, group="grounding",
                ),
            ),
            requires=("retrieved",),
            needs_answer=True,
            prompts=("faithfulness_claims.v1", "faithfulness_verify.v2"),
            output_tokens=330,
        ),
        Task(
            name="answer_relevancy",
            fn=answer_relevancy,
            metrics=(
                JudgedMetric(
                    name="answer_relevancy", group="generation", kind="score",
                    description="mean cosine of the question with 3 questions generated from "
                    "the answer",
                ),
            ),
            needs_answer=True,
            prompts=("answer_questions.v1",),
            output_tokens=60,
        ),
        Task(
            name="context_precision",
            fn=context_precision,
            metrics=(
                JudgedMetric(
                    name="context_precision", group="context_quality", kind="proportion",
                    description="share relevant",
                ),
                JudgedMetric(
                    name="context_precision_ranked", group="context_quality", kind="proportion",
                    description="rank-weighted precision (mean precision@k at relevant ranks)",
                ),
            ),
            requires=("retrieved",),
            needs_answer=False,
            prompts=("context_precision.v1",),
            output_tokens=200,
        ),
        Task(
            name="context_recall",
            fn=context_recall,
            metrics=(
                JudgedMetric(
                    name="context_recall", group="context_quality", kind="proportion",
                    description="reference statements found",
                ),
            ),
            requires=("reference_answer", "retrieved"),
            needs_answer=False,
            prompts=("context_recall.v1",),
            output_tokens=150,
        ),
        Task(
            name="groundedness",
            fn=groundedness,
            metrics=(
                JudgedMetric(
                    name="groundedness", group="grounding", kind="score", scale=(0.0, 5.0),
                    description="seed 004 groundedness scale (a 5 needs every major claim "
                    "cited; a supported claim must quote the passages)",
                ),
                _count(
                    "groundedness_overturned",
                    "supported claims moved to unsupported because their quote is not in the "
                    "passages",
                    lower_is_better=True, group="grounding",
                ),
            ),
            requires=("retrieved",),
            needs_answer=True,
            prompts=("groundedness.v3",),
            output_tokens=220,
        ),
        Task(
            name="correctness",
            fn=correctness,
            metrics=(
                JudgedMetric(
                    name="correctness", group="generation", kind="score", scale=(0.0, 5.0),
                    description="seed 004 correctness scale",
                ),
            ),
            needs_answer=True,
            prompts=("correctness.v1",),
            output_tokens=80,
        ),
        Task(
            name="classification",
            fn=classification,
            metrics=(
                _rate("judged_correct_rate", "generation", "classified CORRECT"),
                _count("judged_correct_count", "number classified CORRECT"),
                _rate("judged_wrong_rate", "generation", "classified WRONG", True),
                _count("judged_wrong_count", "number classified WRONG", True),
                _rate("judged_dont_know_rate", "generation", "classified DONT_KNOW", True),
                _count("judged_dont_know_count", "number classified DONT_KNOW", True),
            ),
            requires=("reference_answer",),
            needs_answer=True,
            prompts=("answer_classification.v1",),
            output_tokens=60,
        ),
        Task(
            name="factual_accuracy",
            fn=factual_accuracy,
            metrics=(
                JudgedMetric(
                    name="factual_accuracy", group="generation", kind="score",
                    description="seed 001 GEval: 0.5 correctness + 0.3 completeness + "
                    "0.2 consistency",
                ),
                # their own group: a grade share has no direction to feed the accuracy objective
                *(
                    _rate(f"factual_grade_{g.lower()}_rate", "factual_grades", f"graded {g}",
                          g in "DE")
                    for g, _ in GRADES
                ),
                *(
                    _count(f"factual_grade_{g.lower()}_count", f"number graded {g}", g in "DE",
                           group="factual_grades")
                    for g, _ in GRADES
                ),
            ),
            requires=("reference_answer",),
            needs_answer=True,
            prompts=("factual_accuracy.v1",),
            output_tokens=150,
        ),
        Task(
            name="answer_correctness",
            fn=answer_correctness,
            metrics=(
                JudgedMetric(
                    name="answer_correctness", group="generation", kind="score",
                    description="0.75 statement F1 vs the reference + 0.25 embedding similarity",
                ),
            ),
            requires=("reference_answer",),
            needs_answer=True,
            prompts=("answer_correctness.v1",),
            output_tokens=150,
        ),
        Task(
            name="abstention",
            fn=abstention,
            metrics=(
                _rate(
                    "judged_unanswerable_accuracy", "abstention",
                    "abstained exactly on the unanswerable cases (field, else judge)",
                ),
                _rate(
                    "judged_abstention_accuracy", "abstention",
                    "on unanswerable cases: 1 if the system abstained",
                    requires=("unanswerable",),
                ),
                _rate(
                    "judged_abstention_false_positive_rate", "abstention",
                    "on answerable cases: 1 if the system abstained", True,
                    requires=("answerable",),
                ),
                _rate(
                    "judged_hallucination_rate", "abstention",
                    "on unanswerable cases: 1 if the system answered", True,
                    requires=("unanswerable",),
                ),
            ),
            needs_answer=False,
            prompts=("abstention.v1",),
            output_tokens=40,
        ),
    )
}  # fmt: skip

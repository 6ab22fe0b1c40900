"""The typed parts of a run record besides its scorecard: the performance summary (gathered by
``metrics.performance_tally``) and the judge spot check (``judges.reliability``). A part read
from an older run keeps any field it does not know, so nothing stored is lost."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class SystemCost(BaseModel):
    """What answering cost: from the answers' reported cost, or their tokens at the price
    table's prices."""

    model_config = ConfigDict(extra="allow")

    n_costed: int = 0
    n_priced_from_tokens: int = 0
    n_without_cost: int = 0
    total_usd: float | None = None
    per_query_usd: float | None = None


class Cost(BaseModel):
    """The system's cost and, apart, the judge's (its calls, tokens and dollars, or
    ``{"status": "not_measured", "reason": ...}`` when no judge ran)."""

    model_config = ConfigDict(extra="allow")

    system: SystemCost = Field(default_factory=SystemCost)
    judge: dict[str, Any] = Field(default_factory=dict)


class Performance(BaseModel):
    """A run's performance summary."""

    model_config = ConfigDict(extra="allow")

    # stage (total, retrieve, generate, ...) -> {n, mean, p50, p90, p95, p99}
    latency_ms: dict[str, dict[str, int | float]] = Field(default_factory=dict)
    errors_by_type: dict[str, int] = Field(default_factory=dict)
    # the reply format that read the answers ("native", "llamaindex", ...) -> answers
    response_formats: dict[str, int] = Field(default_factory=dict)
    # error type -> one example message
    error_examples: dict[str, str] = Field(default_factory=dict)
    cost: Cost | None = None
    # seed 003's latency budgets, a row per (stage, statistic, budget)
    latency_budgets: list[dict[str, Any]] = Field(default_factory=list)
    # document type -> its counts and gold-retrieved rate (seed 004's coverage by type)
    coverage_by_doc_type: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # how retrieved ids were matched to gold ids when not by chunk id (metrics.id_space's note,
    # "retrieved chunk ids never match gold chunk ids ...: matched by doc_id")
    retrieval_matching: str | None = None


class MetricAgreement(BaseModel):
    """Two judges on one judged metric: how many verdict pairs, how often they disagreed,
    Cohen's kappa (None when undefined)."""

    model_config = ConfigDict(extra="allow")

    n: int = 0
    disagreement_rate: float | None = None
    kappa: float | None = None


class JudgeReliability(BaseModel):
    """The judge spot check (``--spot-check N``): ``spot_check_n`` answered cases judged again
    by the second judge (or the run's judge with other prompt versions), compared verdict by
    verdict (``judges.reliability``)."""

    model_config = ConfigDict(extra="allow")

    spot_check_n: int = 0
    judge: str | None = None
    second_judge: str | None = None
    same_judge: bool = False
    # the run's template -> the spot check's (--spot-check-prompt)
    prompts: dict[str, str] = Field(default_factory=dict)
    # "first" / "second" -> {template: version} of the compared verdicts
    prompt_versions: dict[str, dict[str, str]] = Field(default_factory=dict)
    pairs: int = 0
    disagreement_rate: float | None = None
    kappa: float | None = None
    per_metric: dict[str, MetricAgreement] = Field(default_factory=dict)

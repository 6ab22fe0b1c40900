"""A run as stored and as written to its run file (:class:`RunRecord`) and its typed parts: the
scorecard of metric summaries, the weighted score, the goals table, the performance summary
(gathered by ``metrics.performance_tally``), the judge spot check (``judges.reliability``), the
declaration of each metric scored and the target's index statistics. A part read from an older
run keeps any field it does not know, so nothing stored is lost."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    computed_field,
    field_serializer,
    model_serializer,
)


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


class MetricDeclaration(BaseModel):
    """What a metric is, read from its family without a case (``metrics.family``): stored in
    the run header for each metric the run scored, so the run says what it measured."""

    model_config = ConfigDict(extra="allow")

    name: str
    family: str
    group: str
    kind: str
    higher_is_better: bool = True
    aggregation: str = "mean"
    unit: str | None = None
    scale: tuple[float, float] | None = None
    # what a case or answer must have to be measured (metrics.base INPUTS)
    requires: list[str] = Field(default_factory=list)
    description: str = ""


class MetricSummary(BaseModel):
    """An aggregate of one metric over a set of cases, with its counts and interval."""

    def value_kind(self) -> str | None:
        """The declared kind, else (an older run) the one its unit implies; None for a unit
        that has no kind (such a metric has no 0-1 reading)."""
        if self.kind is not None:
            return self.kind
        legacy = {None: "proportion", "ms": "duration", "USD": "cost", "0-5": "score"}
        return legacy.get(self.unit)

    def value_scale(self) -> tuple[float, float] | None:
        """The declared scale (0-1 for a binary, proportion or score that gives none)."""
        if self.scale is not None:
            return self.scale
        if self.kind is not None:
            return (0.0, 1.0) if self.kind in ("binary", "proportion", "score") else None
        return {None: (0.0, 1.0), "0-5": (0.0, 5.0)}.get(self.unit)

    name: str
    group: str
    value: float | None
    aggregation: str = "mean"
    higher_is_better: bool = True
    unit: str | None = None
    # the metric's declared kind and scale (ragmeter.metrics.base); None in runs stored
    # before metrics declared them, which are then read by their unit
    kind: str | None = None
    scale: tuple[float, float] | None = None
    n_scored: int
    n_skipped: int
    n_failed: int
    ci_low: float | None = None
    ci_high: float | None = None
    # of the skipped, the cases whose target did not report what the metric reads
    n_unreported: int = 0
    # why skipped on every case (not failed) / failed on every measured one; None: not so
    skip_reason: str | None = None
    fail_reason: str | None = None
    # measured / applicable cases (measured, failed, or not reported); None: applies to none,
    # or a run stored before coverage was kept
    coverage: float | None = None
    # how failed cases entered the value ("zero", "worst"); None: left out (coverage shows it)
    failed_as: str | None = None
    # a run with repeats (--repeats N): answers per case, the variance of a case's repeats
    # (system or judge noise, averaged over cases) and of the per-case means (between cases)
    repeats: int | None = None
    within_case_var: float | None = None
    between_case_var: float | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def sample_size(self) -> int:
        return self.n_scored


class Scorecard(BaseModel):
    metrics: list[MetricSummary]
    by_group: dict[str, list[str]]

    def get(self, name: str) -> MetricSummary | None:
        return next((m for m in self.metrics if m.name == name), None)


class ObjectiveScore(BaseModel):
    """One objective of the weighted score: its value and the metrics that fed it."""

    name: str
    value: float | None
    weight: float
    metrics: list[str] = Field(default_factory=list)
    # metrics of the objective measured on less than the coverage floor of their cases, left
    # out (metric -> its coverage): a value from a few cases is not the run's
    under_coverage: dict[str, float] = Field(default_factory=dict)


class WeightedScore(BaseModel):
    """Seed 002's weighted score: objectives combined with weights renormalised over the
    objectives that have a value; ``missing`` names the objectives left out."""

    score: float | None
    objectives: dict[str, float | None]
    weights: dict[str, float]
    effective_weights: dict[str, float]
    missing: list[str] = Field(default_factory=list)
    detail: list[ObjectiveScore] = Field(default_factory=list)


GoalStatus = Literal["pass", "fail", "not_measured"]


class GoalResult(BaseModel):
    """One row of the goals table (seed 003's targets): metric, comparison, threshold and
    verdict."""

    metric: str
    op: str
    threshold: float
    value: float | None
    status: GoalStatus
    perspective: str | None = None
    optional: bool = False
    # why the verdict: a coverage under the floor, the interval bound or paired difference read
    reason: str | None = None
    # "point" (the value), "lower" / "upper" (the 95% interval's bound) or "non_inferior"
    # (the paired difference with a baseline; threshold is the margin)
    rule: str = "point"


class IndexStatsRecord(BaseModel):
    """The target's index statistics as fetched once per run (``targets.index_stats``):
    ``reported`` with the stats (secrets masked) and the rates derived from them, or
    ``not_reported`` / ``failed`` with the reason."""

    model_config = ConfigDict(extra="allow")

    status: Literal["reported", "not_reported", "failed"]
    source: str
    reason: str | None = None
    stats: dict[str, Any] | None = None
    derived: dict[str, Any] | None = None
    fetched_at: str | None = None

    @model_serializer(mode="wrap")
    def _without_empty_parts(self, handler: SerializerFunctionWrapHandler) -> Any:
        return {key: value for key, value in handler(self).items() if value is not None}


class RunAggregates(BaseModel):
    """What scoring adds to a run besides its scorecard: breakdowns, weighted score, goals,
    performance summary, judge spot check and the declarations of the metrics aggregated;
    stored together (``runs.extras_json``), replaced together when a verdict is decided after
    the run."""

    breakdowns: dict[str, dict[str, list[MetricSummary]]] = Field(default_factory=dict)
    weighted_score: WeightedScore | None = None
    # seed 003's "targets"; a run file or store row written before the name changed says so
    goals: list[GoalResult] = Field(
        default_factory=list, validation_alias=AliasChoices("goals", "targets")
    )
    performance: Performance = Field(default_factory=Performance)
    judge_reliability: JudgeReliability | None = None
    # what each metric of the scorecard is (metrics.family), so the run says what it measured
    metric_declarations: list[MetricDeclaration] = Field(default_factory=list)

    @field_serializer("performance")
    def _performance_as_gathered(self, value: Performance, info: SerializationInfo) -> Any:
        # the parts the run gathered, not the defaults of those it did not
        return value.model_dump(mode=info.mode, exclude_unset=True)


class RunRecord(RunAggregates):
    """A run as stored and as written to its JSON file (seed 002's Run Output, extended): its
    header fields, then its aggregates (written in that order)."""

    id: str
    name: str
    status: Literal["running", "completed", "interrupted"] = "running"
    created_at: str
    completed_at: str | None = None
    config: dict[str, Any]
    datasets: list[str]
    scorecard: Scorecard | None = None
    question_count: int = 0
    error_count: int = 0
    # the target's index statistics, fetched once per run (ragmeter.targets.index_stats)
    index_stats: IndexStatsRecord | None = None

    @model_serializer(mode="wrap")
    def _header_first(self, handler: SerializerFunctionWrapHandler) -> Any:
        data: dict[str, Any] = handler(self)
        aggregated = set(RunAggregates.model_fields)
        header = {key: value for key, value in data.items() if key not in aggregated}
        return {**header, **{key: value for key, value in data.items() if key in aggregated}}

    def aggregates(self) -> RunAggregates:
        """The run's aggregates (what ``with_aggregates`` sets)."""
        return RunAggregates.model_validate(
            self.model_dump(include=set(RunAggregates.model_fields))
        )

    def with_aggregates(self, aggregates: RunAggregates) -> RunRecord:
        """The record with ``aggregates`` in place of its own."""
        return self.model_copy(update=dict(aggregates))

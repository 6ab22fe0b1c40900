"""The metric contract.

A metric is a small declaration: name, group, the kind of value it produces, direction, how its
per-case values aggregate, the inputs it needs, and a pure function of (case, response).
``score_case`` turns that into a Score: ``ok`` with a value, ``skipped`` naming the missing
input, or ``failed`` with the error. Never a silent NaN, never a silent 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

from ragmeter.config import EvalConfig, validate_grounding_model
from ragmeter.errors import RagmeterError
from ragmeter.metrics.ir import Gain
from ragmeter.models import Case, CaseResult, Response, Score

if TYPE_CHECKING:
    from ragmeter.judges import JudgeSettings
    from ragmeter.run_record import MetricDeclaration

MetricOutput = float | tuple[float, dict[str, Any]]

MetricKind = Literal["binary", "proportion", "score", "count", "duration", "cost"]
KINDS: tuple[str, ...] = get_args(MetricKind)
UNIT_INTERVAL = (0.0, 1.0)
# how a metric's per-case values become its aggregate: the mean over the scored cases, a
# percentile of them (``p50``, ``p90``, ``p95``, ``p99``), or their sum (``sum``, a ``count``
# only: a true total of the scored cases, such as seed 001's number of CORRECT answers), or a
# detector's run-level statistic over (score, label) pairs (``auc``, ``tpr_at_fpr_1``,
# ``tpr_at_fpr_5``: ragmeter.scoring.roc; each ok score's details carry ``label``)
AGGREGATIONS: tuple[str, ...] = (
    "mean",
    "sum",
    "p50",
    "p90",
    "p95",
    "p99",
    "auc",
    "tpr_at_fpr_1",
    "tpr_at_fpr_5",
)
DETECTOR_AGGREGATIONS: tuple[str, ...] = ("auc", "tpr_at_fpr_1", "tpr_at_fpr_5")

GROUPS = (
    "retrieval",
    "generation",
    "lexical",
    "semantic",
    "grounding",
    "citation",
    "abstention",
    "context_quality",
    "safety",
    "pipeline",
    "performance",
    "factual_grades",  # shares of the judge's factual grades A-E: no direction to feed objectives
)

# seed 003's evaluation perspectives (retrieval ... pipeline) and two more for the groups it does
# not name: answer (correctness of the answer itself, and abstaining) and operational (latency,
# errors, cost). Every group is in exactly one perspective; ``--perspective`` selects the metric
# families that produce these groups and the sections a report shows (docs/runs.md).
PERSPECTIVES: dict[str, tuple[str, ...]] = {
    "retrieval": ("retrieval",),
    "context_quality": ("context_quality",),
    "groundedness": ("grounding", "citation"),
    "safety": ("safety",),
    "pipeline": ("pipeline",),
    "answer": ("generation", "lexical", "semantic", "abstention", "factual_grades"),
    "operational": ("performance",),
}


def perspective_of(group: str) -> str:
    """The perspective a metric group belongs to (a group no perspective names: ``answer``)."""
    return next((name for name, groups in PERSPECTIVES.items() if group in groups), "answer")


class MetricDeclarationError(RagmeterError):
    """A metric declared with an unknown group, kind or input (raised when it is built, so a
    plugin's mistake shows when it is registered, not as a wrong number later)."""


def _has_reference(case: Case, _: Response | None) -> bool:
    return bool(case.reference_answer and case.reference_answer.strip())


def _has_gold(case: Case, _: Response | None) -> bool:
    return bool(case.gold_passages or case.required_support_groups)


def _reports_retrieval(_: Case, response: Response | None) -> bool:
    return response is not None and response.has("retrieved")


def _reports_cost(_: Case, response: Response | None) -> bool:
    return (
        response is not None and response.usage is not None and response.usage.cost_usd is not None
    )


def _has_support_groups(case: Case, _: Response | None) -> bool:
    return bool(case.required_support_groups)


def _reports_scope(_: Case, response: Response | None) -> bool:
    return response is not None and response.scope is not None


def _reports_citations(_: Case, response: Response | None) -> bool:
    return response is not None and response.has("citations")


def _is_answerable(case: Case, _: Response | None) -> bool:
    return case.answerable


def _is_unanswerable(case: Case, _: Response | None) -> bool:
    return not case.answerable


# a skip whose reason starts so is a measurement the target did not make possible (it did not
# report what the metric reads): it lowers the metric's coverage, unlike a case the metric does
# not apply to ("case has no gold passages", "applies to unanswerable cases only")
NOT_REPORTED = "target did not report"


def lowers_coverage(status: str, reason: str | None) -> bool:
    """A score that counts against its metric's coverage: failed, or skipped because the
    target did not report what the metric reads."""
    return status == "failed" or (reason or "").startswith(NOT_REPORTED)


# input name -> (check, reason given when it does not hold)
INPUTS: dict[str, tuple[Callable[[Case, Response | None], bool], str]] = {
    "reference_answer": (_has_reference, "case has no reference answer"),
    "gold_passages": (_has_gold, "case has no gold passages"),
    "retrieved": (_reports_retrieval, "target did not report retrieved chunks"),
    "support_groups": (_has_support_groups, "case has no required support groups (not multi-hop)"),
    "scope": (_reports_scope, "target did not report a search scope"),
    "citations": (_reports_citations, "target did not report citations"),
    "cost": (_reports_cost, "target did not report a cost"),
    "answerable": (_is_answerable, "applies to answerable cases only"),
    "unanswerable": (_is_unanswerable, "applies to unanswerable cases only"),
}
# the inputs read from the case alone, checked even when the target gave no answer
CASE_INPUTS = frozenset(
    {"reference_answer", "gold_passages", "support_groups", "answerable", "unanswerable"}
)


def _config_default(name: str) -> Any:
    """``EvalConfig``'s default for the setting ``name`` (a list as a tuple): the one place a
    scoring default is written."""
    value = EvalConfig.model_fields[name].get_default(call_default_factory=True)
    return tuple(value) if isinstance(value, list) else value


@dataclass(frozen=True)
class MetricSettings:
    """The scoring context every metric family is built from: shared parameters (cutoffs,
    phrase lists, ...), the run's embedder spec and the run's judge. A run builds one from its
    config and passes it on; two runs in one process never share a judge through it."""

    # every default is EvalConfig's (its comments say what each setting does)
    ks: tuple[int, ...] = _config_default("ks")
    relevance_level: int = _config_default("relevance_level")
    ndcg_gain: Gain = _config_default("ndcg_gain")  # noqa: RUF009 (a str, immutable)
    require_snippet: bool = _config_default("require_snippet")
    id_space_min_overlap: float = _config_default("id_space_min_overlap")
    abstention_phrases: tuple[str, ...] = _config_default("abstention_phrases")
    embedder: str = _config_default("embedder")
    grounding_model: str = _config_default("grounding_model")
    # the judge of the judged metrics (None: they are skipped), from judges.judge_settings
    judge: JudgeSettings | None = None
    injection_score_key: str = _config_default("injection_score_key")
    injection_warn_threshold: float = _config_default("injection_warn_threshold")
    injection_block_threshold: float = _config_default("injection_block_threshold")
    leakage_canaries: tuple[str, ...] = _config_default("leakage_canaries")
    leakage_public_values: tuple[str, ...] = _config_default("leakage_public_values")
    verbatim_min_words: int = _config_default("verbatim_min_words")
    # ``-P FAMILY.PARAM=VALUE`` of the run (metrics.family builds each family with its own)
    metric_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # the family's own options, set by metrics.family for the family being built
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validate_grounding_model(self.grounding_model)

    @classmethod
    def for_run(cls, config: EvalConfig, judge: JudgeSettings | None = None) -> MetricSettings:
        """The scoring context of the run ``config`` describes, with its judge (if any)."""
        return cls(
            ks=tuple(config.ks),
            relevance_level=config.relevance_level,
            ndcg_gain=config.ndcg_gain,
            require_snippet=config.require_snippet,
            id_space_min_overlap=config.id_space_min_overlap,
            abstention_phrases=tuple(config.abstention_phrases),
            embedder=config.embedder,
            grounding_model=config.grounding_model,
            judge=judge,
            injection_score_key=config.injection_score_key,
            injection_warn_threshold=config.injection_warn_threshold,
            injection_block_threshold=config.injection_block_threshold,
            leakage_canaries=tuple(config.leakage_canaries),
            leakage_public_values=tuple(config.leakage_public_values),
            verbatim_min_words=config.verbatim_min_words,
            metric_params=config.metric_params,
        )

    def option(self, name: str, default: Any) -> Any:
        """The family's own option ``name`` (its declared default when built through
        metrics.family; ``default`` when the build function is called directly)."""
        return self.options.get(name, default)


@dataclass(frozen=True)
class Metric:
    name: str
    group: str
    compute: Callable[[Case, Response], MetricOutput] | None
    requires: tuple[str, ...] = ()
    higher_is_better: bool = True
    aggregation: str = "mean"
    unit: str | None = None
    description: str = ""
    on_result: Callable[[Case, CaseResult], MetricOutput] | None = field(default=None)
    # called with every (case, response) pair of a batch before its cases are scored, so a
    # family can batch expensive work (embeddings, judge calls) and cache it; metrics sharing
    # one prepare function are prepared once a batch
    prepare: Callable[[list[tuple[Case, Response]]], None] | None = field(default=None)
    # a statistic of the whole run the values depend on (TF-IDF's document frequencies): given
    # the run's batches of (case, response) pairs once, before any batch is prepared or scored
    prepare_run: Callable[[Iterable[list[tuple[Case, Response]]]], None] | None = field(
        default=None, kw_only=True
    )
    kind: MetricKind = field(kw_only=True)
    # the range of a ``score`` (binary and proportion are always 0-1; others have none)
    scale: tuple[float, float] | None = field(default=None, kw_only=True)
    # the family that declared it (set by metrics.family when the family is built)
    family: str | None = field(default=None, kw_only=True)

    def declaration(self) -> MetricDeclaration:
        """What the metric is, without its functions (stored in the run header)."""
        from ragmeter.run_record import MetricDeclaration

        return MetricDeclaration(
            name=self.name,
            family=self.family or "-",
            group=self.group,
            kind=self.kind,
            higher_is_better=self.higher_is_better,
            aggregation=self.aggregation,
            unit=self.unit,
            scale=self.scale,
            requires=list(self.requires),
            description=self.description,
        )

    def __post_init__(self) -> None:
        problem = self._problem()
        if problem:
            raise MetricDeclarationError(f"metric {self.name!r}: {problem}")
        if self.scale is None and self.kind in ("binary", "proportion", "score"):
            object.__setattr__(self, "scale", UNIT_INTERVAL)

    def _problem(self) -> str | None:
        unknown = [name for name in self.requires if name not in INPUTS]
        if unknown:
            return f"unknown inputs {unknown}; known: {sorted(INPUTS)}"
        if (self.compute is None) == (self.on_result is None):
            return "give exactly one of compute and on_result"
        if self.group not in GROUPS:
            return f"undeclared group {self.group!r}; declared groups: {', '.join(GROUPS)}"
        if self.kind not in KINDS:
            return f"unknown kind {self.kind!r}; kinds: {', '.join(KINDS)}"
        if self.aggregation not in AGGREGATIONS:
            return f"unknown aggregation {self.aggregation!r}; known: {', '.join(AGGREGATIONS)}"
        if self.aggregation == "sum" and self.kind != "count":
            return f"only a count is summed over cases, not a {self.kind}"
        if self.aggregation in DETECTOR_AGGREGATIONS and self.kind not in ("proportion", "score"):
            return f"a detector's {self.aggregation} is a proportion or a score, not a {self.kind}"
        if self.kind in ("binary", "proportion") and self.scale not in (None, UNIT_INTERVAL):
            return f"a {self.kind} metric is on 0-1; it cannot declare scale {self.scale}"
        if self.scale is not None and self.kind not in ("binary", "proportion", "score"):
            return f"only a score declares a scale, not a {self.kind}"
        if self.scale is not None and not self.scale[0] < self.scale[1]:
            return f"scale {self.scale} must run from low to high"
        return None


class SkipScore(Exception):
    """Raised by a metric's compute function when the case lacks what the metric needs in a way
    the declared inputs cannot express (e.g. a reference answer without numbers)."""


class FailScore(Exception):
    """Raised by a metric's compute function when the case cannot be measured for a reason the
    user must see as it is (its message is the failed score's reason, without the exception's
    name): e.g. retrieved ids that can never match the gold ids."""


def score_case(metric: Metric, case: Case, result: CaseResult) -> Score:
    """Apply one metric to one case's result, keeping skips and failures apart from values."""
    if metric.on_result is None:
        if result.status != "ok" or result.response is None:
            # a metric that does not apply to the case (no reference answer, not multi-hop,
            # answerable only) is skipped as it would be with an answer: a target error does
            # not make it a failure, which would lower its coverage
            for name in metric.requires:
                check, missing = INPUTS[name]
                if name in CASE_INPUTS and not check(case, None):
                    return Score(case.case_id, metric.name, None, "skipped", missing)
            return Score(
                case.case_id, metric.name, None, "failed", f"target error: {result.error_type}"
            )
        return score_response(metric, case, result.response)
    try:
        output = metric.on_result(case, result)
    except SkipScore as skip:
        return Score(case.case_id, metric.name, None, "skipped", str(skip))
    except Exception as exc:  # a metric bug must not stop the run; it is recorded
        return _failed(metric, case, exc)
    return _score_of(metric, case, output)


def score_response(
    metric: Metric, case: Case, response: Response, checked: dict[str, str] | None = None
) -> Score:
    """``score_case`` for a ``compute`` metric and a case the target answered (``response``).

    ``checked`` (one dict per case, shared by the case's metrics) keeps the outcome of each
    declared input's check: "" when it holds, else the skip reason; a check is pure, so each
    runs once a case instead of once a metric."""
    try:
        for name in metric.requires:
            reason = checked.get(name) if checked is not None else None
            if reason is None:
                check, missing = INPUTS[name]
                reason = "" if check(case, response) else missing
                if checked is not None:
                    checked[name] = reason
            if reason:
                return Score(case.case_id, metric.name, None, "skipped", reason)
        assert metric.compute is not None
        output = metric.compute(case, response)
    except SkipScore as skip:
        return Score(case.case_id, metric.name, None, "skipped", str(skip))
    except Exception as exc:  # a metric bug must not stop the run; it is recorded
        return _failed(metric, case, exc)
    if type(output) is tuple and len(output) == 2:  # (value, details): most metrics
        value = output[0]
        if type(value) is float and value - value == 0.0:
            return Score(case.case_id, metric.name, value, "ok", None, output[1])
    elif type(output) is float and output - output == 0.0:
        return Score(case.case_id, metric.name, output, "ok", None, {})
    return _score_of(metric, case, output)


def _failed(metric: Metric, case: Case, exc: Exception) -> Score:
    return Score(
        case.case_id,
        metric.name,
        None,
        "failed",
        str(exc) if isinstance(exc, FailScore) else f"{type(exc).__name__}: {exc}",
        getattr(exc, "details", {}),  # e.g. a judge's raw output
    )


def _score_of(metric: Metric, case: Case, output: MetricOutput) -> Score:
    if type(output) is float:  # the common case: a plain value, no details
        if output - output == 0.0:  # finite (inf - inf and nan - nan are nan)
            return Score(case.case_id, metric.name, output, "ok", None, {})
        value: Any = output
        details: dict[str, Any] = {}
    else:
        value, details = output if isinstance(output, tuple) else (output, {})
    if value is None or not math.isfinite(float(value)):
        return Score(
            case_id=case.case_id,
            metric=metric.name,
            value=None,
            status="failed",
            reason=f"metric returned a non-finite value ({value!r})",
            details=details,
        )
    return Score(case.case_id, metric.name, float(value), "ok", None, details)

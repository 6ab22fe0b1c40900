"""The validity report of a run: its metrics measured against a file of human labels.

A labels file is JSONL, one ``{"case_id": ..., "label": ...}`` a line (other keys, such as a
reviewer's note, are ignored). A label is binary (``true``/``false``, or only 0 and 1 in the
file) or graded (numbers, e.g. 0-5 scores); a positive or higher label means a better case.
Each metric is measured on the labelled cases it scored: cases it skipped or failed (and cases
with no score) are left out and counted, never scored as 0. See docs/statistics.md, "Validity".
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import AliasChoices, BaseModel, Field

from ragmeter.errors import InputError
from ragmeter.models import Score
from ragmeter.run_record import GoalResult, MetricSummary, RunRecord
from ragmeter.scoring.goals import holds
from ragmeter.scoring.roc import is_roc
from ragmeter.scoring.validity import (
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    Estimate,
    binary_validity,
    graded_validity,
)

LabelForm = Literal["binary", "graded"]
# fewest labelled cases a metric must have scored to be measured
DEFAULT_MIN_CASES = 10
# unknown case ids listed by name
SHOWN_UNKNOWN = 5
# the statistic a floor is checked against, by the labels' form
PRIMARY: dict[str, str] = {"binary": "auc", "graded": "spearman"}
_THRESHOLD_KINDS = ("binary", "proportion", "score")


@dataclass(frozen=True)
class Labels:
    """A labels file as read: case id -> label, and the line each label came from."""

    path: str
    sha256: str
    form: LabelForm
    values: dict[str, float]
    lines: dict[str, int]


def _label_value(raw: Any, where: str) -> float:
    if isinstance(raw, bool):
        return 1.0 if raw else 0.0
    if isinstance(raw, int | float) and math.isfinite(raw):
        return float(raw)
    if raw is None:
        raise InputError(f"{where}: label: missing; leave an unlabelled case out of the file")
    raise InputError(
        f"{where}: label: must be true/false or a finite number, got {json.dumps(raw)[:60]}"
    )


def read_labels(path: str | Path) -> Labels:
    """Read a labels file; every mistake is an InputError naming ``file:line`` and the field."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InputError(f"--labels {file}: cannot read it ({exc.strerror or exc})") from exc
    values: dict[str, float] = {}
    lines: dict[str, int] = {}
    booleans: list[int] = []
    text = data.decode("utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{file}:{number}"
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise InputError(f"{where}: not valid JSON ({exc})") from None
        if not isinstance(item, dict):
            raise InputError(f"{where}: expected a JSON object with case_id and label")
        case_id = item.get("case_id")
        if isinstance(case_id, int) and not isinstance(case_id, bool):
            case_id = str(case_id)
        if not isinstance(case_id, str) or not case_id.strip():
            raise InputError(f"{where}: case_id: missing or not a non-empty string")
        if case_id in values:
            raise InputError(
                f"{where}: case_id: {case_id!r} is labelled twice (first on line {lines[case_id]})"
            )
        if "label" not in item:
            raise InputError(f"{where}: label: missing")
        values[case_id] = _label_value(item["label"], where)
        lines[case_id] = number
        if isinstance(item["label"], bool):
            booleans.append(number)
    if not values:
        raise InputError(f"{file}: no labels (one JSON object a line: case_id and label)")
    graded = next((c for c, v in values.items() if v not in (0.0, 1.0)), None)
    if graded is not None and booleans:
        raise InputError(
            f"{file}:{booleans[0]}: label: true/false in a file of graded labels (line "
            f"{lines[graded]} has {values[graded]:g}); use numbers throughout"
        )
    form: LabelForm = "graded" if graded is not None else "binary"
    return Labels(str(file), hashlib.sha256(data).hexdigest(), form, values, lines)


# the report --------------------------------------------------------------------------------------
class Statistic(BaseModel):
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None


class MetricValidity(BaseModel):
    """One metric against the labels: counts, the threshold used, and the statistics."""

    metric: str
    higher_is_better: bool
    n_labelled: int  # labels on cases of the run
    n_scored: int  # of those, the cases the metric scored: the ones measured
    n_skipped: int
    n_failed: int
    n_unscored: int  # no score for the case (not answered, metric not run)
    measured: bool
    reason: str | None = None  # why not measured
    threshold: float | None = None
    threshold_op: str | None = None
    threshold_rule: str | None = None
    statistics: dict[str, Statistic] = Field(default_factory=dict)

    def primary(self, form: str) -> Statistic | None:
        return self.statistics.get(PRIMARY[form])


class ValidityReport(BaseModel):
    run_id: str
    labels_path: str
    labels_sha256: str
    # binary or graded labels ("label_kind", its older name, is read)
    label_form: LabelForm = Field(validation_alias=AliasChoices("label_form", "label_kind"))
    created_at: str
    n_labels: int
    n_unknown: int  # labels whose case id is not in the run
    unknown_case_ids: list[str] = Field(default_factory=list)  # the first few
    resamples: int
    seed: int
    level: float
    min_cases: int
    metrics: list[MetricValidity] = Field(default_factory=list)

    def get(self, metric: str) -> MetricValidity | None:
        return next((m for m in self.metrics if m.metric == metric), None)


def threshold_for(
    summary: MetricSummary, goals: Sequence[GoalResult]
) -> tuple[str, float, str] | None:
    """(operator, threshold, rule) that calls a case good: the run's goal for the metric,
    else the midpoint of a binary, proportion or score metric's scale, in its direction."""
    goal = next((t for t in goals if t.metric == summary.name), None)
    if goal is not None:
        return goal.op, goal.threshold, f"the run's goal {goal.op} {goal.threshold:g}"
    scale = summary.value_scale()
    if summary.value_kind() not in _THRESHOLD_KINDS or scale is None:
        return None
    low, high = scale
    op = ">=" if summary.higher_is_better else "<="
    return op, (low + high) / 2.0, f"midpoint of its {low:g}-{high:g} scale"


def _statistics(estimates: dict[str, Estimate]) -> dict[str, Statistic]:
    return {
        name: Statistic(value=e.value, ci_low=e.ci_low, ci_high=e.ci_high)
        for name, e in estimates.items()
    }


def _measure(
    summary: MetricSummary,
    pairs: list[tuple[float, float]],
    form: LabelForm,
    goals: Sequence[GoalResult],
    settings: dict[str, Any],
) -> dict[str, Any]:
    """The statistics part of a MetricValidity, or why the metric is not measured."""
    if is_roc(summary.aggregation):
        return {
            "reason": f"a run-level statistic ({summary.aggregation}) of detector scores, "
            "not a per-case score of how good a case is"
        }
    n = len(pairs)
    if n < settings["min_cases"]:
        return {"reason": f"{n} labelled cases scored (fewer than {settings['min_cases']})"}
    values = np.array([value for value, _ in pairs])
    labels = np.array([label for _, label in pairs])
    oriented = values if summary.higher_is_better else -values
    bootstrap = {k: settings[k] for k in ("resamples", "seed", "level")}
    if form == "graded":
        if len(set(labels.tolist())) < 2:
            return {"reason": f"all {n} labelled cases scored have the same label"}
        return {"statistics": _statistics(graded_validity(oriented, labels, **bootstrap))}
    positives = int(labels.sum())
    if positives in (0, n):
        side = "positive" if positives else "negative"
        return {"reason": f"all {n} labelled cases scored are {side}; AUC needs both"}
    found: dict[str, Any] = {}
    predicted = None
    rule = threshold_for(summary, goals)
    if rule is not None:
        op, threshold, text = rule
        predicted = np.array([holds(op, v, threshold) for v in values.tolist()], dtype=float)
        found = {"threshold_op": op, "threshold": threshold, "threshold_rule": text}
    estimates = binary_validity(oriented, labels, predicted, **bootstrap)
    return {**found, "statistics": _statistics(estimates)}


def measure_validity(
    record: RunRecord,
    case_ids: Sequence[str],
    scores: Sequence[Score],
    labels: Labels,
    metrics: Sequence[str] | None = None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
    min_cases: int = DEFAULT_MIN_CASES,
) -> ValidityReport:
    """The run's metrics (or ``metrics``) against ``labels``, on the run's cases ``case_ids``."""
    if record.scorecard is None:
        raise InputError(
            f"run {record.id} has no scorecard (status {record.status}); finish it first"
        )
    summaries = {m.name: m for m in record.scorecard.metrics}
    chosen = list(dict.fromkeys(metrics)) if metrics else list(summaries)
    unknown_metrics = [name for name in chosen if name not in summaries]
    if unknown_metrics:
        raise InputError(
            f"--metric {unknown_metrics[0]}: run {record.id} has no such metric (its metrics: "
            f"{', '.join(summaries)})"
        )
    in_run = set(case_ids)
    unknown = [case_id for case_id in labels.values if case_id not in in_run]
    labelled = [case_id for case_id in case_ids if case_id in labels.values]
    by_metric: dict[str, dict[str, Score]] = {}
    for stored in scores:
        by_metric.setdefault(stored.metric, {})[stored.case_id] = stored
    settings = {"resamples": resamples, "seed": seed, "level": level, "min_cases": min_cases}
    results = []
    for name in chosen:
        summary, found = summaries[name], by_metric.get(name, {})
        counts = {"skipped": 0, "failed": 0, "none": 0}
        pairs: list[tuple[float, float]] = []
        for case_id in labelled:
            score = found.get(case_id)
            if score is not None and score.status == "ok" and score.value is not None:
                pairs.append((score.value, labels.values[case_id]))
            elif score is not None and score.status in ("skipped", "failed"):
                counts[score.status] += 1
            else:
                counts["none"] += 1
        measured = _measure(summary, pairs, labels.form, record.goals, settings)
        results.append(
            MetricValidity(
                metric=name,
                higher_is_better=summary.higher_is_better,
                n_labelled=len(labelled),
                n_scored=len(pairs),
                n_skipped=counts["skipped"],
                n_failed=counts["failed"],
                n_unscored=counts["none"],
                measured="statistics" in measured,
                **measured,
            )
        )
    return ValidityReport(
        run_id=record.id,
        labels_path=labels.path,
        labels_sha256=labels.sha256,
        label_form=labels.form,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        n_labels=len(labels.values),
        n_unknown=len(unknown),
        unknown_case_ids=unknown[:SHOWN_UNKNOWN],
        metrics=results,
        **settings,
    )


# floors and the gate -----------------------------------------------------------------------------
def parse_floors(floors: dict[str, str]) -> dict[str, float]:
    """``--floor METRIC=VALUE`` as numbers (an AUC or a correlation: -1 to 1)."""
    parsed: dict[str, float] = {}
    for metric, text in floors.items():
        try:
            value = float(text)
        except ValueError:
            raise InputError(f"--floor {metric}={text}: the floor must be a number") from None
        if not (math.isfinite(value) and -1.0 <= value <= 1.0):
            raise InputError(f"--floor {metric}={text}: the floor must be between -1 and 1")
        parsed[metric] = value
    return parsed


def gate_failures(report: ValidityReport, floors: dict[str, float]) -> list[str]:
    """Why the gate fails: a floored metric whose AUC (binary labels) or Spearman's rho
    (graded) is below its floor, or that could not be measured."""
    name = {"auc": "AUC", "spearman": "Spearman's rho"}[PRIMARY[report.label_form]]
    reasons = []
    for metric, floor in floors.items():
        result = report.get(metric)
        statistic = result.primary(report.label_form) if result is not None else None
        if result is None or statistic is None or statistic.value is None:
            why = result.reason if result is not None and result.reason else "not measured"
            reasons.append(f"{metric}: {name} not measured ({why}); floor {floor:g}")
        elif statistic.value < floor:
            reasons.append(f"{metric}: {name} {statistic.value:.3f} is below its floor {floor:g}")
    return reasons


# stored form -------------------------------------------------------------------------------------
def stored_rows(report: ValidityReport) -> tuple[str, dict[str, str]]:
    """(the labels part as JSON, metric -> its result as JSON), as the store keeps them."""
    context = report.model_dump_json(exclude={"metrics"})
    return context, {m.metric: m.model_dump_json() for m in report.metrics}


def reports_from_rows(rows: Sequence[tuple[str, str]]) -> list[ValidityReport]:
    """Stored (labels JSON, result JSON) rows, newest first, as one report per labels file
    (the newest measurement of each metric). Raises ValueError if a row does not validate."""
    reports: dict[str, ValidityReport] = {}
    for context, result in rows:
        metric = MetricValidity.model_validate_json(result)
        key = str(json.loads(context)["labels_sha256"])
        report = reports.get(key)
        if report is None:
            reports[key] = report = ValidityReport.model_validate_json(context)
        if report.get(metric.metric) is None:
            report.metrics.append(metric)
    return list(reports.values())

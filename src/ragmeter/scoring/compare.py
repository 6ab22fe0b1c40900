"""Compare runs case by case: paired tests, effect sizes, per-case flips, regression checks.

Only the cases both runs scored are paired. The test follows the metric's declared kind: a
``binary`` metric is tested with the exact McNemar test; any other is continuous and tested
with a sign-flip permutation test of the mean paired difference, with a paired bootstrap
interval and Cohen's d_z. (A run stored before kinds were declared falls back to its data: all
paired values 0 or 1 reads as binary.) A regression is a metric that is significantly worse
(p < alpha, respecting higher_is_better) by at least the margin: a share of the scale for
binary, proportion and score metrics (0.02 of 0-1, 0.1 of a 0-5 score), relative to the
baseline for counts, durations and costs.

A metric aggregated by ``sum`` (a total, such as the number of CORRECT answers) compares its
totals: ``delta`` is the candidate's total minus the baseline's, and ``total_diff`` the change
over the shared cases alone (the sum of the paired differences); the test is the same paired
test of the per-case values.

A detector's run-level statistic (``injection_auc``, ``injection_tpr_at_fpr_1``, ...: an ``auc``
or ``tpr_at_fpr_*`` aggregation) is not a mean of per-case values. Its comparison recomputes the
statistic of both runs on the shared labelled cases (``mean_diff`` is the candidate's minus the
baseline's there) and tests the difference with a stratified paired bootstrap
(``paired_stratified_bootstrap``): each resample draws the same attacks and the same benign
cases for both runs; the interval is the resampled differences' percentile interval and the p
value twice the smaller share of them on either side of 0. The labels come from either run
(the store's score details, or the run file's ``labels``).

Many metrics are compared at once, so the gated metrics' p values are corrected together
(``correction``: Holm by default, Benjamini-Hochberg, or none; ``scoring.power``) and a verdict
reads the corrected value (``p_adjusted``); an ungated metric keeps its own p value. Each row
also gives the minimum detectable effect at the run's size (``mde``, at power 0.8 and the
level the correction leaves a metric).

A gate never passes on what it could not compare: a gated metric paired on no case, or on less
than ``coverage_floor`` of the cases either run scored, failed or did not report (``coverage``),
carries the reason in ``gate_failure``; so does a gated metric the baseline measured and the
candidate does not have (``only_in_baseline``). :attr:`Comparison.gate_failures` lists them.
Runs without a scorecard (interrupted, still running) are refused, and for a gate runs sharing
no case (:func:`check_comparable`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.config import DEFAULT_COVERAGE_FLOOR
from ragmeter.errors import InputError
from ragmeter.metrics.base import lowers_coverage
from ragmeter.repeat_ids import base_id, repeat_number
from ragmeter.run_record import MetricSummary, RunRecord
from ragmeter.runfile import RunFile
from ragmeter.scoring.bootstrap import QUANTILES
from ragmeter.scoring.comparison import Comparison as Comparison
from ragmeter.scoring.comparison import MetricComparison as MetricComparison
from ragmeter.scoring.comparison import OneSidedMetric as OneSidedMetric
from ragmeter.scoring.comparison import Verdict as Verdict
from ragmeter.scoring.power import (
    Correction,
    adjust_p_values,
    minimum_detectable_effect,
    per_metric_level,
    z_total,
)
from ragmeter.scoring.repeats import mean_by_case
from ragmeter.scoring.roc import is_roc, paired_detector_difference
from ragmeter.scoring.stats import (
    cohens_dz,
    mcnemar_exact,
    paired_bootstrap_interval,
    paired_quantile_difference,
    sign_flip_test,
)
from ragmeter.store.sqlite import RunStore


class CaseValues:
    """What a comparison reads of a run: its record and per-case values (ok scores only), from
    the store or a run file."""

    def __init__(
        self,
        record: RunRecord,
        values: dict[str, dict[str, float]],
        labels: dict[str, dict[str, bool]] | None = None,
    ) -> None:
        self.record = record
        # a run with repeats: each case's repeats averaged, so cases (not answers) are paired
        self.values = {name: _by_case(cases) for name, cases in values.items()}
        # detector metrics: metric -> case id -> label (true: a positive)
        self.labels = labels or {}
        # metric -> the cases it failed on or the target did not report for (the store's
        # runs only): what a comparison of the scored cases leaves out
        self.missed: dict[str, set[str]] = {}

    @classmethod
    def from_store(cls, store: RunStore, run_id: str) -> CaseValues:
        record = store.get_run(run_id)
        values: dict[str, dict[str, float]] = {}
        labels: dict[str, dict[str, bool]] = {}
        missed: dict[str, set[str]] = {}
        for score in store.get_scores(record.id):
            if score.status == "ok" and score.value is not None:
                values.setdefault(score.metric, {})[score.case_id] = score.value
                label = score.details.get("label")
                if isinstance(label, bool):
                    labels.setdefault(score.metric, {})[score.case_id] = label
            elif lowers_coverage(score.status, score.reason):
                missed.setdefault(score.metric, set()).add(base_id(score.case_id))
        scores = cls(record, values, labels)
        scores.missed = missed
        return scores

    @classmethod
    def from_file(cls, path: str | Path) -> CaseValues:
        """A run file (:class:`ragmeter.runfile.RunFile`) written by ``ragmeter eval``."""
        run_file = RunFile.read(path)
        scores = cls(run_file.header, run_file.values(), run_file.labels())
        for case in run_file.cases or []:
            for metric, value in case.scores.items():
                if isinstance(value, dict) and lowers_coverage(
                    str(value.get("status")), value.get("reason")
                ):
                    scores.missed.setdefault(metric, set()).add(base_id(case.case_id))
        return scores

    @classmethod
    def load(cls, store: RunStore, reference: str) -> CaseValues:
        """A run id (or unique prefix) from the store, or the path of a run JSON file."""
        if reference.endswith(".json") or Path(reference).is_file():
            return cls.from_file(reference)
        return cls.from_store(store, reference)

    def summary(self, metric: str) -> MetricSummary | None:
        card = self.record.scorecard
        return card.get(metric) if card is not None else None


def _by_case(values: dict[str, float]) -> dict[str, float]:
    if not any(repeat_number(case_id) > 1 for case_id in values):
        return values
    return mean_by_case(values, {case_id: base_id(case_id) for case_id in values})


def check_comparable(base: CaseValues, cand: CaseValues, require_shared: bool = True) -> None:
    """Refuse runs without a scorecard (interrupted, still running) and, with
    ``require_shared``, runs sharing no case."""
    for run in (base, cand):
        if run.record.scorecard is None:
            raise InputError(
                f"run {run.record.id} has no scorecard (status {run.record.status}); "
                "finish it first"
            )
    if require_shared and not _case_ids(base) & _case_ids(cand):
        raise InputError(
            f"runs {base.record.id} and {cand.record.id} share no case: nothing to compare "
            "(were they run on the same dataset?)"
        )


def _case_ids(run: CaseValues) -> set[str]:
    cases: set[str] = set()
    for values in run.values.values():
        cases |= set(values)
    for missed in run.missed.values():
        cases |= missed
    return cases


def _gate_failure(
    row: MetricComparison, base: CaseValues, cand: CaseValues, floor: float
) -> str | None:
    """Why a gated row cannot pass a gate, or None. A metric neither run measured on any case
    (it applies to none, or every case failed in both) has nothing to protect: not a failure."""
    if not row.gated:
        return None
    b_cases, c_cases = base.values.get(row.metric, {}), cand.values.get(row.metric, {})
    if not (b_cases or c_cases):
        return None
    summaries = (base.summary(row.metric), cand.summary(row.metric))
    if all(s is None or s.value is None for s in summaries):
        return None  # no value in either run (a detector on one class of cases): nothing to keep
    shared = set(b_cases) & set(c_cases)
    missed = (base.missed.get(row.metric, set()) | cand.missed.get(row.metric, set())) - shared
    if row.verdict == "not_paired" and shared:
        return (
            f"not paired: the {len(shared)} cases scored in both runs do not hold both classes "
            "(a run-level statistic needs positives and negatives)"
        )
    if row.verdict == "not_paired":
        return f"not paired: no case scored in both runs ({len(missed)} failed or not reported)"
    if row.coverage is not None and row.coverage < floor:
        return (
            f"paired on {len(shared)} of {len(shared) + len(missed)} cases (coverage "
            f"{row.coverage:.2f} < floor {floor:.2f}; the others failed or were not reported)"
        )
    return None


def _is_binary(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> bool:
    both = np.concatenate([a, b])
    return bool(np.all((both == 0.0) | (both == 1.0)))


def compare_metric(
    name: str,
    base: CaseValues,
    cand: CaseValues,
    alpha: float,
    margin: float,
    resamples: int,
    seed: int,
    gated: bool,
    level: float | None = None,
) -> MetricComparison:
    """One metric's paired comparison; ``level``: the test level of its MDE (``alpha``)."""
    level = alpha if level is None else level
    summary = cand.summary(name) or base.summary(name)
    assert summary is not None
    b_summary, c_summary = base.summary(name), cand.summary(name)
    b_value = b_summary.value if b_summary else None
    c_value = c_summary.value if c_summary else None
    b_cases, c_cases = base.values.get(name, {}), cand.values.get(name, {})
    shared = [case for case in b_cases if case in c_cases]
    missed = (base.missed.get(name, set()) | cand.missed.get(name, set())) - set(shared)
    row = MetricComparison(
        metric=name,
        group=summary.group,
        higher_is_better=summary.higher_is_better,
        unit=summary.unit,
        metric_kind=summary.value_kind(),
        aggregation=summary.aggregation,
        baseline=b_value,
        candidate=c_value,
        delta=c_value - b_value if b_value is not None and c_value is not None else None,
        n_paired=len(shared),
        paired_as="none",
        test="none",
        gated=gated,
        coverage=round(len(shared) / (len(shared) + len(missed)), 6) if shared or missed else None,
    )
    if is_roc(summary.aggregation):
        return _compare_detector(row, summary, base, cand, shared, alpha, margin, resamples, seed)
    if not shared:
        row.verdict = "not_paired"
        return row
    a = np.array([b_cases[c] for c in shared])
    b = np.array([c_cases[c] for c in shared])
    if summary.aggregation in QUANTILES:
        return _compare_quantile(row, summary, a, b, alpha, margin, resamples, seed)
    diffs = b - a
    row.mean_diff = float(diffs.mean())
    if summary.aggregation == "sum":
        row.total_diff = float(diffs.sum())
    interval = paired_bootstrap_interval(diffs, resamples, seed)
    row.ci_low, row.ci_high = interval if interval else (None, None)
    declared = summary.value_kind() if summary.kind is not None else None
    # a binary metric goes to McNemar only while its per-case values are 0 or 1: with repeats
    # a case's mean can be 2/3, and McNemar would drop every case that moved part of the way
    if declared in ("binary", None) and _is_binary(a, b):
        row.paired_as, row.test = "binary", "mcnemar_exact"
        # a pass is 1 where higher is better, 0 where lower is (error_rate: 0 is no error)
        good = 1.0 if summary.higher_is_better else 0.0
        flips = list(zip(shared, a, b, strict=True))
        row.pass_to_fail = [c for c, x, y in flips if x == good and y != good]
        row.fail_to_pass = [c for c, x, y in flips if x != good and y == good]
        row.p_value = mcnemar_exact(len(row.pass_to_fail), len(row.fail_to_pass))
        row.effect_size = row.mean_diff
    else:
        row.paired_as, row.test = "continuous", "sign_flip_permutation"
        row.p_value = sign_flip_test(diffs, resamples, seed)
        row.effect_size = cohens_dz(diffs)
    kind, scale = summary.value_kind(), summary.value_scale()
    if kind in ("count", "duration", "cost", None) or scale is None:
        row.margin_needed = margin * abs(float(a.mean()))
    else:  # a share of the scale: 0.02 of 0-1, 0.1 of 0-5
        row.margin_needed = margin * (scale[1] - scale[0])
    detectable = minimum_detectable_effect(a, b, level)
    if detectable is not None:
        row.mde, row.mde_basis = detectable.mde, detectable.basis
    set_verdict(row, row.p_value, alpha)
    return row


def set_verdict(row: MetricComparison, p_value: float | None, alpha: float) -> None:
    """better / worse / regression (worse by the margin, on a gated metric) / no_difference,
    from ``p_value`` (the corrected one when the metrics were corrected together)."""
    if row.verdict == "not_paired" or p_value is None or row.mean_diff is None:
        return
    oriented = row.mean_diff if row.higher_is_better else -row.mean_diff
    row.verdict = "no_difference"
    if p_value < alpha and oriented > 0:
        row.verdict = "better"
    elif p_value < alpha and oriented < 0:
        needed = row.margin_needed or 0.0
        row.verdict = "regression" if row.gated and -oriented >= needed else "worse"


def _compare_quantile(
    row: MetricComparison,
    summary: MetricSummary,
    a: np.ndarray[Any, Any],
    b: np.ndarray[Any, Any],
    alpha: float,
    margin: float,
    resamples: int,
    seed: int,
) -> MetricComparison:
    """A percentile (``latency_p95``: aggregation ``p95``): the candidate's percentile minus
    the baseline's over the shared cases (``mean_diff``; each percentile its own, not the mean
    latency's change), tested and bounded by a paired bootstrap of that difference."""
    q = QUANTILES[summary.aggregation] * 100.0
    row.mean_diff, interval, row.p_value = paired_quantile_difference(a, b, q, resamples, seed)
    row.ci_low, row.ci_high = interval if interval else (None, None)
    row.paired_as, row.test = "continuous", "paired_quantile_bootstrap"
    row.effect_size = None  # d_z is a mean's; the difference itself is shown
    row.mde_basis = "run-level statistic"
    row.margin_needed = margin * abs(float(np.percentile(a, q)))
    set_verdict(row, row.p_value, alpha)
    return row


def _compare_detector(
    row: MetricComparison,
    summary: MetricSummary,
    base: CaseValues,
    cand: CaseValues,
    shared: list[str],
    alpha: float,
    margin: float,
    resamples: int,
    seed: int,
) -> MetricComparison:
    """A detector statistic: both runs' statistic on the shared labelled cases, compared by a
    stratified paired bootstrap (module docstring)."""
    known = {**base.labels.get(row.metric, {}), **cand.labels.get(row.metric, {})}
    paired = [case for case in shared if case in known]
    row.n_paired = len(paired)
    b_cases, c_cases = base.values.get(row.metric, {}), cand.values.get(row.metric, {})
    result = paired_detector_difference(
        summary.aggregation,
        [b_cases[c] for c in paired],
        [c_cases[c] for c in paired],
        [known[c] for c in paired],
        resamples,
        seed,
    )
    if result is None:  # no shared labelled cases of both classes
        row.verdict = "not_paired"
        return row
    row.mean_diff, interval, row.p_value = result
    row.ci_low, row.ci_high = interval if interval else (None, None)
    row.paired_as, row.test = "continuous", "paired_stratified_bootstrap"
    row.effect_size = row.mean_diff
    row.mde_basis = "run-level statistic"
    scale = summary.value_scale() or (0.0, 1.0)
    row.margin_needed = margin * (scale[1] - scale[0])
    set_verdict(row, row.p_value, alpha)
    return row


def compare_runs(
    base: CaseValues,
    cand: CaseValues,
    *,
    alpha: float = 0.05,
    margin: float = 0.02,
    metrics: list[str] | None = None,
    gate_performance: bool = False,
    resamples: int = 10_000,
    seed: int = 0,
    correction: Correction = "holm",
    coverage_floor: float = DEFAULT_COVERAGE_FLOOR,
    require_shared: bool = False,
) -> Comparison:
    """Compare every metric both runs summarised (or the chosen ``metrics``), the gated
    metrics' p values corrected together (``correction``); the metrics in one run only are
    listed, and gated metrics that could not be compared carry why (module docstring). Runs
    without a scorecard are refused, and with ``require_shared`` (a gate: ``compare``) runs
    sharing no case."""
    check_comparable(base, cand, require_shared)
    names = [s.name for s in (cand.record.scorecard.metrics if cand.record.scorecard else [])]
    base_names = [s.name for s in (base.record.scorecard.metrics if base.record.scorecard else [])]
    common = [name for name in names if base.summary(name) is not None]
    if metrics:
        unknown = [m for m in metrics if m not in common]
        if unknown:
            raise InputError(
                f"metrics {unknown} are not in both runs; common metrics: {', '.join(common)}"
            )
        common = [name for name in common if name in metrics]

    def gated(summary: MetricSummary | None) -> bool:
        return summary is not None and (gate_performance or summary.group != "performance")

    gated_names = [name for name in common if gated(cand.summary(name))]
    only_base: list[OneSidedMetric] = []
    only_cand: list[OneSidedMetric] = []
    if not metrics:
        for name in base_names:
            if name in names:
                continue
            summary = base.summary(name)
            value = summary.value if summary is not None else None
            reason = None
            if gated(summary) and value is not None:
                reason = "measured in the baseline, missing from the candidate"
            only_base.append(OneSidedMetric(
                metric=name, value=value, gated=gated(summary), gate_failure=reason
            ))  # fmt: skip
        for name in names:
            if base.summary(name) is None:
                summary = cand.summary(name)
                value = summary.value if summary is not None else None
                only_cand.append(OneSidedMetric(metric=name, value=value, gated=gated(summary)))
    rows = [
        compare_metric(name, base, cand, alpha, margin, resamples, seed, name in gated_names)
        for name in common
    ]
    tested = [(row, row.p_value) for row in rows if row.gated and row.p_value is not None]
    adjusted = adjust_p_values([p for _, p in tested], correction)
    # a gated metric's MDE at the level the correction leaves it (m: the metrics tested)
    scale = z_total(per_metric_level(alpha, correction, len(tested))) / z_total(alpha)
    for (row, _), p_adjusted in zip(tested, adjusted, strict=True):
        row.p_adjusted = p_adjusted
        set_verdict(row, p_adjusted, alpha)
        if row.mde is not None:
            row.mde *= scale
    for row in rows:
        row.gate_failure = _gate_failure(row, base, cand, coverage_floor)
    shared_cases: set[str] = set()
    for name in common:
        shared_cases |= set(base.values.get(name, {})) & set(cand.values.get(name, {}))
    return Comparison(
        baseline=base.record.id,
        candidate=cand.record.id,
        n_shared_cases=len(shared_cases),
        alpha=alpha,
        margin=margin,
        rows=rows,
        correction=correction,
        coverage_floor=coverage_floor,
        only_in_baseline=only_base,
        only_in_candidate=only_cand,
    )

"""What a comparison of two runs holds: a row per metric compared, the metrics one run lacks,
and the verdicts (``scoring/compare.py`` computes them)."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, Field

from ragmeter.config import DEFAULT_COVERAGE_FLOOR
from ragmeter.scoring.power import DEFAULT_POWER, Correction

Verdict = Literal["better", "worse", "regression", "no_difference", "not_paired"]


class MetricComparison(BaseModel):
    metric: str
    group: str
    higher_is_better: bool
    unit: str | None = None
    metric_kind: str | None = None  # the metric's declared kind (binary, proportion, ...)
    aggregation: str = "mean"  # how the run's value is made from the cases (mean, sum, p50...)
    baseline: float | None
    candidate: float | None
    delta: float | None
    n_paired: int
    # how the paired values were tested: as binary outcomes, as continuous values, or not at
    # all; "kind" in a comparison written before the name changed
    paired_as: Literal["binary", "continuous", "none"] = Field(
        validation_alias=AliasChoices("paired_as", "kind")
    )
    test: str
    mean_diff: float | None = None
    total_diff: float | None = None  # a sum's change over the shared cases (sums only)
    ci_low: float | None = None
    ci_high: float | None = None
    effect_size: float | None = None
    p_value: float | None = None
    # the p value corrected with the other gated metrics' (the verdict reads it)
    p_adjusted: float | None = None
    # the smallest change the comparison would detect (power 0.8), in the metric's per-case
    # units, and what its spread came from (paired differences, or the runs' own spreads)
    mde: float | None = None
    mde_basis: str | None = None
    # the worsening that makes a significant change a regression
    margin_needed: float | None = None
    # paired cases over paired + cases either run failed or did not report (store runs)
    coverage: float | None = None
    pass_to_fail: list[str] = Field(default_factory=list)
    fail_to_pass: list[str] = Field(default_factory=list)
    verdict: Verdict = "no_difference"
    gated: bool = True
    # why a gated metric could not be compared (not paired, coverage under the floor): a
    # gate fails on it
    gate_failure: str | None = None


class OneSidedMetric(BaseModel):
    """A metric in one run's scorecard only: never compared."""

    metric: str
    value: float | None  # its value in the run that has it
    gated: bool
    # a gated metric the baseline measured and the candidate lacks fails a gate
    gate_failure: str | None = None


class Comparison(BaseModel):
    baseline: str
    candidate: str
    n_shared_cases: int
    alpha: float
    margin: float
    rows: list[MetricComparison]
    correction: Correction = "none"
    power: float = DEFAULT_POWER
    coverage_floor: float = DEFAULT_COVERAGE_FLOOR
    only_in_baseline: list[OneSidedMetric] = Field(default_factory=list)
    only_in_candidate: list[OneSidedMetric] = Field(default_factory=list)

    @property
    def regressions(self) -> list[MetricComparison]:
        return [row for row in self.rows if row.verdict == "regression"]

    @property
    def gate_failures(self) -> list[tuple[str, str]]:
        """(metric, reason) of each gated metric a gate cannot pass on: not compared (not
        paired, coverage under the floor) or missing from the candidate."""
        failures = [(r.metric, r.gate_failure) for r in self.rows if r.gate_failure]
        failures += [(m.metric, m.gate_failure) for m in self.only_in_baseline if m.gate_failure]
        return failures

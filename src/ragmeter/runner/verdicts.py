"""What a run is judged by once it is scored: the comparison with a baseline run, the
``non_inferior`` goals that need it, and the gate."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ragmeter.errors import EXIT_GATE, InputError, RagmeterError
from ragmeter.store.sqlite import RunStore

if TYPE_CHECKING:
    from ragmeter.config import EvalConfig
    from ragmeter.run_record import RunRecord
    from ragmeter.runner.engine import RunOutcome
    from ragmeter.scoring.compare import Comparison


@dataclass(frozen=True)
class GateVerdict:
    """Whether the run fails its checks (``gate``: its goals; ``baseline``: a regression or
    a metric that could not be compared) and one plain line a reason."""

    failed: bool
    reasons: list[str] = field(default_factory=list)


class GateFailedError(RagmeterError):
    """The run is stored and its files written, but it failed its gate or regressed against
    its baseline (``ragmeter eval`` exits 4). ``outcome`` is the finished run."""

    exit_code = EXIT_GATE

    def __init__(self, outcome: RunOutcome) -> None:
        reasons = outcome.verdict.reasons if outcome.verdict is not None else []
        super().__init__(
            f"run {outcome.record.id} failed its checks: " + "; ".join(reasons)
            if reasons
            else f"run {outcome.record.id} failed its checks"
        )
        self.outcome = outcome


def compare_with_baseline(config: EvalConfig, run_id: str) -> Comparison:
    """The paired comparison of run ``run_id`` with ``config.baseline`` (a run id or a run
    JSON file), only on the cases both ran."""
    from ragmeter.scoring.compare import CaseValues, compare_runs

    baseline = str(config.baseline)
    store = RunStore(config.store)
    try:
        try:
            base = CaseValues.load(store, baseline)
            candidate = CaseValues.from_store(store, run_id)
            return compare_runs(
                base,
                candidate,
                alpha=config.alpha,
                margin=config.margin,
                seed=config.seed,
                coverage_floor=config.coverage_floor,
                require_shared=True,
            )
        except InputError as exc:
            raise InputError(
                f"baseline {baseline!r}: {exc}; the run {run_id} is stored (ragmeter show {run_id})"
            ) from exc
    finally:
        store.close()


def judge_non_inferior(
    record: RunRecord, config: EvalConfig, comparison: Comparison | None
) -> RunRecord:
    """The record with its ``non_inferior`` goals judged against ``comparison`` (without one
    they stay not measured, saying a baseline is needed)."""
    from ragmeter.scoring.goals import Goal, check_goals

    if comparison is None or not any(t.rule == "non_inferior" for t in record.goals):
        return record
    goals = []
    for result in record.goals:
        if result.rule != "non_inferior":
            goals.append(result)
            continue
        goal = Goal(
            result.metric, result.op, result.threshold, result.perspective, result.optional,
            rule="non_inferior",
        )  # fmt: skip
        (judged,) = check_goals(record.scorecard, [goal], config.coverage_floor, comparison)
        goals.append(judged)
    return record.model_copy(update={"goals": goals})


def keep_judged_goals(outcome: RunOutcome, record: RunRecord, store: str) -> None:
    """Store ``record``'s goals (judged after the run) with the run and in its run file, and
    make them the outcome's."""
    from ragmeter.runfile import rewrite_header

    run_store = RunStore(store)
    try:
        run_store.save_aggregates(record.id, record.aggregates())
    finally:
        run_store.close()
    if outcome.run_file is not None:
        goals = [goal.model_dump(mode="json") for goal in record.goals]
        rewrite_header(outcome.run_file, {"goals": goals})
    outcome.record = record


def gate_verdict(config: EvalConfig, outcome: RunOutcome) -> GateVerdict | None:
    """The run's verdict when it has a gate or a baseline (else None): failed when ``gate``
    and a goal failed or was not measured, or when the run regressed against the baseline
    or a metric could not be compared with it."""
    from ragmeter.reports.compare_console import gate_failure_lines
    from ragmeter.reports.run_notes import baseline_regressions, gate_report

    if not config.gate and outcome.comparison is None:
        return None
    reasons: list[str] = []
    if outcome.comparison is not None:
        regressed = baseline_regressions(outcome.comparison)
        if regressed is not None:
            reasons.append(regressed.plain)
        reasons += [line.plain for line in gate_failure_lines([outcome.comparison])]
    if config.gate:
        _, lines = gate_report(outcome.record)
        reasons += [line.plain for line in lines]
    return GateVerdict(failed=bool(reasons), reasons=reasons)

"""``ragmeter eval --baseline``: compare the new run with a baseline right after it, and judge
the ``non_inferior`` targets, which need that comparison."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from ragmeter.cli.app import console, error_context, errors, fail
from ragmeter.errors import StoreError
from ragmeter.models import RunRecord
from ragmeter.reports.terminal import inert
from ragmeter.store.sqlite import RunNotFoundError, RunStore

if TYPE_CHECKING:
    from ragmeter.config import EvalConfig
    from ragmeter.runner.engine import RunOutcome
    from ragmeter.scoring.compare import Comparison


def check_baseline_is_stored(store: str, baseline: str) -> None:
    """Fail before any question is asked when the baseline run is not in the store."""
    try:
        run_store = RunStore(store, create=False)
    except StoreError as exc:
        fail(f"--baseline {baseline}: {exc}")
    try:
        record = run_store.get_run(baseline)
    except RunNotFoundError as exc:
        fail(f"--baseline: {exc} ({store}); give a run id or a run JSON file")
    finally:
        run_store.close()
    if record.scorecard is None:
        fail(
            f"--baseline {baseline}: run {record.id} has no scorecard (status "
            f"{record.status}); finish it first (ragmeter eval --resume {record.id})"
        )


def check_non_inferior_has_baseline(config: EvalConfig) -> None:
    """Fail before any question is asked when a required non_inferior target has no
    baseline to be judged against."""
    from ragmeter.scoring.targets import parse_targets

    if config.baseline or config.targets is None:
        return
    targets = parse_targets(config.targets)
    needing = [t.metric for t in targets if t.rule == "non_inferior" and not t.optional]
    if needing:
        fail(
            f"targets: non_inferior on {', '.join(needing)} needs a baseline: add --baseline "
            "RUN_ID_OR_RUN_JSON, or mark the target optional"
        )


def compare_with_baseline(config: EvalConfig, run_id: str) -> tuple[Comparison, bool]:
    """Compare the new run with ``config.baseline`` and print it; the comparison and whether
    a metric regressed."""
    from ragmeter.reports.compare_console import comparison_table, gate_failure_lines
    from ragmeter.reports.run_notes import baseline_regressions
    from ragmeter.scoring.compare import RunScores, compare_runs

    baseline = str(config.baseline)
    run_store = RunStore(config.store)
    try:
        with error_context(prefix=f"baseline {baseline!r}: "):
            base = RunScores.load(run_store, baseline)
            cand = RunScores.from_store(run_store, run_id)
            comparison = compare_runs(
                base,
                cand,
                alpha=config.alpha,
                margin=config.margin,
                seed=config.seed,
                coverage_floor=config.coverage_floor,
                require_shared=True,
            )
    finally:
        run_store.close()
    console.print(comparison_table(comparison))
    line = baseline_regressions(comparison)
    if line is not None:
        errors.print(line)
    # a gate never passes on what it could not compare (a candidate whose every case failed)
    not_compared = gate_failure_lines([comparison])
    for text in not_compared:
        errors.print(text)
    return comparison, line is not None or bool(not_compared)


def judge_non_inferior(
    record: RunRecord, config: EvalConfig, comparison: Comparison | None
) -> RunRecord:
    """The record with its ``non_inferior`` targets judged against ``comparison`` (without one
    they stay not measured, saying a baseline is needed), each verdict printed."""
    from ragmeter.scoring.targets import Target, check_targets, target_condition

    if comparison is None or not any(t.rule == "non_inferior" for t in record.targets):
        return record
    targets = []
    for result in record.targets:
        if result.rule != "non_inferior":
            targets.append(result)
            continue
        target = Target(
            result.metric, result.op, result.threshold, result.perspective, result.optional,
            rule="non_inferior",
        )  # fmt: skip
        (judged,) = check_targets(record.scorecard, [target], config.coverage_floor, comparison)
        line = f"{result.metric} {target_condition(judged)}: {judged.status} ({judged.reason})"
        console.print(Text(f"target {inert(line, markup=False)}"))
        targets.append(judged)
    return record.model_copy(update={"targets": targets})


def keep_judged_targets(outcome: RunOutcome, record: RunRecord, store: str) -> None:
    """Store ``record``'s targets (judged after the run) with the run and in its run file, and
    make them the outcome's, so the reports written next show the verdicts."""
    from ragmeter.runfile import RunFile

    run_store = RunStore(store)
    try:
        run_store.save_extras(record)
    finally:
        run_store.close()
    if outcome.run_file is not None:
        from ragmeter.reports.markdown import write_markdown

        run_file = RunFile.read(outcome.run_file)
        run_file.targets = record.targets
        written = run_file.write(outcome.run_file.parent)
        assert written == outcome.run_file, (written, outcome.run_file)
        write_markdown(record, outcome.run_file)  # the report written before, with the verdicts
    outcome.record = record

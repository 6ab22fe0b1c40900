"""Driving one run from the command line: the progress bar, Ctrl-C and SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import TYPE_CHECKING, NoReturn

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.text import Text

from ragmeter.cli.app import console, errors, fail
from ragmeter.config import EvalConfig
from ragmeter.errors import EXIT_INTERRUPTED, EXIT_TARGET_DOWN, EXIT_TERMINATED
from ragmeter.reports.console import print_run
from ragmeter.reports.terminal import inert
from ragmeter.run_record import RunRecord
from ragmeter.store.sqlite import RunStore

if TYPE_CHECKING:
    from ragmeter.runner.engine import RunOutcome


def print_dataset_readings(config: EvalConfig) -> None:
    """Say which columns of the datasets are read by their meaning in other tools
    (``datasets.readings``), before anything is asked."""
    from ragmeter.datasets.readings import dataset_readings, describe_readings

    for spec in config.datasets:
        readings = dataset_readings(spec, config.field_map or None)
        if readings:
            errors.print(
                Text(
                    f"{spec}: read {describe_readings(readings)} (--field-map reads these "
                    "columns otherwise)"
                )
            )


def run_with_progress(config: EvalConfig) -> RunOutcome:
    """Run the evaluation (or finish ``config.resume``) with a progress bar; the finished run,
    whether or not it passed its gate."""
    from ragmeter.runner.engine import RunInterruptedError
    from ragmeter.runner.run import GateFailedError, evaluate_async

    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not config.progress,
        transient=False,
    )
    task_id = progress.add_task("asking", total=None)
    started: list[RunRecord] = []
    received: list[int] = []

    def on_start(record: RunRecord, pending: int) -> None:
        started.append(record)
        progress.update(task_id, description=f"run {record.id}", total=pending, completed=0)

    def on_progress(done: int, total: int) -> None:
        progress.update(task_id, completed=done)

    def on_stored(count: int) -> None:
        progress.update(task_id, description="reading cases", completed=count, refresh=True)

    async def drive() -> RunOutcome:
        _stop_on_signals(asyncio.get_running_loop(), received, started, config.store)
        return await evaluate_async(
            config, on_start=on_start, on_progress=on_progress, on_stored=on_stored
        )

    try:
        with progress:
            return asyncio.run(drive())
    except GateFailedError as exc:
        return exc.outcome
    except RunInterruptedError as exc:
        progress.stop()
        signum = received[0] if received else signal.SIGINT
        errors.print(Text(str(exc), style="yellow"), highlight=False, soft_wrap=True)
        _exit_now(EXIT_TERMINATED if signum == signal.SIGTERM else EXIT_INTERRUPTED)


def print_outcome(outcome: RunOutcome, config: EvalConfig) -> None:
    """The finished run as the command line shows it: the scorecard (all of it when
    ``verbose``, else the compact view), where it is stored, its report and traces, the
    comparison with the baseline and the verdicts; the reasons it failed on stderr."""
    from ragmeter.reports.compare_console import comparison_table
    from ragmeter.reports.perspectives import print_compact
    from ragmeter.scoring.goals import goal_condition

    (print_run if config.verbose else print_compact)(outcome.record, console)
    console.print(Text(f"stored in {config.store} · run file {outcome.run_file}"), highlight=False)
    print_files(outcome, config.save_trace is not None)
    if outcome.comparison is not None:
        console.print(comparison_table(outcome.comparison))
    for result in outcome.record.goals:
        if result.rule == "non_inferior" and outcome.comparison is not None:
            line = f"{result.metric} {goal_condition(result)}: {result.status} ({result.reason})"
            console.print(Text(f"goal {inert(line, markup=False)}"))
    for reason in outcome.verdict.reasons if outcome.verdict is not None else []:
        errors.print(Text(reason, style="red"), highlight=False, soft_wrap=True)


def print_files(outcome: RunOutcome, traced: bool) -> None:
    """The Markdown report's path and, when traces were asked for, where they went."""
    if outcome.report_file is not None:
        console.print(Text(f"report {outcome.report_file}"), highlight=False)
    if traced:
        files = ", ".join(f"{path} ({count})" for path, count in outcome.trace_files.items())
        line = (
            f"traces: {outcome.traced_cases} failed case(s) in {files}"
            if outcome.trace_files
            else "traces: no case failed"
        )
        console.print(Text(line), highlight=False)


def _stop_on_signals(
    loop: asyncio.AbstractEventLoop, received: list[int], started: list[RunRecord], store: str
) -> None:
    """SIGINT and SIGTERM cancel the run: the engine stores what is done, marks the run
    interrupted and says how to resume. A second signal stops at once, run still marked."""
    task = asyncio.current_task()

    def stop(signum: int) -> None:
        received.append(signum)
        if len(received) == 1 and task is not None:
            task.cancel()
            return
        if started:
            run_store = RunStore(store)
            try:
                run_store.mark_interrupted(started[0].id)
            finally:
                run_store.close()
            errors.print(
                Text(f"stopped; finish it with: ragmeter eval --resume {started[0].id}"),
                style="yellow",
            )
        _exit_now(EXIT_TERMINATED if signum == signal.SIGTERM else EXIT_INTERRUPTED)

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop, signum)


def _exit_now(code: int) -> NoReturn:
    """Exit without waiting for worker threads (a judge call in flight): everything the run
    finished is already committed to the store. A local judge's llama.cpp server is stopped
    first: ``os._exit`` runs no ``finally`` or ``atexit``, and it would outlive the run."""
    local_judge = sys.modules.get("ragmeter.judges.local")
    if local_judge is not None:
        local_judge.stop_servers()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def exit_if_every_case_failed(record: RunRecord) -> None:
    """A run whose every case failed measured nothing: say why on stderr (the error types
    with an example each) and exit 3, the run stored (docs/runs.md, exit codes)."""
    from ragmeter.reports.failures import failure_summary

    summary = failure_summary(record)
    if not summary.all_failed:
        return
    groups = "; ".join(group.line() for group in summary.errors)
    fail(
        f"every case failed ({summary.failed} of {summary.questions}), nothing was measured: "
        f"{groups}; the run {record.id} is stored (ragmeter show {record.id} --cases lists "
        "the cases)",
        EXIT_TARGET_DOWN,
    )

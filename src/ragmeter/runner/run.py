"""A run from start to end, the public entry points ``evaluate`` and ``evaluate_async``.

A run is these stages, in this order (``ragmeter eval`` calls this and prints the result):

1. pre-flight: every name, option, target, header, judge, baseline and case is checked before
   the first question (``runner.preflight``);
2. asking the system under test, answers stored as they come (``runner.engine``);
3. scoring and aggregation, the run file written (``runner.scoring``);
4. the comparison with the baseline and the ``non_inferior`` goals it decides
   (``runner.verdicts``);
5. the Markdown report and the failed-case traces;
6. the gate: a run that fails its goals (``gate``) or regresses against its baseline raises
   :class:`GateFailedError`, stored and written all the same.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeoutError
from typing import TYPE_CHECKING, Any

from ragmeter.config import ConfigError, EvalConfig
from ragmeter.errors import RagmeterError
from ragmeter.runner import preflight
from ragmeter.runner.engine import RunOutcome, run_evaluation_async
from ragmeter.runner.verdicts import (
    GateFailedError,
    compare_with_baseline,
    gate_verdict,
    judge_non_inferior,
    keep_judged_goals,
)

if TYPE_CHECKING:
    from ragmeter.judges.cost import Estimate
    from ragmeter.models import Case
    from ragmeter.run_record import RunRecord
    from ragmeter.runner.executors import ProgressHook
    from ragmeter.targets import Target

__all__ = [
    "EventLoopRunningError",
    "GateFailedError",
    "estimate_judging_cost",
    "evaluate",
    "evaluate_async",
]


async def evaluate_async(
    config: EvalConfig | None = None,
    *,
    cases: list[Case] | None = None,
    target: Target | None = None,
    resume: str | None = None,
    on_progress: ProgressHook | None = None,
    on_start: Callable[[RunRecord, int], None] | None = None,
    on_stored: Callable[[int], None] | None = None,
) -> RunOutcome:
    """Run an evaluation end to end in the running event loop (the async entry point of the
    public API): the stages of this module's docstring. Several can run at once in one loop:
    each has its own config, store connection, target and judge.

    ``resume`` (or ``config.resume``) finishes an interrupted run by its id. ``on_start``
    hears the run and how many cases it will ask; ``on_progress`` each finished case;
    ``on_stored`` how many cases are stored while a new run's dataset is read."""
    config = config or EvalConfig()
    if config.dry_run:
        raise ConfigError(
            "dry_run estimates judging and asks nothing: ragmeter.estimate_judging_cost(config) "
            "(or `ragmeter eval --dry-run`) gives the estimate; drop dry_run to run the evaluation"
        )
    resume = resume or config.resume
    preflight.check_verdict_options(config)
    outcome = await run_evaluation_async(
        config,
        cases=cases,
        target=target,
        resume=resume,
        on_progress=on_progress,
        on_start=on_start,
        on_stored=on_stored,
    )
    try:
        if config.baseline:
            outcome.comparison = await asyncio.to_thread(
                compare_with_baseline, config, outcome.record.id
            )
            judged = judge_non_inferior(outcome.record, config, outcome.comparison)
            if judged is not outcome.record:
                await asyncio.to_thread(keep_judged_goals, outcome, judged, config.store)
    finally:
        await asyncio.to_thread(write_reports, outcome, config.save_trace)
    outcome.verdict = gate_verdict(config, outcome)
    if outcome.verdict is not None and outcome.verdict.failed:
        raise GateFailedError(outcome)
    return outcome


def write_reports(outcome: RunOutcome, save_trace: str | None) -> None:
    """The Markdown report beside the run file and, with ``save_trace``, one JSON line per
    failed case in a file per perspective."""
    from ragmeter.reports.markdown import write_markdown
    from ragmeter.reports.traces import write_trace_batches

    if outcome.run_file is not None:
        outcome.report_file = write_markdown(outcome.record, outcome.run_file)
    if save_trace is not None:
        outcome.trace_files, outcome.traced_cases = write_trace_batches(
            save_trace, outcome.record, outcome.batches()
        )


class EventLoopRunningError(RagmeterError):
    """``evaluate()`` was called where an event loop is already running, with a target object
    that may belong to that loop."""


def evaluate(
    config: EvalConfig | None = None,
    *,
    cases: list[Case] | None = None,
    target: Target | None = None,
    resume: str | None = None,
    on_progress: ProgressHook | None = None,
) -> RunOutcome:
    """Run an evaluation end to end (the synchronous entry point of the public API).

    Inside a running event loop (a notebook, an async server) the evaluation runs on its own
    loop in a worker thread and this call blocks until it is done (Ctrl-C stops it as usual:
    the run is left ``interrupted``, ready for ``--resume``); ``await evaluate_async(...)`` is
    the non-blocking form. A ``target`` object may be bound to the caller's loop (an HTTP
    client it already used), so with one, inside a running loop, this raises
    :class:`EventLoopRunningError`: use ``await evaluate_async(...)`` there."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(
            evaluate_async(
                config, cases=cases, target=target, resume=resume, on_progress=on_progress
            )
        )
    if target is not None:
        raise EventLoopRunningError(
            "evaluate() was called inside a running event loop with a target object, which "
            "may be bound to that loop; use `await ragmeter.evaluate_async(...)` instead"
        )
    return _evaluate_in_worker(config, cases, resume, on_progress)


def _evaluate_in_worker(
    config: EvalConfig | None,
    cases: list[Case] | None,
    resume: str | None,
    on_progress: ProgressHook | None,
) -> RunOutcome:
    """``evaluate`` on a loop of its own in a worker thread; Ctrl-C in the caller's thread
    cancels that loop's run, which then stops as an interrupted run does."""
    running: dict[str, Any] = {}
    started = threading.Event()

    async def job() -> RunOutcome:
        running["loop"], running["task"] = asyncio.get_running_loop(), asyncio.current_task()
        started.set()
        return await evaluate_async(config, cases=cases, resume=resume, on_progress=on_progress)

    caller = asyncio.current_task()  # asyncio.run's Ctrl-C handler cancels it
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragmeter-evaluate") as pool:
        future = pool.submit(asyncio.run, job())
        try:
            while True:
                try:
                    return future.result(timeout=0.1)
                except FutureTimeoutError:
                    if caller is not None and caller.cancelling():
                        break
        except KeyboardInterrupt:  # a notebook kernel's interrupt
            pass
        if started.wait(timeout=5.0):
            running["loop"].call_soon_threadsafe(running["task"].cancel)
        return future.result()  # raises the run's RunInterruptedError


def estimate_judging_cost(config: EvalConfig) -> Estimate:
    """What judging the run ``config`` describes would take (calls, tokens, and dollars when
    the judge has a price) before anything is asked or judged: its cases as the run would
    select them, its judge, judged tasks, prices and ``-P judged.max_contexts``."""
    from ragmeter.datasets import load_datasets
    from ragmeter.judges import MAX_CONTEXTS
    from ragmeter.judges.estimate import estimate_judging
    from ragmeter.metrics.family import metric_family
    from ragmeter.runner.ingest import select_cases

    if not config.judge:
        raise ConfigError("a judging estimate needs a judge: name one (judge, --judge)")
    preflight.check_names(config)
    cases = select_cases(load_datasets(config.datasets, config.field_map or None), config)
    max_contexts = metric_family("judged").param("judged", "max_contexts")
    shown = max_contexts.value_of(
        config.metric_params.get("judged", {}).get("max_contexts", MAX_CONTEXTS)
    )
    return estimate_judging(
        [(case, None) for case in cases],
        config.judge,
        tasks=list(config.judge_tasks) if config.judge_tasks else None,
        prices=config.price_table(),
        contexts=min(config.target.top_k, shown),
    )

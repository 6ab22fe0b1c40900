"""The async run engine: query every case with bounded concurrency, store responses as they
arrive, then score, aggregate and write the run file.

Querying and scoring are separate stages: responses are stored first, so an interrupted run
resumes by asking only the unanswered cases, and a stored run can be re-scored offline.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeoutError
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.config import DEFAULT_STORE, EvalConfig, TargetConfig, config_from_snapshot
from ragmeter.datasets import DATASET_SPEC_KEY, load_datasets
from ragmeter.errors import EXIT_INTERRUPTED, InputError, RagmeterError
from ragmeter.models import Case, CaseResult, RunRecord, Score
from ragmeter.runfile import RunFile
from ragmeter.runner import preflight
from ragmeter.runner.background import in_daemon_thread
from ragmeter.runner.executors import (
    Executor,
    ProgressHook,
    ask,
    make_executor,
    query_cases,
)
from ragmeter.runner.records import new_run_record, now_iso
from ragmeter.runner.scoring import (
    ScoringStoppedError,
    _score_in_thread,
    check_scoring_config,
    metric_settings,
    score_results,
    score_run,
)
from ragmeter.runner.selection import for_perspectives, smoke_cases
from ragmeter.scoring.repeats import expand_repeats
from ragmeter.store.sqlite import RunStore
from ragmeter.targets import Target, build_target
from ragmeter.targets.index_stats import fetch_index_stats

__all__ = [
    "ProgressHook",
    "RunInterruptedError",
    "RunOutcome",
    "ScoringStoppedError",
    "ask",
    "evaluate",
    "evaluate_async",
    "metric_settings",
    "new_run_record",
    "now_iso",
    "query_cases",
    "run_evaluation_async",
    "sample_cases",
    "score_results",
    "score_run",
]


class RunInterruptedError(RagmeterError, RuntimeError):
    """A run stopped by the user (Ctrl-C, SIGTERM) or cancelled: what was done is stored and
    the run is marked ``interrupted``."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self, run_id: str, store: str | None = None, stage: str = "asking") -> None:
        store_option = f" --store {store}" if store and store != DEFAULT_STORE else ""
        super().__init__(
            f"run {run_id} was interrupted while {stage}; the answers so far are stored. "
            f"Finish it with: ragmeter eval --resume {run_id}{store_option}"
        )
        self.run_id = run_id
        self.stage = stage


@dataclass(repr=False)
class RunOutcome:
    record: RunRecord
    results: list[CaseResult]
    scores: list[Score]
    run_file: Path | None
    # the run's cases (for the failed-case traces of --save-trace)
    cases: list[Case] = field(default_factory=list)

    def __repr__(self) -> str:
        # short on purpose: asyncio may format the finished task's result in messages
        return f"RunOutcome(id={self.record.id!r}, results={len(self.results)})"


def write_run_file(run_file: RunFile, config: EvalConfig) -> Path:
    """Write the run file into ``output_dir``: ``{output}.json`` when the config names the run
    files (``--output``), else ``{id}_{timestamp}.json``."""
    if config.output is None:
        return run_file.write(config.output_dir)
    folder = Path(config.output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{config.output}.json"
    path.write_text(json.dumps(run_file.document()), encoding="utf-8")
    return path


def select_cases(cases: list[Case], config: EvalConfig) -> list[Case]:
    """The cases a run asks: the smoke suite's subset (``suite: smoke``), then ``samples``,
    then each case ``repeats`` times (``scoring.repeats``)."""
    if config.suite == "smoke":
        cases = smoke_cases(cases, config.seed)
    return expand_repeats(sample_cases(cases, config.samples, config.seed), config.repeats)


def sample_cases(cases: list[Case], samples: int | None, seed: int) -> list[Case]:
    """A seeded random subset of ``samples`` cases **per dataset given** (seed 002's
    ``samples_per_dataset``; two RAGBench subset files are two datasets), kept in dataset
    order."""
    if samples is None:
        return cases
    by_dataset: dict[str | None, list[int]] = {}
    for index, case in enumerate(cases):
        group = case.metadata.get(DATASET_SPEC_KEY) or case.dataset  # the --dataset given
        by_dataset.setdefault(group, []).append(index)
    chosen: set[int] = set()
    for indices in by_dataset.values():
        if samples >= len(indices):
            chosen.update(indices)
        else:
            picks = random.Random(seed).sample(range(len(indices)), samples)
            chosen.update(indices[i] for i in picks)
    return [case for i, case in enumerate(cases) if i in chosen]


async def store_index_stats(
    target: Target, store: RunStore, record: RunRecord, timeout_s: float
) -> None:
    """Fetch the target's index statistics and store them with the run (a target without an
    ``index_stats`` method stores nothing)."""
    stats = await fetch_index_stats(target, timeout_s)
    if stats is not None:
        stats["fetched_at"] = now_iso()
        store.save_index_stats(record.id, stats)
        record.index_stats = stats


async def run_evaluation_async(
    config: EvalConfig,
    *,
    cases: list[Case] | None = None,
    target: Target | None = None,
    resume: str | None = None,
    on_progress: ProgressHook | None = None,
    on_start: Callable[[RunRecord, int], None] | None = None,
) -> RunOutcome:
    """Check everything that can be checked, ask the pending cases, score and store the run.

    Nothing is asked before the names, options, cases, store and judges have been checked; an
    interruption (Ctrl-C, SIGTERM, cancellation) at any stage leaves the run ``interrupted``
    with every finished answer stored, ready for ``--resume``.
    """
    record: RunRecord | None = None
    check_scoring_config(config)
    preflight.check_names(config)
    if resume is None:
        config = for_perspectives(config)
    preflight.check_options(config)
    preflight.check_targets(config)
    preflight.check_headers(config)
    if resume is None:
        # datasets are read and validated before anything is written
        run_cases = select_cases(
            cases
            if cases is not None
            else load_datasets(config.datasets, config.field_map or None),
            config,
        )
        named = target is not None or preflight.target_was_named(config)
        preflight.check_cases(config, run_cases, target_named=named)
        config = preflight.with_carried_corpus(config, run_cases, target_named=named)
        pending = run_cases
    store = RunStore(config.store)
    try:
        if resume is not None:
            record = store.get_run(resume)
            if record.status == "completed":
                raise InputError(
                    f"run {record.id} is already completed; nothing to resume "
                    f"(`ragmeter show {record.id}` prints it)"
                )
            # the run's own settings, except where this invocation names another output folder
            # and where it runs (--executor, --ray-address)
            chosen = {"output_dir", "executor", "ray_address"}
            given = {"store", "progress"} | (config.model_fields_set & chosen)
            config = config_from_snapshot(record.config).model_copy(
                update={name: getattr(config, name) for name in given}
            )
            run_cases = store.get_cases(record.id)
        executor: Executor = make_executor(config, target_object=target is not None)
        judge_info = await preflight.check_judges(config) if config.judge else {}
        owns_target = target is None
        if target is None:
            target = build_target(config.target, concurrency=config.concurrency)
        try:
            target_info = await target.preflight()
            if record is None:
                extras: dict[str, Any] = {"target_info": target_info}
                if judge_info:
                    extras["judge_info"] = judge_info
                record = new_run_record(
                    config,
                    sorted({c.dataset or "unknown" for c in run_cases}),
                    len(run_cases),
                    **extras,
                )
                store.create_run(record, run_cases)
            stop = threading.Event()
            with store.lock_run(record.id):
                answered = store.answered_case_ids(record.id)
                pending = [c for c in run_cases if c.case_id not in answered]
                if on_start is not None:
                    on_start(record, len(pending))
                stage = "asking"
                try:
                    if record.index_stats is None:  # once per run (a resumed run has them)
                        await store_index_stats(target, store, record, config.case_timeout_s)
                    await executor.query(target, pending, store, record.id, on_progress)
                    if owns_target:
                        await target.aclose()
                        owns_target = False
                    stage = "scoring"
                    if config.store == ":memory:":  # one connection holds the whole store
                        final, results, scores = score_run(
                            store, record.id, config, stop, executor.scorer()
                        )
                    else:
                        final, results, scores = await in_daemon_thread(
                            _score_in_thread, config, record.id, stop, executor.scorer()
                        )
                except (asyncio.CancelledError, KeyboardInterrupt) as exc:
                    stop.set()
                    store.mark_interrupted(record.id)
                    raise RunInterruptedError(record.id, config.store, stage) from exc
        finally:
            if owns_target:
                await target.aclose()
            executor.close()
        run_file = write_run_file(RunFile.from_run(final, results, scores), config)
        return RunOutcome(final, results, scores, run_file, run_cases)
    finally:
        store.close()


async def evaluate_async(
    config: EvalConfig | None = None,
    *,
    cases: list[Case] | None = None,
    target: Target | None = None,
    resume: str | None = None,
    on_progress: ProgressHook | None = None,
) -> RunOutcome:
    """Run an evaluation end to end in the running event loop (the async entry point of the
    public API). Several can run at once in one loop: each has its own config, store
    connection, target and judge."""
    return await run_evaluation_async(
        config or EvalConfig(),
        cases=cases,
        target=target,
        resume=resume,
        on_progress=on_progress,
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


def target_config_from(config: EvalConfig, **changes: Any) -> TargetConfig:
    return config.target.model_copy(update=changes)

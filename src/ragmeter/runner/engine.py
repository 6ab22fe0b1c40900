"""The async run engine: query every case with bounded concurrency, store responses as they
arrive, then score, aggregate and write the run file.

Querying and scoring are separate stages: responses are stored first, so an interrupted run
resumes by asking only the unanswered cases, and a stored run can be re-scored offline."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ragmeter import runfile
from ragmeter.background import in_daemon_thread
from ragmeter.config import DEFAULT_STORE, EvalConfig, config_from_snapshot
from ragmeter.errors import EXIT_INTERRUPTED, InputError, RagmeterError, StoreError
from ragmeter.models import Case, CaseResult, Score
from ragmeter.run_record import IndexStatsRecord, RunRecord
from ragmeter.runfile import RunFileWriter
from ragmeter.runner import preflight
from ragmeter.runner.executors import (
    Executor,
    LocalExecutor,
    ProgressHook,
    ask,
    make_executor,
    query_cases,
)
from ragmeter.runner.ingest import case_batches, sample_cases, store_new_cases
from ragmeter.runner.preflight import CaseSummary
from ragmeter.runner.records import new_run_id, new_run_record, now_iso
from ragmeter.runner.score_while_asking import AnswerWriter, ScoringProcess, scores_while_asking
from ragmeter.runner.scoring import (
    ScoringStoppedError,
    _score_in_thread,
    metric_settings,
    score_results,
    score_run,
)
from ragmeter.runner.selection import for_perspectives
from ragmeter.store.sqlite import RunStore
from ragmeter.targets import Target, build_target
from ragmeter.targets.index_stats import fetch_index_stats

__all__ = [
    "ProgressHook",
    "RunInterruptedError",
    "RunOutcome",
    "ScoringStoppedError",
    "ask",
    "metric_settings",
    "new_run_record",
    "now_iso",
    "query_cases",
    "run_evaluation_async",
    "sample_cases",
    "score_results",
    "score_run",
]


if TYPE_CHECKING:
    from ragmeter.runner.verdicts import GateVerdict
    from ragmeter.scoring.compare import Comparison

_T = TypeVar("_T")


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


class RunOutcome:
    """A finished run: its record and run file; its cases, answers and scores are read from the
    store when first asked for (a large run's are not held in memory)."""

    def __init__(
        self,
        record: RunRecord,
        results: list[CaseResult] | None = None,
        scores: list[Score] | None = None,
        run_file: Path | None = None,
        cases: list[Case] | None = None,
        store: str | None = None,
    ) -> None:
        self.record = record
        self.run_file = run_file
        self.store = store
        # the stages after scoring (runner.run): the baseline comparison, the verdict of the
        # gate and baseline, the Markdown report, the traces and how many cases they hold
        self.comparison: Comparison | None = None
        self.verdict: GateVerdict | None = None
        self.report_file: Path | None = None
        self.trace_files: dict[Path, int] = {}
        self.traced_cases = 0
        self._results, self._scores, self._cases = results, scores, cases

    def _open(self) -> RunStore:
        if self.store is None or self.store == ":memory:":
            raise RagmeterError(f"run {self.record.id}: its store is gone (an in-memory store)")
        return RunStore(self.store, create=False)

    def _read(self, read: Callable[[RunStore], _T]) -> _T:
        store = self._open()
        try:
            return read(store)
        finally:
            store.close()

    @property
    def results(self) -> list[CaseResult]:
        if self._results is None:
            self._results = self._read(lambda store: store.get_results(self.record.id))
        return self._results

    @property
    def scores(self) -> list[Score]:
        if self._scores is None:
            self._scores = self._read(lambda store: store.get_scores(self.record.id))
        return self._scores

    @property
    def cases(self) -> list[Case]:
        """The run's cases (for the failed-case traces of --save-trace)."""
        if self._cases is None:
            self._cases = self._read(lambda store: store.get_cases(self.record.id))
        return self._cases

    def batches(self) -> Iterator[tuple[list[Case], list[CaseResult], list[Score]]]:
        """The run's cases with their answers and scores, a batch at a time (from the store,
        unless they are already held)."""
        if self._cases is not None and self._results is not None and self._scores is not None:
            yield self._cases, self._results, self._scores
            return
        store = self._open()
        try:
            yield from store.scored_batches(self.record.id)
        finally:
            store.close()

    def load(self, store: RunStore) -> RunOutcome:
        """Read the cases, answers and scores now, from ``store``."""
        run_id = self.record.id
        self._cases, self._results = store.get_cases(run_id), store.get_results(run_id)
        self._scores = store.get_scores(run_id)
        return self

    def __repr__(self) -> str:
        # short on purpose: asyncio may format the finished task's result in messages
        return f"RunOutcome(id={self.record.id!r})"


def run_file_path(record: RunRecord, config: EvalConfig) -> Path:
    """Where ``record``'s run file goes (``runfile.run_file_path``, the one naming rule)."""
    return runfile.run_file_path(config.output_dir, record.id, record.created_at, config.output)


async def store_index_stats(
    target: Target, store: RunStore, record: RunRecord, timeout_s: float
) -> None:
    """Fetch the target's index statistics and store them with the run (a target without an
    ``index_stats`` method stores nothing)."""
    stats = await fetch_index_stats(target, timeout_s)
    if stats is not None:
        record.index_stats = IndexStatsRecord.model_validate({**stats, "fetched_at": now_iso()})
        store.save_index_stats(record.id, record.index_stats)


async def run_evaluation_async(
    config: EvalConfig,
    *,
    cases: list[Case] | None = None,
    target: Target | None = None,
    resume: str | None = None,
    on_progress: ProgressHook | None = None,
    on_start: Callable[[RunRecord, int], None] | None = None,
    on_stored: Callable[[int], None] | None = None,
) -> RunOutcome:
    """Check everything that can be checked, ask the pending cases, score and store the run.
    ``on_stored`` hears how many cases are stored, batch by batch, while a new run's cases
    are read (a large dataset takes minutes); ``on_start`` the run and its pending count.

    Nothing is asked before the names, options, cases, store and judges have been checked; an
    interruption (Ctrl-C, SIGTERM, cancellation) at any stage leaves the run ``interrupted``
    with every finished answer stored, ready for ``--resume``. Cases, answers and scores go
    through in batches (``store.streams``), so memory does not grow with the run.
    """
    record: RunRecord | None = None
    preflight.check_scoring_config(config)
    preflight.check_names(config)
    if resume is None:
        config = for_perspectives(config)
    preflight.check_options(config)
    preflight.check_goals(config)
    preflight.check_headers(config)
    run_id = new_run_id()
    summary = CaseSummary()
    named = target is not None or preflight.target_was_named(config)
    checked = False
    whole: list[Case] | None = None  # a new run's cases when they are one batch, in memory
    if resume is None:
        # a dataset of one batch is read and checked whole before anything is written
        batches = case_batches(config, cases)
        first = next(batches, [])
        second = next(batches, None)
        if second is None:
            config = check_new_cases(config, CaseSummary.of(first), named)
            checked = True
            whole = first
        batches = chain([first], [second] if second is not None else [], batches)
    store = RunStore(config.store)
    spawned = None  # a scoring process importing ragmeter while the cases are stored
    try:
        asks_here = config.executor == "local"
        if (
            resume is None
            and second is None
            and scores_while_asking(config, asks_here, len(first), len(first))
        ):
            spawned = ScoringProcess.spawn()
        if resume is None:
            summary = store_new_cases(store, run_id, batches, on_stored)
            if not checked:
                config = check_new_cases(config, summary, named)
        else:
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
                    config, sorted(summary.datasets), summary.count, run_id=run_id, **extras
                )
                store.insert_run(record, summary.count)
            stop = threading.Event()
            with store.lock_run(record.id):
                if resume is not None and store.get_run(record.id).status == "completed":
                    # finished by the process that held the lock while this one waited
                    raise InputError(f"run {record.id} is already completed; nothing to resume")
                pending = store.count_pending(record.id)
                if on_start is not None:
                    on_start(record, pending)
                stage = "asking"
                path = run_file_path(record, config)
                writer = RunFileWriter(path)
                scoring = None
                scored_elsewhere = False  # by the scoring process, run file included
                local = isinstance(executor, LocalExecutor)
                if scores_while_asking(config, local, pending, record.question_count):
                    scoring = ScoringProcess.start(config, record.id, path, spawned)
                    spawned = None
                try:
                    if record.index_stats is None:  # once per run (a resumed run has them)
                        await store_index_stats(target, store, record, config.case_timeout_s)
                    if scoring is None:
                        await ask_pending(executor, target, store, record.id, pending, on_progress)
                    else:
                        await ask_while_scoring(
                            config, target, store, record.id, pending, on_progress, whole
                        )
                    if owns_target:
                        await target.aclose()
                        owns_target = False
                    stage = "scoring"
                    if scoring is not None and await scoring.finish():
                        final = store.get_run(record.id)
                        scored_elsewhere = True
                    elif config.store == ":memory:":  # one connection holds the whole store
                        final = score_run(
                            store, record.id, config, stop, executor.scorer(), writer.add
                        )
                    else:
                        final = await in_daemon_thread(
                            _score_in_thread, config, record.id, stop, executor.scorer(), writer.add
                        )
                    scoring = None
                except (asyncio.CancelledError, KeyboardInterrupt) as exc:
                    writer.close()
                    stop.set()
                    if scoring is not None and isinstance(exc, asyncio.CancelledError):
                        await in_daemon_thread(scoring.stop)  # a second Ctrl-C is heard meanwhile
                    elif scoring is not None:
                        scoring.stop()
                    store.mark_interrupted(record.id)
                    raise RunInterruptedError(record.id, config.store, stage) from exc
                except BaseException:
                    writer.close()
                    if scoring is not None:
                        scoring.stop()
                    raise
        finally:
            if owns_target:  # still open: the run stopped while asking
                getattr(target, "stop_asking", lambda: None)()
                await target.aclose()
            executor.close()
        if scored_elsewhere:
            writer.close()
            run_file = path
        else:
            run_file = writer.finish(final)
        outcome = RunOutcome(final, run_file=run_file, store=config.store)
        return outcome.load(store) if config.store == ":memory:" else outcome
    finally:
        if spawned is not None:  # not needed after all
            spawned.cancel()
        if resume is None:  # a no-op once the run row exists
            with suppress(StoreError):  # never in place of the error that stopped the run
                store.delete_orphan_cases(run_id)  # refused before the run was created
        store.close()


def check_new_cases(config: EvalConfig, summary: CaseSummary, target_named: bool) -> EvalConfig:
    """Refuse a run without cases or without a system to ask; the config with the corpus its
    cases carry (``preflight.with_carried_corpus``)."""
    preflight.check_cases(config, summary, target_named=target_named)
    return preflight.with_carried_corpus(config, summary, target_named=target_named)


async def ask_while_scoring(
    config: EvalConfig,
    target: Target,
    store: RunStore,
    run_id: str,
    pending: int,
    on_progress: ProgressHook | None,
    cases: list[Case] | None = None,
) -> None:
    """``ask_pending`` for a run whose answers a second process scores as they are stored
    (``runner.score_while_asking``): the answers are committed by a thread of their own. ``cases``:
    the run's cases, all pending, when they are at hand (not read back from the store)."""
    answers = AnswerWriter(config.store, run_id)
    try:
        stream: Iterable[Case] = (
            cases
            if cases is not None
            else (case for batch in store.pending_batches(run_id) for case in batch)
        )
        await query_cases(
            target,
            stream,
            answers,
            run_id,
            config.concurrency,
            config.case_timeout_s,
            on_progress,
            total=pending,
        )
    finally:
        answers.close()  # every answer committed before scoring is told asking has ended


async def ask_pending(
    executor: Executor,
    target: Target,
    store: RunStore,
    run_id: str,
    pending: int,
    on_progress: ProgressHook | None,
) -> None:
    """Ask the run's unanswered cases, read from the store a batch at a time: as one stream
    (no worker waits at a batch's end), or ``executor.window`` cases a call (Ray)."""
    if executor.window is None:
        stream = (case for batch in store.pending_batches(run_id) for case in batch)
        await executor.query(target, stream, store, run_id, on_progress, total=pending)
        return
    done = 0

    def progress(finished: int, _: int) -> None:
        if on_progress is not None:
            on_progress(done + finished, pending)

    for batch in store.pending_batches(run_id, executor.window):
        await executor.query(target, batch, store, run_id, progress)
        done += len(batch)

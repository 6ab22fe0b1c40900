"""Where a run's target calls and scoring happen: in this process (``LocalExecutor``, the
default) or on a Ray cluster (``RayExecutor``, ``executor: ray``; the ``ray`` extra).

The driver (the process running ``ragmeter eval``) always owns the run store. With Ray, the
cases go to a pool of worker actors in batches of plain dicts; each actor rebuilds the target
from ``config.target`` and the metrics from the config once, asks or scores its batch, and
sends plain dicts back. The driver stores each batch's answers as it returns, so an
interrupted run resumes exactly as a local one does (only the unanswered cases are asked).

Scoring on Ray: the metrics with a run-wide preparation step (``Metric.prepare``: TF-IDF
redundancy, grounding, semantic and every judged metric) are scored on the driver after their
preparation over the whole run, exactly as locally, so their values do not depend on how the
cases are split; the judge and its cache therefore stay in the driver's store. The other
metrics score one case at a time and are spread over the actors. The driver merges the
scores back into the local order and aggregates them as the local path does, so the
scorecards are identical.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from ragmeter.config import EvalConfig
from ragmeter.errors import InputError, RagmeterError
from ragmeter.metrics import resolve_metrics
from ragmeter.metrics.base import Metric
from ragmeter.models import Case, CaseResult, Score
from ragmeter.redaction import redact_text
from ragmeter.runner.scoring import Scorer, ScoringStoppedError, metric_settings, score_results
from ragmeter.store.sqlite import RunStore
from ragmeter.targets import Target, TargetError, build_target
from ragmeter.text import valid_text

ProgressHook = Callable[[int, int], None]


class AnswerSaver(Protocol):
    """Where answers go as they arrive: the run store, or ``score_while_asking.AnswerWriter``."""

    def save_result(self, run_id: str, result: CaseResult) -> None: ...


RAY_HINT = "pip install 'ragmeter[ray]'"
# cases per Ray task: 10,000 cases are 50 tasks
RAY_BATCH = 200
# cases one query call gives the actors: 64 tasks, so a cluster of up to 64 actors is kept busy
RAY_WINDOW = RAY_BATCH * 64
# tasks queued on each actor, so that one is ready when the previous returns
_IN_FLIGHT_PER_ACTOR = 2


async def ask(target: Target, case: Case, timeout_s: float) -> CaseResult:
    """Ask one case. The case's latency is the response's total: the one the target reported,
    else the time the call took, unless the target does not measure it (``measures_latency =
    False``: a replay, whose call time is a file read), when it is the recorded total or none."""
    measures = getattr(target, "measures_latency", True)
    started = time.perf_counter()

    def took() -> float | None:
        return (time.perf_counter() - started) * 1000.0 if measures else None

    try:
        async with asyncio.timeout(timeout_s):
            response = await target.query(case)
    except TargetError as exc:
        return CaseResult(
            case_id=case.case_id,
            status="error",
            error_type=exc.error_type,
            error_message=valid_text(redact_text(exc.message)),
            attempts=exc.attempts,
            latency_ms=took(),
        )
    except TimeoutError:
        return CaseResult(
            case_id=case.case_id,
            status="error",
            error_type="case_timeout",
            error_message=f"case took longer than {timeout_s}s",
            latency_ms=took(),
        )
    except Exception as exc:
        return CaseResult(
            case_id=case.case_id,
            status="error",
            error_type=f"exception:{type(exc).__name__}",
            error_message=valid_text(redact_text(str(exc))),
            latency_ms=took(),
        )
    elapsed = took()
    if elapsed is not None:
        response.latency_ms.setdefault("total", elapsed)
    return CaseResult(
        case_id=case.case_id,
        status="ok",
        response=response,
        # one latency in every view (scorecard, stats, case pages): the response's total
        latency_ms=response.latency_ms.get("total"),
        attempts=response.attempts,
    )


async def query_cases(
    target: Target,
    cases: Iterable[Case],
    store: AnswerSaver,
    run_id: str,
    concurrency: int,
    timeout_s: float,
    on_progress: ProgressHook | None = None,
    total: int | None = None,
) -> None:
    """Ask every case; each answer is committed as soon as it arrives, so a killed run loses
    only the cases that were in flight. ``cases`` may be a stream (a run's pending batches):
    the workers take the next case as they finish one, so no worker waits at a batch's end.
    ``total`` is the count reported to ``on_progress`` (the list's length by default)."""
    if total is None:
        cases = list(cases)
        total = len(cases)
    pending = iter(cases)
    done = 0

    async def worker() -> None:
        nonlocal done
        for case in pending:  # shared: each case goes to one worker
            result = await ask(target, case, timeout_s)
            store.save_result(run_id, result)
            done += 1
            if on_progress is not None:
                on_progress(done, total)

    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, max(total, 1)))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()


class Executor(Protocol):
    """Asks a run's pending cases and scores its answers. ``window``: how many cases one
    ``query`` call is given (None: every pending case, as one stream)."""

    window: int | None

    async def query(
        self,
        target: Target,
        cases: Iterable[Case],
        store: RunStore,
        run_id: str,
        on_progress: ProgressHook | None = None,
        total: int | None = None,
    ) -> None: ...

    def scorer(self) -> Scorer: ...

    def close(self) -> None: ...


class LocalExecutor:
    """Everything in this process: the target object asks with bounded concurrency, and
    :func:`~ragmeter.runner.scoring.score_results` scores."""

    window: int | None = None

    def __init__(self, config: EvalConfig) -> None:
        self.config = config

    async def query(
        self,
        target: Target,
        cases: Iterable[Case],
        store: RunStore,
        run_id: str,
        on_progress: ProgressHook | None = None,
        total: int | None = None,
    ) -> None:
        await query_cases(
            target,
            cases,
            store,
            run_id,
            self.config.concurrency,
            self.config.case_timeout_s,
            on_progress,
            total,
        )

    def scorer(self) -> Scorer:
        return score_results

    def close(self) -> None:
        return None


def make_executor(config: EvalConfig, *, target_object: bool = False) -> Executor:
    """The executor the config names. Raises :class:`InputError` when Ray is named but not
    installed, or together with a target object (Ray workers build the target from
    ``config.target``)."""
    if config.executor == "local":
        return LocalExecutor(config)
    if target_object:
        raise InputError(
            "the Ray executor builds the target from the config in each worker and cannot "
            "use a target object; give the target in the config (EvalConfig(target=...)) or "
            "use executor='local'"
        )
    return RayExecutor(config)


def _ray() -> Any:
    """The ``ray`` module, imported on first use (typed loosely: ray's API is dynamic)."""
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise InputError(f"--executor ray needs Ray, which is not installed: {RAY_HINT}") from exc


def _worker_metrics(config: EvalConfig, names: list[str]) -> list[Metric]:
    """The metrics ``names`` (none of them judged) rebuilt from the config, in that order."""
    families = [family for family in config.metrics if family != "judged"]
    built = {metric.name: metric for metric in resolve_metrics(families, metric_settings(config))}
    missing = [name for name in names if name not in built]
    if missing:
        raise RagmeterError(f"a Ray worker could not build the metrics {', '.join(missing)}")
    return [built[name] for name in names]


async def _ask_all(
    target: Target, cases: list[Case], concurrency: int, timeout_s: float
) -> list[CaseResult]:
    """Ask ``cases``, ``concurrency`` at a time; the results in case order. (Not a method:
    an actor with a coroutine method would be run by Ray as an asyncio actor.)"""
    limit = asyncio.Semaphore(concurrency)

    async def one(case: Case) -> CaseResult:
        async with limit:
            return await ask(target, case, timeout_s)

    return list(await asyncio.gather(*(one(case) for case in cases)))


ScoreRow = tuple[str, str, float | None, str, str | None, dict[str, Any]]


class RayWorker:
    """One Ray actor: builds the target and the metrics from the config once and keeps its own
    event loop, so the target's connections are reused from batch to batch."""

    def __init__(self, config_data: dict[str, Any]) -> None:
        self.config = EvalConfig.model_validate(config_data)
        self.loop = asyncio.new_event_loop()
        self.target: Target | None = None
        self.metrics: dict[tuple[str, ...], list[Metric]] = {}

    def ask(self, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.target is None:
            self.target = build_target(self.config.target, concurrency=self.config.concurrency)
        batch = [Case.model_validate(case) for case in cases]
        config = self.config
        results = self.loop.run_until_complete(
            _ask_all(self.target, batch, config.concurrency, config.case_timeout_s)
        )
        return [result.model_dump() for result in results]

    def score(
        self, names: list[str], cases: list[dict[str, Any]], results: list[dict[str, Any]]
    ) -> list[ScoreRow]:
        key = tuple(names)
        if key not in self.metrics:
            self.metrics[key] = _worker_metrics(self.config, names)
        scores = score_results(
            [Case.model_validate(case) for case in cases],
            [CaseResult.model_validate(result) for result in results],
            self.metrics[key],
        )
        return [(s.case_id, s.metric, s.value, s.status, s.reason, s.details) for s in scores]

    def close(self) -> None:
        if self.target is not None:
            self.loop.run_until_complete(self.target.aclose())
            self.target = None
        self.loop.close()


class RayExecutor:
    """Target calls and scoring on a Ray cluster (``ray_address``), else on a local Ray
    instance started for the run and shut down after it."""

    window: int | None = RAY_WINDOW

    def __init__(self, config: EvalConfig, batch_size: int = RAY_BATCH) -> None:
        self.config = config
        self.batch_size = batch_size
        self.ray = _ray()
        self.started = False
        self.actors: list[Any] = []
        # tasks were cancelled: the actors are killed without waiting for them to close
        self.interrupted = False
        self._lock = threading.Lock()

    def _pool(self) -> list[Any]:
        """The worker actors (started on first use), one per CPU of the cluster."""
        with self._lock:
            if self.actors:
                return self.actors
            ray = self.ray
            if not ray.is_initialized():
                if self.config.ray_address:
                    ray.init(address=self.config.ray_address, log_to_driver=False)
                else:
                    ray.init(
                        num_cpus=os.cpu_count() or 1,
                        include_dashboard=False,
                        log_to_driver=False,
                        ignore_reinit_error=True,
                    )
                self.started = True
            cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
            actor = ray.remote(num_cpus=1)(RayWorker)
            data = self.config.model_dump(mode="json")
            self.actors = [actor.remote(data) for _ in range(cpus)]
            return self.actors

    async def _dispatch(
        self,
        method: str,
        count: int,
        args_of: Callable[[int], tuple[Any, ...]],
        on_result: Callable[[int, Any], None],
        stop: threading.Event | None = None,
    ) -> None:
        """Run ``count`` tasks on the actors, a few queued on each; ``on_result`` gets each
        task's index and value as it returns. Tasks still running when this stops (an
        interruption, ``stop``) are cancelled."""
        actors = self._pool()
        idle = [actor for _ in range(_IN_FLIGHT_PER_ACTOR) for actor in actors]
        running: dict[asyncio.Future[Any], tuple[Any, Any, int]] = {}
        issued = 0
        try:
            while issued < count or running:
                while idle and issued < count:
                    actor = idle.pop(0)
                    ref = getattr(actor, method).remote(*args_of(issued))
                    running[asyncio.wrap_future(ref.future())] = (actor, ref, issued)
                    issued += 1
                done, _ = await asyncio.wait(
                    running, timeout=0.25, return_when=asyncio.FIRST_COMPLETED
                )
                if stop is not None and stop.is_set():
                    raise ScoringStoppedError(method)
                for future in sorted(done, key=lambda f: running[f][2]):
                    actor, _, index = running.pop(future)
                    idle.append(actor)
                    try:
                        value = future.result()
                    except self.ray.exceptions.RayError as exc:
                        raise RagmeterError(
                            f"a Ray worker failed (is ragmeter installed on every node, and can "
                            f"the workers read the target's files?): {exc}"
                        ) from exc
                    on_result(index, value)
        finally:
            for future, (_, ref, _) in running.items():
                future.cancel()
                self.ray.cancel(ref)
                self.interrupted = True

    async def query(
        self,
        target: Target,
        cases: Iterable[Case],
        store: RunStore,
        run_id: str,
        on_progress: ProgressHook | None = None,
        total: int | None = None,
    ) -> None:
        """Ask ``cases`` on the actors in batches; each batch's answers are stored as it
        returns (``target``, the driver's own, is not used: the actors build theirs)."""
        cases = list(cases)
        size = self.batch_size
        batches = [cases[start : start + size] for start in range(0, len(cases), size)]
        done = 0

        def store_batch(_: int, answers: list[dict[str, Any]]) -> None:
            nonlocal done
            store.save_results(run_id, [CaseResult.model_validate(a) for a in answers])
            done += len(answers)
            if on_progress is not None:
                on_progress(done, len(cases))

        await self._dispatch(
            "ask",
            len(batches),
            lambda index: ([case.model_dump() for case in batches[index]],),
            store_batch,
        )

    def scorer(self) -> Scorer:
        return self.score

    def score(
        self,
        cases: list[Case],
        results: list[CaseResult],
        metrics: list[Metric],
        stop: threading.Event | None = None,
    ) -> list[Score]:
        """Score on the actors the metrics without a run-wide preparation, the others here;
        the scores come back in :func:`score_results`'s order (case by case, metric by
        metric)."""
        remote = [m for m in metrics if m.prepare is None]
        here = [m for m in metrics if m.prepare is not None]
        if not remote or not results:
            return score_results(cases, results, metrics, stop)
        by_id = {case.case_id: case for case in cases}
        names = [m.name for m in remote]
        size = self.batch_size
        batches = [results[start : start + size] for start in range(0, len(results), size)]
        rows: list[list[ScoreRow]] = [[] for _ in batches]

        def args_of(index: int) -> tuple[Any, ...]:
            batch = batches[index]
            return (
                names,
                [by_id[r.case_id].model_dump() for r in batch],
                [r.model_dump() for r in batch],
            )

        spread_out = self._dispatch("score", len(batches), args_of, rows.__setitem__, stop)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(spread_out)
        else:  # scoring inside the run's loop (a ":memory:" store): on a loop of its own
            with ThreadPoolExecutor(max_workers=1) as thread:
                thread.submit(asyncio.run, spread_out).result()
        spread = [Score(*row) for batch_rows in rows for row in batch_rows]  # type: ignore[arg-type]
        local = score_results(cases, results, here, stop) if here else []
        slots = {m.name: (spread, i, len(remote)) for i, m in enumerate(remote)}
        slots.update({m.name: (local, i, len(here)) for i, m in enumerate(here)})
        merged: list[Score] = []
        for position in range(len(results)):
            for metric in metrics:
                source, offset, width = slots[metric.name]
                merged.append(source[position * width + offset])
        return merged

    def close(self) -> None:
        """Stop the actors, and Ray itself when this executor started it."""
        ray = self.ray
        if self.actors:
            if not self.interrupted:  # close the targets' connections (a gone worker: none)
                with contextlib.suppress(Exception):
                    ray.get([actor.close.remote() for actor in self.actors], timeout=30)
            for actor in self.actors:
                ray.kill(actor)
            self.actors = []
        if self.started:
            ray.shutdown()
            self.started = False

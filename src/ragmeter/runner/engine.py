"""The async run engine: query every case with bounded concurrency, store responses as they
arrive, then score, aggregate and write the run file.

Querying and scoring are separate stages: responses are stored first, so an interrupted run
resumes by asking only the unanswered cases, and a stored run can be re-scored offline.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragmeter import __version__
from ragmeter.config import DEFAULT_STORE, EvalConfig, TargetConfig, config_snapshot
from ragmeter.datasets import load_datasets
from ragmeter.errors import InputError
from ragmeter.metrics import MetricSettings, resolve_metrics, score_case
from ragmeter.metrics.base import Metric
from ragmeter.metrics.performance import apply_prices, performance_summary
from ragmeter.models import Case, CaseResult, RunRecord, Score, Scorecard
from ragmeter.redaction import redact, redact_text
from ragmeter.reports.json_report import write_run_json
from ragmeter.runner import preflight
from ragmeter.runner.background import in_daemon_thread
from ragmeter.scoring.aggregate import aggregate_with_breakdowns
from ragmeter.scoring.breakdowns import check_field
from ragmeter.scoring.targets import check_targets, parse_targets
from ragmeter.scoring.weighted import weighted_score
from ragmeter.store.sqlite import RunStore
from ragmeter.targets import Target, TargetError, build_target

ProgressHook = Callable[[int, int], None]


class RunInterruptedError(RuntimeError):
    """A run stopped by the user (Ctrl-C, SIGTERM) or cancelled: what was done is stored and
    the run is marked ``interrupted``."""

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

    def __repr__(self) -> str:
        # short on purpose: asyncio may format the finished task's result in messages
        return f"RunOutcome(id={self.record.id!r}, results={len(self.results)})"


def new_run_record(
    config: EvalConfig,
    datasets: list[str],
    question_count: int,
    name: str | None = None,
    **snapshot_extras: Any,
) -> RunRecord:
    """A new run's record: a fresh id and the redacted config snapshot with ``snapshot_extras``
    (target info, where a rescore came from)."""
    run_id = uuid.uuid4().hex[:12]
    snapshot = {
        **config_snapshot(config),
        **redact(snapshot_extras),
        "ragmeter_version": __version__,
    }
    return RunRecord(
        id=run_id,
        name=name or config.name or f"eval-{run_id[:8]}",
        created_at=now_iso(),
        config=snapshot,
        datasets=datasets,
        question_count=question_count,
    )


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def sample_cases(cases: list[Case], samples: int | None, seed: int) -> list[Case]:
    """A seeded random subset of ``samples`` cases, kept in dataset order."""
    if samples is None or samples >= len(cases):
        return cases
    chosen = set(random.Random(seed).sample(range(len(cases)), samples))
    return [case for i, case in enumerate(cases) if i in chosen]


def metric_settings(config: EvalConfig) -> MetricSettings:
    return MetricSettings(
        ks=tuple(config.ks),
        relevance_level=config.relevance_level,
        ndcg_gain=config.ndcg_gain,
        require_snippet=config.require_snippet,
        abstention_phrases=tuple(config.abstention_phrases),
        embedder=config.embedder,
        grounding_model=config.grounding_model,
    )


async def ask(target: Target, case: Case, timeout_s: float) -> CaseResult:
    started = time.perf_counter()
    try:
        async with asyncio.timeout(timeout_s):
            response = await target.query(case)
    except TargetError as exc:
        return CaseResult(
            case_id=case.case_id,
            status="error",
            error_type=exc.error_type,
            error_message=redact_text(exc.message),
            attempts=exc.attempts,
            latency_ms=(time.perf_counter() - started) * 1000.0,
        )
    except TimeoutError:
        return CaseResult(
            case_id=case.case_id,
            status="error",
            error_type="case_timeout",
            error_message=f"case took longer than {timeout_s}s",
            latency_ms=(time.perf_counter() - started) * 1000.0,
        )
    except Exception as exc:
        return CaseResult(
            case_id=case.case_id,
            status="error",
            error_type=f"exception:{type(exc).__name__}",
            error_message=redact_text(str(exc)),
            latency_ms=(time.perf_counter() - started) * 1000.0,
        )
    elapsed = (time.perf_counter() - started) * 1000.0
    response.latency_ms.setdefault("total", elapsed)
    return CaseResult(
        case_id=case.case_id,
        status="ok",
        response=response,
        latency_ms=elapsed,
        attempts=response.attempts,
    )


async def query_cases(
    target: Target,
    cases: list[Case],
    store: RunStore,
    run_id: str,
    concurrency: int,
    timeout_s: float,
    on_progress: ProgressHook | None = None,
) -> None:
    """Ask every case; each answer is committed as soon as it arrives, so a killed run loses
    only the cases that were in flight."""
    queue: asyncio.Queue[Case] = asyncio.Queue()
    for case in cases:
        queue.put_nowait(case)
    done = 0

    async def worker() -> None:
        nonlocal done
        while True:
            try:
                case = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            result = await ask(target, case, timeout_s)
            store.save_result(run_id, result)
            done += 1
            if on_progress is not None:
                on_progress(done, len(cases))

    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, max(len(cases), 1)))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()


class ScoringStoppedError(Exception):
    """Scoring was asked to stop (the run was interrupted); nothing of it is stored."""


def score_results(
    cases: list[Case],
    results: list[CaseResult],
    metrics: list[Metric],
    stop: threading.Event | None = None,
) -> list[Score]:
    by_id = {case.case_id: case for case in cases}
    answered = [(by_id[r.case_id], r.response) for r in results if r.response is not None]
    prepare_errors: dict[int, str] = {}
    for metric in metrics:
        prepare = metric.prepare
        if prepare is not None and id(prepare) not in prepare_errors:
            try:
                prepare(answered)
                prepare_errors[id(prepare)] = ""
            except Exception as exc:  # every case of these metrics is then marked failed
                prepare_errors[id(prepare)] = (
                    f"batch preparation failed: {type(exc).__name__}: {exc}"
                )
    scores: list[Score] = []
    redacted: dict[str, str] = {}  # most reasons repeat ("case has no gold passages")
    for result in results:
        if stop is not None and stop.is_set():
            raise ScoringStoppedError(result.case_id)
        case = by_id[result.case_id]
        for metric in metrics:
            failure = prepare_errors.get(id(metric.prepare)) if metric.prepare else None
            if failure:
                scores.append(Score(case.case_id, metric.name, None, "failed", failure))
            else:
                score = score_case(metric, case, result)
                if score.reason:
                    reason = score.reason
                    if reason not in redacted:
                        redacted[reason] = redact_text(reason)
                    score.reason = redacted[reason]
                scores.append(score)
    return scores


def _record_config(stored: dict[str, Any]) -> EvalConfig:
    fields = {k: v for k, v in stored.items() if k in EvalConfig.model_fields}
    return EvalConfig.model_validate(fields)


def check_scoring_config(config: EvalConfig) -> None:
    """Fail before any question is asked if breakdowns, targets or weights are malformed."""
    for field in config.breakdowns:
        check_field(field)
    parse_targets(config.targets)
    weighted_score(
        Scorecard(metrics=[], by_group={}),
        config.weights,
        config.objectives,
        config.reference_cost_usd,
        config.reference_latency_ms,
    )


def configure_judge(config: EvalConfig, run_id: str, judge: str | None = None) -> None:
    """Point the judged metrics at the run's judge; its calls are recorded in the run store."""
    from ragmeter.judges import configure

    configure(
        judge or config.judge,
        store=config.store,
        max_cost=config.max_judge_cost,
        run_id=run_id,
        prices=config.price_table(),
        api_key_env=config.judge_api_key_env,
        timeout_s=config.judge_timeout_s,
        max_retries=config.judge_max_retries,
    )


def judge_spot_check(
    config: EvalConfig,
    run_id: str,
    cases: list[Case],
    results: list[CaseResult],
    scores: list[Score],
) -> dict[str, Any]:
    """Re-judge ``spot_check`` random cases with the second judge; disagreement and kappa."""
    from ragmeter.judges.reliability import spot_check

    judged = {m.name: m for m in resolve_metrics(["judged"], metric_settings(config))}
    second = config.second_judge or ""

    def rescore_with_second(
        subset: list[Case], subset_results: list[CaseResult]
    ) -> tuple[list[Score], dict[str, str]]:
        configure_judge(config, run_id, judge=second)
        try:
            metrics = resolve_metrics(["judged"], metric_settings(config))
            return score_results(subset, subset_results, metrics), {
                m.name: "0-5" if m.unit == "0-5" else "0-1" for m in metrics
            }
        finally:
            configure_judge(config, run_id)

    first = [s for s in scores if s.metric in judged]
    return spot_check(
        cases, results, first, config.spot_check, config.seed, second, rescore_with_second
    )


def score_run(
    store: RunStore, run_id: str, config: EvalConfig, stop: threading.Event | None = None
) -> tuple[RunRecord, list[CaseResult], list[Score]]:
    """Score the stored responses of a run; store the scores, the scorecard, its breakdowns,
    the weighted score, the targets table and the performance summary. When ``stop`` is set
    (the run was interrupted) scoring ends at the next case and nothing is written."""
    cases = store.get_cases(run_id)
    results = store.get_results(run_id)
    families = list(config.metrics)
    if config.judge:
        configure_judge(config, run_id)
        families += [] if "judged" in families else ["judged"]
    metrics = resolve_metrics(families, metric_settings(config))
    priced = apply_prices(results, config.prices)
    scores = score_results(cases, results, metrics, stop)
    scorecard, breakdowns = aggregate_with_breakdowns(
        scores, metrics, cases, config.breakdowns, config.bootstrap_resamples, config.seed
    )
    extras = RunRecord(
        id=run_id,
        name="",
        created_at="",
        config={},
        datasets=[],
        breakdowns=breakdowns,
        weighted_score=weighted_score(
            scorecard,
            config.weights,
            config.objectives,
            config.reference_cost_usd,
            config.reference_latency_ms,
        ),
        targets=check_targets(scorecard, parse_targets(config.targets)),
        performance=performance_summary(results, priced),
    )
    if config.judge and config.spot_check and config.second_judge:
        extras.judge_reliability = judge_spot_check(config, run_id, cases, results, scores)
    if config.judge:
        extras.performance["cost"]["judge"] = store.judge_cost(run_id)
    if stop is not None and stop.is_set():
        raise ScoringStoppedError(run_id)
    store.replace_scores(run_id, scores)
    store.finish_run(run_id, scorecard, now_iso(), sum(r.status != "ok" for r in results), extras)
    return store.get_run(run_id), results, scores


def _score_in_thread(
    config: EvalConfig, run_id: str, stop: threading.Event
) -> tuple[RunRecord, list[CaseResult], list[Score]]:
    """Scoring on its own connection, off the event loop, so an interruption is handled at
    once instead of after the last case is scored."""
    store = RunStore(config.store)
    try:
        return score_run(store, run_id, config, stop)
    finally:
        store.close()


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
    preflight.check_options(config)
    preflight.check_targets(config)
    preflight.check_headers(config)
    if resume is None:
        # datasets are read and validated before anything is written
        run_cases = sample_cases(
            cases
            if cases is not None
            else load_datasets(config.datasets, config.field_map or None),
            config.samples,
            config.seed,
        )
        preflight.check_cases(
            config, run_cases, target_named=target is not None or preflight.target_was_named(config)
        )
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
            given = {"store", "progress"} | (config.model_fields_set & {"output_dir"})
            config = _record_config(record.config).model_copy(
                update={name: getattr(config, name) for name in given}
            )
            run_cases = store.get_cases(record.id)
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
                    await query_cases(
                        target,
                        pending,
                        store,
                        record.id,
                        config.concurrency,
                        config.case_timeout_s,
                        on_progress,
                    )
                    if owns_target:
                        await target.aclose()
                        owns_target = False
                    stage = "scoring"
                    if config.store == ":memory:":  # one connection holds the whole store
                        final, results, scores = score_run(store, record.id, config, stop)
                    else:
                        final, results, scores = await in_daemon_thread(
                            _score_in_thread, config, record.id, stop
                        )
                except (asyncio.CancelledError, KeyboardInterrupt) as exc:
                    stop.set()
                    store.mark_interrupted(record.id)
                    raise RunInterruptedError(record.id, config.store, stage) from exc
        finally:
            if owns_target:
                await target.aclose()
        run_file = write_run_json(Path(config.output_dir), final, results, scores)
        return RunOutcome(final, results, scores, run_file)
    finally:
        store.close()


def evaluate(
    config: EvalConfig | None = None,
    *,
    cases: list[Case] | None = None,
    target: Target | None = None,
    resume: str | None = None,
    on_progress: ProgressHook | None = None,
) -> RunOutcome:
    """Run an evaluation end to end (the synchronous entry point of the public API)."""
    return asyncio.run(
        run_evaluation_async(
            config or EvalConfig(),
            cases=cases,
            target=target,
            resume=resume,
            on_progress=on_progress,
        )
    )


def target_config_from(config: EvalConfig, **changes: Any) -> TargetConfig:
    return config.target.model_copy(update=changes)

"""Scoring a run's stored responses: every metric over every case, the aggregates, the
weighted score, goals and performance, the judge's spot check.

The run's judge is an object passed down: :func:`judge_for` makes its settings from the config
and :func:`metric_settings` puts them in the scoring context the metric families are built
from. The spot check builds a second context with the second judge; the first is untouched.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ragmeter.config import EvalConfig
from ragmeter.metrics import MetricSettings, resolve_metrics, score_case
from ragmeter.metrics.base import Metric, score_response
from ragmeter.metrics.performance import apply_prices
from ragmeter.metrics.performance_tally import PerformanceTally
from ragmeter.models import Case, CaseResult, Response, Score
from ragmeter.redaction import redact_text
from ragmeter.run_record import JudgeReliability, RunAggregates, RunRecord, Scorecard
from ragmeter.runner.records import now_iso
from ragmeter.runner.selection import goals_for, perspective_groups, run_families
from ragmeter.scoring.aggregate import aggregate_columns
from ragmeter.scoring.columns import ScoreColumns
from ragmeter.scoring.goals import check_goals, parse_goals
from ragmeter.scoring.weighted import weighted_score
from ragmeter.store import streams
from ragmeter.store.sqlite import RunStore

if TYPE_CHECKING:  # imported when a run has a judge: the scoring process starts without HTTP
    from ragmeter.judges import JudgeSettings


def judge_for(
    config: EvalConfig, run_id: str | None, spec: str | None = None
) -> JudgeSettings | None:
    """The settings of the run's judge (``spec``, else the config's ``judge``); None without
    one. Its calls are recorded in the run store under ``run_id``."""
    spec = spec or config.judge
    if not spec:
        return None
    from ragmeter.judges import judge_settings

    return judge_settings(
        spec,
        store=config.store,
        max_cost=config.max_judge_cost,
        run_id=run_id,
        prices=config.price_table(),
        api_key_env=config.judge_api_key_env,
        timeout_s=config.judge_timeout_s,
        max_retries=config.judge_max_retries,
        tasks=tuple(config.judge_tasks) if config.judge_tasks else None,
    )


def metric_settings(config: EvalConfig, judge: JudgeSettings | None = None) -> MetricSettings:
    """The scoring context of a run: its metric parameters and its judge (if any)."""
    return MetricSettings.for_run(config, judge)


# how a run's cases are scored: score_results here, or spread over workers (runner.executors)
Scorer = Callable[[list[Case], list[CaseResult], list[Metric], threading.Event | None], list[Score]]


# what receives each scored batch's answers and scores (the run file's writer)
ScoreSink = Callable[[list[CaseResult], list[Score]], None]

_gc_lock = threading.Lock()
_gc_pauses = 0  # scoring threads inside paused_gc
_gc_thresholds = (0, 0, 0)
# full collections wait until this many collections of the middle generation have run
_FULL_COLLECTION_PAUSED = 1 << 30


@contextmanager
def paused_gc() -> Iterator[None]:
    """No full (oldest-generation) garbage collection while a run is scored and stored.

    Scoring makes a few hundred thousand long-lived objects (a Score per case and metric, its
    details) and no cyclic garbage of its own; each full collection walks all of them again
    (about a third of the scoring time of a large run). The young generations are still
    collected, so short-lived cycles (a judge's HTTP errors) are freed as usual, and reference
    counting frees everything else. Nested and concurrent pauses (two runs scoring at once)
    are counted: the thresholds come back when the last one ends."""
    global _gc_pauses, _gc_thresholds
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_thresholds = gc.get_threshold()
            young, middle, _ = _gc_thresholds
            gc.set_threshold(young, middle, _FULL_COLLECTION_PAUSED)
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0:
                gc.set_threshold(*_gc_thresholds)


class ScoringStoppedError(Exception):
    """Scoring was asked to stop (the run was interrupted); nothing of it is stored."""


@paused_gc()
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
    # (metric, its prepare's failure or "", whether it scores a response with ``compute``)
    plans = [
        (
            metric,
            prepare_errors.get(id(metric.prepare), "") if metric.prepare else "",
            metric.on_result is None,
        )
        for metric in metrics
    ]
    scores: list[Score] = []
    append = scores.append
    redacted: dict[str, str] = {}  # most reasons repeat ("case has no gold passages")
    for result in results:
        if stop is not None and stop.is_set():
            raise ScoringStoppedError(result.case_id)
        case = by_id[result.case_id]
        response = result.response if result.status == "ok" else None
        checked: dict[str, str] = {}  # the case's input checks, shared by its metrics
        for metric, failure, computed in plans:
            if failure:
                append(Score(case.case_id, metric.name, None, "failed", failure))
                continue
            if computed and response is not None:
                score = score_response(metric, case, response, checked)
            else:
                score = score_case(metric, case, result)
            reason = score.reason
            if reason:
                cleaned = redacted.get(reason)
                if cleaned is None:
                    cleaned = redacted[reason] = redact_text(reason)
                score.reason = cleaned
            append(score)
    return scores


def judge_spot_check(
    config: EvalConfig,
    run_id: str,
    cases: list[Case],
    results: list[CaseResult],
    scores: list[Score],
) -> dict[str, Any]:
    """Re-judge ``spot_check`` random cases with the second judge (else the run's own) and the
    spot check's prompt versions; disagreement and kappa. With prompt versions named, only the
    tasks that ask them are re-judged (the others would ask the same prompts again). Counts
    (``sum`` metrics) repeat their rates' verdicts and are left out."""
    from ragmeter.judges.prompt_swaps import prompt_swaps, swapped_tasks
    from ragmeter.judges.reliability import spot_check

    def verdicts(context: MetricSettings) -> list[Metric]:
        return [m for m in resolve_metrics(["judged"], context) if m.aggregation != "sum"]

    judged = {m.name for m in verdicts(metric_settings(config))}
    second = config.second_judge or config.judge or ""
    settings = judge_for(config, run_id, spec=second)
    tasks = config.judge_tasks or None
    swaps = prompt_swaps(config.spot_check_prompts, tasks) if config.spot_check_prompts else {}
    if settings is not None and swaps:
        settings = replace(
            settings, prompts=tuple(swaps.items()), tasks=tuple(swapped_tasks(swaps, tasks))
        )
    context = metric_settings(config, settings)

    def rescore_with_second(
        subset: list[Case], subset_results: list[CaseResult]
    ) -> tuple[list[Score], dict[str, str]]:
        metrics = verdicts(context)
        return score_results(subset, subset_results, metrics), {
            m.name: "0-5" if m.unit == "0-5" else "0-1" for m in metrics
        }

    first = [s for s in scores if s.metric in judged]
    return spot_check(
        cases,
        results,
        first,
        config.spot_check,
        config.seed,
        second,
        rescore_with_second,
        first_judge=config.judge,
        prompts=swaps,
    )


def run_metrics(config: EvalConfig, run_id: str) -> list[Metric]:
    """The metrics a run scores: its families (and ``judged`` with a judge), within its
    perspectives."""
    families = run_families(config)
    metrics = resolve_metrics(families, metric_settings(config, judge_for(config, run_id)))
    if config.perspectives is not None:
        wanted = perspective_groups(config.perspectives)
        metrics = [metric for metric in metrics if metric.group in wanted]
    return metrics


def _answered_pairs(
    store: RunStore, run_id: str, batch: int
) -> Iterator[list[tuple[Case, Response]]]:
    for cases, results in store.answered_batches(run_id, batch):
        by_id = {case.case_id: case for case in cases}
        yield [(by_id[r.case_id], r.response) for r in results if r.response is not None]


def prepare_whole_run(store: RunStore, run_id: str, metrics: list[Metric], batch: int) -> None:
    """Give each run-wide statistic (``Metric.prepare_run``) the run's answers, batch by batch,
    before any batch is scored."""
    done: set[int] = set()
    for metric in metrics:
        prepare = metric.prepare_run
        if prepare is not None and id(prepare) not in done:
            done.add(id(prepare))
            prepare(_answered_pairs(store, run_id, batch))


@contextmanager
def _cleared_on_failure(store: RunStore, run_id: str) -> Iterator[None]:
    """A scoring pass that stops half way leaves no scores behind (best effort: a killed
    process may leave some, which ``get_scores`` does not give for an unfinished run)."""
    try:
        yield
    except BaseException:
        with suppress(Exception):
            store.clear_scores(run_id)
        raise


@paused_gc()
def score_run(
    store: RunStore,
    run_id: str,
    config: EvalConfig,
    stop: threading.Event | None = None,
    scorer: Scorer = score_results,
    sink: ScoreSink | None = None,
    batch: int | None = None,
) -> RunRecord:
    """Score the stored answers of a run ``batch`` cases at a time, storing each batch's scores
    as it is done; then the scorecard, its breakdowns, the weighted score, the goals table
    and the performance summary, from the scores' columns (``scoring.columns``), never from
    every ``Score`` at once; ``sink`` (the run file's writer) gets each batch's answers and
    scores. When ``stop`` is set (the run was interrupted) scoring ends at the
    next case and the run is not finished (its stored scores are replaced when it resumes)."""
    batch = batch or streams.BATCH_CASES
    metrics = run_metrics(config, run_id)
    store.clear_scores(run_id)
    if store.counts(run_id)["answered"] > batch:  # in one batch, prepare sees the whole run
        prepare_whole_run(store, run_id, metrics, batch)
    tally = PerformanceTally()
    with ScoreColumns(metrics, config.breakdowns) as columns, _cleared_on_failure(store, run_id):
        for cases, results in store.answered_batches(run_id, batch):
            if columns.cases:  # the previous batch's cyclic garbage (paused_gc defers it)
                gc.collect()
            priced = apply_prices(results, config.prices)
            scores = scorer(cases, results, metrics, stop)
            store.add_scores(run_id, scores)
            columns.add(cases, scores)
            if sink is not None:
                sink(results, scores)
            tally.add(results, priced, cases)
            del scores, results, cases
        return finish_scoring(store, run_id, config, metrics, columns, tally, stop)


def note_skip_reasons(store: RunStore, run_id: str, scorecard: Scorecard) -> None:
    """Give each metric skipped on every case (or every case that did not fail) its reason
    (``skip_reason``), which the scorecard shows (``reports/failures.py``)."""
    everywhere = [m for m in scorecard.metrics if m.n_skipped and not m.n_scored]
    if not everywhere:
        return
    reasons = store.score_reasons(run_id, [m.name for m in everywhere])
    for summary in everywhere:
        summary.skip_reason = reasons.get(summary.name)


def note_fail_reasons(store: RunStore, run_id: str, scorecard: Scorecard) -> None:
    """Give each metric that failed on some cases and was scored on none the reason of its
    failures (``fail_reason``: e.g. retrieved ids that never match the gold ids), which the
    scorecard shows."""
    unmeasured = [m for m in scorecard.metrics if m.n_failed and not m.n_scored]
    if not unmeasured:
        return
    reasons = store.score_reasons(run_id, [m.name for m in unmeasured], status="failed")
    for summary in unmeasured:
        summary.fail_reason = reasons.get(summary.name)


def finish_scoring(
    store: RunStore,
    run_id: str,
    config: EvalConfig,
    metrics: list[Metric],
    columns: ScoreColumns,
    tally: PerformanceTally,
    stop: threading.Event | None,
) -> RunRecord:
    """The scorecard and breakdowns from the run's score ``columns``, the weighted score, the
    goals table and the performance summary (``tally``), the judge's spot check; the run
    marked completed with them (unless ``stop`` is set)."""
    scorecard, breakdowns = aggregate_columns(
        columns, metrics, config.bootstrap_resamples, config.seed, config.failed_as
    )
    note_skip_reasons(store, run_id, scorecard)
    note_fail_reasons(store, run_id, scorecard)
    aggregates = RunAggregates(
        breakdowns=breakdowns,
        weighted_score=weighted_score(
            scorecard,
            config.weights,
            config.objectives,
            config.reference_cost_usd,
            config.reference_latency_ms,
            config.coverage_floor,
        ),
        goals=check_goals(
            scorecard,
            goals_for(
                parse_goals(config.goals),
                config.perspectives,
                {metric.name: metric.group for metric in metrics},
            ),
            config.coverage_floor,
        ),
        performance=tally.summary(),
        metric_declarations=[metric.declaration() for metric in metrics],
    )
    if config.judge and config.spot_check and (config.second_judge or config.spot_check_prompts):
        aggregates.judge_reliability = JudgeReliability.model_validate(
            judge_spot_check(
                config,
                run_id,
                store.get_cases(run_id),
                store.get_results(run_id),
                store.get_scores(run_id, unfinished=True),
            )
        )
    if config.judge and aggregates.performance.cost is not None:
        aggregates.performance.cost.judge = store.judge_cost(run_id)
    retrieval = [metric.name for metric in metrics if metric.group == "retrieval"][:1]
    matching = store.first_detail(run_id, retrieval, "id_space") if retrieval else None
    if matching:  # the id-space check matched by document: the scorecard says so
        aggregates.performance.retrieval_matching = matching
    if stop is not None and stop.is_set():
        raise ScoringStoppedError(run_id)
    errors = sum(tally.errors.values())
    store.finish_run(run_id, scorecard, now_iso(), errors, aggregates)
    return store.get_run(run_id)


def _score_in_thread(
    config: EvalConfig,
    run_id: str,
    stop: threading.Event,
    scorer: Scorer = score_results,
    sink: ScoreSink | None = None,
) -> RunRecord:
    """Scoring on its own connection, off the event loop, so an interruption is handled at
    once instead of after the last case is scored."""
    store = RunStore(config.store)
    try:
        return score_run(store, run_id, config, stop, scorer, sink)
    finally:
        store.close()

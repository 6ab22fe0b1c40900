"""The ``ragmeter`` command line: thin commands over the public API."""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.text import Text

from ragmeter import __version__
from ragmeter.config import DEFAULT_STORE, ConfigError, EvalConfig, load_config
from ragmeter.datasets import DatasetError, validate_dataset
from ragmeter.errors import (
    EXIT_BAD_INPUT,
    EXIT_GATE,
    EXIT_INTERRUPTED,
    EXIT_TARGET_DOWN,
    EXIT_TERMINATED,
    RagmeterError,
    StoreError,
)
from ragmeter.models import Case, RunRecord
from ragmeter.redaction import redact_text
from ragmeter.registry import UnknownNameError
from ragmeter.reports.console import print_run
from ragmeter.reports.terminal import inert, make_console
from ragmeter.store.sqlite import RunNotFoundError, RunStore
from ragmeter.targets import TargetError, parse_target_spec

console = make_console()
errors = make_console(stderr=True)


def fail(message: object, code: int = EXIT_BAD_INPUT, label: str = "error") -> NoReturn:
    """Print one error (secrets masked, escape sequences and markup inert) and exit."""
    text = Text(f"{label}: ", style="bold red")
    text.append(inert(redact_text(str(message)), markup=False))
    errors.print(text, highlight=False, soft_wrap=True)
    sys.exit(code)


# errors a user can act on: printed as one line with their exit code, never a traceback
_USER_ERRORS = (DatasetError, ConfigError, UnknownNameError, RunNotFoundError, ValueError)


class RagmeterGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RagmeterError as exc:
            fail(exc, exc.exit_code)
        except TargetError as exc:
            fail(f"target not ready ({exc.error_type}): {exc.message}", EXIT_TARGET_DOWN)
        except _USER_ERRORS as exc:
            fail(exc)


def _alpha(value: float) -> float:
    if not 0 < value < 1:
        raise click.BadParameter(f"must be between 0 and 1 (e.g. 0.05), got {value}")
    return value


def _margin(value: float) -> float:
    if not (math.isfinite(value) and value >= 0):
        raise click.BadParameter(f"must be a finite number >= 0 (e.g. 0.02), got {value}")
    return value


alpha_option = click.option(
    "--alpha",
    default=0.05,
    show_default=True,
    callback=lambda ctx, param, value: _alpha(value),
    help="Significance level of the paired tests.",
)
margin_option = click.option(
    "--margin",
    default=0.02,
    show_default=True,
    callback=lambda ctx, param, value: _margin(value),
    help="Smallest worsening that counts as a regression (absolute; relative for ms/USD).",
)
store_option = click.option(
    "--store",
    envvar="RAGMETER_STORE",
    default=DEFAULT_STORE,
    show_default=True,
    help="SQLite run store (environment: RAGMETER_STORE).",
)


def _pairs(values: tuple[str, ...], option: str, separator: str = "=") -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        key, found, rest = value.partition(separator)
        if not found or not key.strip():
            raise click.BadParameter(
                f"expected KEY{separator}VALUE, got {value!r}", param_hint=option
            )
        pairs[key.strip()] = rest.strip()
    return pairs


@click.group(cls=RagmeterGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ragmeter")
def main() -> None:
    """Evaluate retrieval-augmented generation systems."""


max_judge_cost_option = click.option(
    "--max-judge-cost",
    "--max-cost",
    "max_judge_cost",
    type=float,
    help="Stop judging at this many USD (judge cost).",
)


@main.command("eval")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="YAML config file.")
@click.option(
    "--dataset",
    "-d",
    "datasets",
    multiple=True,
    help="Dataset: 'demo', a .jsonl/.yaml/.csv file or a label folder (repeatable).",
)
@click.option(
    "--target",
    "-t",
    "target_spec",
    help="'reference', http(s)://HOST:PORT, 'replay:FILE.jsonl' or 'module:function'.",
)
@click.option(
    "--corpus", type=click.Path(file_okay=False), help="Corpus folder for the reference target."
)
@click.option("--top-k", type=int, help="Chunks to retrieve per question.")
@click.option(
    "--header", "headers", multiple=True, help="HTTP header 'Name: value' (use ${ENV} for secrets)."
)
@click.option(
    "--field-map", "field_map", multiple=True, help="FIELD=SOURCE_PATH for foreign JSONL/CSV."
)
@click.option("--metrics", help="Comma-separated metric families (see 'ragmeter metrics').")
@click.option("--samples", type=int, help="Evaluate a seeded random sample of N cases.")
@click.option("--seed", type=int, help="Seed for sampling and bootstrap intervals.")
@click.option("--concurrency", type=int, help="Cases in flight at once.")
@click.option(
    "--timeout",
    "timeout_s",
    type=float,
    help="Seconds one request to the target may take; a case, retries included, may take "
    "3x that (case_timeout_s).",
)
@click.option("--name", help="Run name.")
@click.option(
    "--store", envvar="RAGMETER_STORE", help=f"SQLite run store (default {DEFAULT_STORE})."
)
@click.option("--output-dir", help="Folder for run JSON files (default .ragmeter/runs).")
@click.option("--resume", help="Finish an interrupted run by its id.")
@click.option(
    "--judge",
    help="LLM judge for the judged metrics: openai:MODEL, anthropic:MODEL, "
    "http://HOST:PORT/v1#MODEL or local:PATH.gguf (keys from environment variables only).",
)
@max_judge_cost_option
@click.option("--spot-check", type=int, help="Re-judge N random cases with --second-judge.")
@click.option(
    "--dry-run",
    is_flag=True,
    help="With --judge: estimate judge calls, tokens and cost for the dataset, ask nothing.",
)
@click.option("--second-judge", help="Judge for the reliability spot check (disagreement, kappa).")
@click.option(
    "--judge-timeout",
    "judge_timeout_s",
    type=float,
    help="Seconds one judge request may take (default 60); a hung judge fails that score.",
)
@click.option(
    "--judge-retries", type=int, help="Retries of a failed judge request (default 1: 2 tries)."
)
@click.option(
    "--judge-api-key-env",
    help="Environment variable holding the judge's API key (for http:// judges; default "
    "RAGMETER_JUDGE_API_KEY when set).",
)
@click.option(
    "--no-health-check",
    is_flag=True,
    help="Do not GET /health before the run (for servers without a health endpoint).",
)
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
@click.option(
    "--breakdown",
    "breakdowns",
    multiple=True,
    help="Break the scorecard down by a case field or metadata.FIELD (repeatable; "
    "default: category, difficulty, answerable).",
)
@click.option(
    "--targets",
    "targets_file",
    type=click.Path(dir_okay=False),
    help="YAML targets ({metric: '> 0.6'} or a list); replaces the default table.",
)
@click.option("--gate", is_flag=True, help="Exit 4 when a target fails (after storing the run).")
@click.option(
    "--baseline",
    help="Run id or run JSON file: check the new run for regressions against it (exit 4).",
)
@margin_option
@alpha_option
def eval_command(
    config_file: str | None,
    datasets: tuple[str, ...],
    target_spec: str | None,
    corpus: str | None,
    top_k: int | None,
    headers: tuple[str, ...],
    field_map: tuple[str, ...],
    metrics: str | None,
    samples: int | None,
    seed: int | None,
    concurrency: int | None,
    timeout_s: float | None,
    name: str | None,
    store: str | None,
    output_dir: str | None,
    resume: str | None,
    no_progress: bool,
    breakdowns: tuple[str, ...],
    targets_file: str | None,
    gate: bool,
    baseline: str | None,
    margin: float,
    alpha: float,
    judge: str | None,
    max_judge_cost: float | None,
    spot_check: int | None,
    second_judge: str | None,
    dry_run: bool,
    judge_timeout_s: float | None,
    judge_retries: int | None,
    judge_api_key_env: str | None,
    no_health_check: bool,
) -> None:
    """Ask every case, score, store the run and print the scorecard.

    With no options: the bundled demo dataset against the built-in reference pipeline, offline.
    """
    overrides: dict[str, Any] = {}
    if judge:
        overrides["judge"] = judge
    if max_judge_cost is not None:
        overrides["max_judge_cost"] = max_judge_cost
    if spot_check is not None:
        overrides["spot_check"] = spot_check
    if second_judge:
        overrides["second_judge"] = second_judge
    for key, option_value in (
        ("judge_timeout_s", judge_timeout_s),
        ("judge_max_retries", judge_retries),
        ("judge_api_key_env", judge_api_key_env),
    ):
        if option_value is not None:
            overrides[key] = option_value
    target: dict[str, Any] = {}
    try:
        if target_spec:
            target.update(parse_target_spec(target_spec))
        if headers:
            target["headers"] = _pairs(headers, "--header", ":")
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--target") from exc
    for key, value in (("corpus", corpus), ("top_k", top_k), ("timeout_s", timeout_s)):
        if value is not None:
            target[key] = value
    if no_health_check:
        target["health_path"] = None
    if target:
        overrides["target"] = target
    for key, value in (
        ("name", name),
        ("samples", samples),
        ("seed", seed),
        ("concurrency", concurrency),
        ("store", store),
        ("output_dir", output_dir),
    ):
        if value is not None:
            overrides[key] = value
    if datasets:
        overrides["datasets"] = list(datasets)
    if field_map:
        overrides["field_map"] = _pairs(field_map, "--field-map")
    if metrics:
        overrides["metrics"] = [m.strip() for m in metrics.split(",") if m.strip()]
    if timeout_s is not None:
        overrides["case_timeout_s"] = max(timeout_s * 3, timeout_s + 1)
    if no_progress:
        overrides["progress"] = False
    if breakdowns:
        overrides["breakdowns"] = list(breakdowns)
    if targets_file:
        overrides["targets"] = _read_targets(targets_file)
    config = load_config(config_file, overrides)
    if dry_run:
        _judge_estimate(config)
        return
    if gate and config.targets is not None and not config.targets:
        fail("--gate with an empty targets table checks nothing; name at least one target")
    if baseline and not Path(baseline).is_file():
        try:
            baseline_store = RunStore(config.store, create=False)
        except StoreError as exc:
            fail(f"--baseline {baseline}: {exc}")
        try:
            baseline_store.get_run(baseline)  # a missing baseline is found before any question
        except RunNotFoundError as exc:
            fail(f"--baseline: {exc} ({config.store}); give a run id or a run JSON file")
        finally:
            baseline_store.close()
    record = _run_eval(config, resume)
    failed = False
    if baseline:
        failed = _check_baseline(config, baseline, record.id, margin, alpha)
    if gate:
        failed = _gate(record) or failed
    if failed:
        sys.exit(EXIT_GATE)


def _gate(record: RunRecord) -> bool:
    """Print why the gate fails; True when a target failed or a required one was not measured."""
    from ragmeter.scoring.targets import gate_failures

    missed = gate_failures(record.targets)
    if not record.targets:
        errors.print(Text("gate: no targets to check (--targets FILE is empty)", style="red"))
        return True
    failing = [t for t in missed if t.status == "fail"]
    unmeasured = [t for t in missed if t.status == "not_measured"]
    if failing:
        errors.print(
            Text("gate: targets failed: ", style="red").append(
                ", ".join(
                    f"{inert(t.metric, markup=False)} {t.value:.3f} (target {t.op} {t.threshold:g})"
                    for t in failing
                    if t.value is not None
                ),
                style="default",
            )
        )
    if unmeasured:
        errors.print(
            Text("gate: targets not measured (no case scored): ", style="red").append(
                ", ".join(inert(t.metric, markup=False) for t in unmeasured)
                + f"; run errors: {record.error_count} of {record.question_count}. Mark a "
                "target optional in --targets ('> 0.6 optional') if the run cannot measure it",
                style="default",
            )
        )
    return bool(missed)


def _read_targets(path: str) -> Any:
    from ragmeter.yamlio import YamlError, load_yaml

    try:
        loaded = load_yaml(Path(path), path)
    except YamlError as exc:
        raise ConfigError(f"cannot read targets: {exc}") from exc
    if isinstance(loaded, dict) and set(loaded) == {"targets"}:
        loaded = loaded["targets"]
    if not isinstance(loaded, dict | list):
        raise ConfigError(f"{path}: targets must be a mapping or a list")
    return loaded


def _check_baseline(
    config: EvalConfig, baseline: str, run_id: str, margin: float, alpha: float
) -> bool:
    """Compare the new run with the baseline, print it; True if a metric regressed."""
    from ragmeter.reports.compare_console import comparison_table
    from ragmeter.scoring.compare import RunScores, compare_runs

    run_store = RunStore(config.store)
    try:
        base = RunScores.load(run_store, baseline)
        cand = RunScores.from_store(run_store, run_id)
        comparison = compare_runs(base, cand, alpha=alpha, margin=margin, seed=config.seed)
    except (RunNotFoundError, ValueError) as exc:
        fail(f"baseline {baseline!r}: {exc}")
    finally:
        run_store.close()
    console.print(comparison_table(comparison))
    regressions = comparison.regressions
    if regressions:
        errors.print(
            f"[red]regression against {inert(base.record.id)}:[/red] "
            + ", ".join(
                f"{inert(r.metric)} (Δ {r.mean_diff:+.3f}, p {r.p_value:.4f})" for r in regressions
            )
        )
    return bool(regressions)


def _judge_estimate(config: EvalConfig) -> None:
    """Print the judging cost of a run before anything is asked or judged."""
    from ragmeter.datasets import load_datasets
    from ragmeter.judges.estimate import estimate_judging
    from ragmeter.runner.engine import sample_cases

    if not config.judge:
        fail("--dry-run estimates judging: name a --judge")
    cases = sample_cases(
        load_datasets(config.datasets, config.field_map or None), config.samples, config.seed
    )
    estimate = estimate_judging(
        [(case, None) for case in cases], config.judge, prices=config.price_table()
    )
    cost = (
        "unknown (no price for this model)"
        if estimate.cost_usd is None
        else f"${estimate.cost_usd:.4f}"
    )
    console.print(
        f"dry run, judge {redact_text(config.judge)}: {len(cases)} cases -> "
        f"{estimate.calls} judge calls, "
        f"~{estimate.prompt_tokens} prompt + ~{estimate.completion_tokens} completion tokens, "
        f"cost {cost} (answers and contexts assumed; repairs not counted)"
    )


def _run_eval(config: EvalConfig, resume: str | None) -> RunRecord:
    from ragmeter.runner.engine import RunInterruptedError, RunOutcome, run_evaluation_async

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
        progress.update(task_id, description=f"run {record.id}", total=pending)

    def on_progress(done: int, total: int) -> None:
        progress.update(task_id, completed=done)

    async def drive() -> RunOutcome:
        _stop_on_signals(asyncio.get_running_loop(), received, started, config.store)
        return await run_evaluation_async(
            config, resume=resume, on_start=on_start, on_progress=on_progress
        )

    try:
        with progress:
            outcome = asyncio.run(drive())
    except RunInterruptedError as exc:
        progress.stop()
        signum = received[0] if received else signal.SIGINT
        errors.print(Text(str(exc), style="yellow"), highlight=False, soft_wrap=True)
        _exit_now(EXIT_TERMINATED if signum == signal.SIGTERM else EXIT_INTERRUPTED)
    print_run(outcome.record, console)
    console.print(Text(f"stored in {config.store} · run file {outcome.run_file}"), highlight=False)
    return outcome.record


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
    finished is already committed to the store."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


@main.command("rescore")
@click.argument("run_id")
@store_option
@click.option("--judge", help="LLM judge for the judged metrics (see 'ragmeter eval --judge').")
@max_judge_cost_option
@click.option("--metrics", help="Comma-separated metric families (default: the run's own).")
@click.option("--output-dir", help="Folder for the new run file (default: the run's own).")
@click.option("--name", help="Name of the new run.")
def rescore_command(
    run_id: str,
    store: str,
    judge: str | None,
    max_judge_cost: float | None,
    metrics: str | None,
    output_dir: str | None,
    name: str | None,
) -> None:
    """Score a stored run again without calling the system under test.

    The stored responses are scored with the run's config, changed by the options given (for
    example another judge); the result is a new run, so `ragmeter compare OLD NEW` works.
    """
    from ragmeter.runner.rescore import rescore

    changes: dict[str, Any] = {}
    if judge:
        changes["judge"] = judge
    if max_judge_cost is not None:
        changes["max_judge_cost"] = max_judge_cost
    if metrics:
        changes["metrics"] = [m.strip() for m in metrics.split(",") if m.strip()]
    if name:
        changes["name"] = name
    outcome = rescore(store, run_id, changes, output_dir)
    print_run(outcome.record, console)
    console.print(
        Text(
            f"rescored {inert(run_id, markup=False)} as {outcome.record.id} · run file "
            f"{outcome.run_file}"
        )
    )


@main.command("runs")
@store_option
@click.option("--limit", default=50, show_default=True)
def runs_command(store: str, limit: int) -> None:
    """List stored runs, newest first."""
    from rich.table import Table

    table = Table("id", "name", "status", "created", "datasets", "questions", "errors")
    for record in RunStore(store, create=False).list_runs(limit):
        table.add_row(
            inert(record.id),
            inert(record.name),
            record.status,
            record.created_at,
            inert(", ".join(record.datasets)),
            str(record.question_count),
            str(record.error_count),
        )
    console.print(table)


def _open_run(store: str, run_id: str) -> tuple[RunStore, RunRecord]:
    run_store = RunStore(store, create=False)
    try:
        return run_store, run_store.get_run(run_id)
    except RunNotFoundError as exc:
        fail(f"{exc} ({store})")


@main.command("show")
@click.argument("run_id")
@store_option
@click.option("--cases", "show_cases", is_flag=True, help="Also list every case's outcome.")
@click.option(
    "--details",
    is_flag=True,
    help="Every case: question, answer, reference and each metric's value or reason "
    "(unsupported claims, missing keywords, judge reasons); with --json, as JSON.",
)
@click.option(
    "--failing",
    is_flag=True,
    help="With --details: only cases whose query or a score failed, or that scored low on a "
    "metric named with --metric.",
)
@click.option("--case", "case_ids", multiple=True, help="With --details: only these case ids.")
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON.")
@click.option(
    "--by",
    "by_field",
    help="Print the breakdown by a case field (category, tags, difficulty, answerable, "
    "query_type, dataset, metadata.FIELD).",
)
@click.option(
    "--metric", "by_metrics", multiple=True, help="Limit --by or --details to these metrics."
)
def show_command(
    run_id: str,
    store: str,
    show_cases: bool,
    as_json: bool,
    by_field: str | None,
    by_metrics: tuple[str, ...],
    details: bool,
    failing: bool,
    case_ids: tuple[str, ...],
) -> None:
    """Print one run's scorecard (a unique id prefix is enough)."""
    from ragmeter.reports.json_report import run_document

    run_store, record = _open_run(store, run_id)
    if by_field:
        _print_breakdown(run_store, record, by_field, list(by_metrics))
        return
    if details:
        from ragmeter.reports.case_details import case_details, case_details_json

        cases = run_store.get_cases(record.id)
        if case_ids:
            unknown = sorted(set(case_ids) - {c.case_id for c in cases})
            if unknown:
                fail(f"run {record.id} has no case {', '.join(map(repr, unknown))}")
            cases = [c for c in cases if c.case_id in case_ids]
        arguments = (cases, run_store.get_results(record.id), run_store.get_scores(record.id))
        selection: dict[str, Any] = {
            "only_failing": failing,
            "metrics": list(by_metrics) or None,
            "scorecard": record.scorecard,
        }
        if as_json:
            click.echo(json.dumps(case_details_json(*arguments, **selection), indent=2))
            return
        for renderable in case_details(*arguments, **selection):
            console.print(renderable)
        return
    if as_json:
        document = run_document(
            record, run_store.get_results(record.id), run_store.get_scores(record.id)
        )
        click.echo(json.dumps(document, indent=2))
        return
    print_run(record, console)
    if record.status != "completed":
        answered = len(run_store.answered_case_ids(record.id))
        errors.print(
            Text(
                f"run {record.id} is {record.status}: {answered} of {record.question_count} "
                f"cases answered, not scored yet; finish it with: ragmeter eval --resume "
                f"{record.id}",
                style="yellow",
            ),
            soft_wrap=True,
        )
    if show_cases:
        from ragmeter.reports.console import cases_table

        console.print(cases_table(run_store.get_results(record.id)))


def _print_breakdown(
    run_store: RunStore, record: RunRecord, field: str, metrics: list[str]
) -> None:
    """The stored breakdown, or one computed now from the stored scores."""
    from ragmeter.reports.console import breakdown_table

    groups = record.breakdowns.get(field)
    if groups is None:
        from ragmeter.metrics import resolve_metrics
        from ragmeter.runner.engine import _record_config, metric_settings
        from ragmeter.scoring.aggregate import aggregate_with_breakdowns

        config = _record_config(record.config)
        _, computed = aggregate_with_breakdowns(
            run_store.get_scores(record.id),
            resolve_metrics(config.metrics, metric_settings(config)),
            run_store.get_cases(record.id),
            [field],
            config.bootstrap_resamples,
            config.seed,
        )
        groups = computed[field]
    console.print(breakdown_table(field, groups, metrics or None))


@main.command("compare")
@click.argument("baseline")
@click.argument("candidates", nargs=-1, required=True)
@store_option
@click.option("--metric", "metrics", multiple=True, help="Compare only these metrics.")
@alpha_option
@margin_option
@click.option(
    "--fail-on-regression", is_flag=True, help="Exit 4 if a candidate regressed on any metric."
)
@click.option("--gate-performance", is_flag=True, help="Also gate latency, cost and error metrics.")
@click.option("--pareto", is_flag=True, help="Mark runs on the quality/cost/latency frontier.")
@click.option("--quality", help="Quality axis for --pareto (default: the weighted score).")
@click.option("--all", "show_all", is_flag=True, help="Also list metrics that did not change.")
@click.option("--seed", default=0, show_default=True, help="Seed of the resampling tests.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparisons as JSON.")
def compare_command(
    baseline: str,
    candidates: tuple[str, ...],
    store: str,
    metrics: tuple[str, ...],
    alpha: float,
    margin: float,
    fail_on_regression: bool,
    gate_performance: bool,
    pareto: bool,
    quality: str | None,
    show_all: bool,
    seed: int,
    as_json: bool,
) -> None:
    """Compare CANDIDATE runs with BASELINE case by case (run ids or run JSON files).

    Paired tests on the shared cases: exact McNemar for 0/1 metrics, sign-flip permutation
    for the others; a regression is significantly worse by at least --margin.
    """
    from ragmeter.reports.compare_console import (
        comparison_table,
        flips_lines,
        methods_table,
        pareto_table,
    )
    from ragmeter.scoring.compare import RunScores, compare_runs

    run_store = RunStore(store)
    try:
        base = RunScores.load(run_store, baseline)
        others = [RunScores.load(run_store, c) for c in candidates]
        comparisons = [
            compare_runs(
                base,
                other,
                alpha=alpha,
                margin=margin,
                metrics=list(metrics) or None,
                gate_performance=gate_performance,
                seed=seed,
            )
            for other in others
        ]
    except (RunNotFoundError, ValueError) as exc:
        fail(f"{exc} ({store})")
    runs = [base, *others]
    points: list[Any] = []
    dropped: list[str] = []
    if pareto:
        points, dropped = _pareto_points([r.record for r in runs], quality)
    if as_json:
        document: dict[str, Any] = {"comparisons": [c.model_dump(mode="json") for c in comparisons]}
        if pareto:
            document["pareto"] = {
                "quality": quality or "weighted_score",
                "left_out": dropped,
                "points": [vars(p) for p in points],
            }
        click.echo(json.dumps(document, indent=2))
    else:
        for comparison in comparisons:
            console.print(comparison_table(comparison, show_all))
            for line in flips_lines(comparison.rows):
                console.print(f"  {line}", highlight=False, markup=False)
        if len(runs) > 2 or show_all:
            shown = list(metrics) or _headline_metrics(runs[0].record)
            console.print(methods_table([r.record for r in runs], shown))
        if pareto:
            console.print(pareto_table(points, quality or "weighted score", dropped))
    regressed = [c for c in comparisons if c.regressions]
    for comparison in regressed:
        errors.print(
            f"[red]regression:[/red] {inert(comparison.candidate)} vs "
            f"{inert(comparison.baseline)}: "
            + ", ".join(inert(r.metric) for r in comparison.regressions)
        )
    if fail_on_regression and regressed:
        sys.exit(EXIT_GATE)


def _headline_metrics(record: RunRecord, limit: int = 6) -> list[str]:
    if record.scorecard is None:
        return []
    wanted = ["recall_at_5", "ndcg_at_5", "mrr", "token_f1", "unanswerable_accuracy", "latency_p50"]
    present = [name for name in wanted if record.scorecard.get(name) is not None]
    return present or [m.name for m in record.scorecard.metrics[:limit]]


def _pareto_points(records: list[RunRecord], quality: str | None) -> tuple[list[Any], list[str]]:
    from ragmeter.scoring.pareto import ParetoPoint, pareto_frontier

    def value(record: RunRecord, name: str) -> float | None:
        summary = record.scorecard.get(name) if record.scorecard else None
        return summary.value if summary is not None else None

    points = [
        ParetoPoint(
            run_id=record.id,
            quality=value(record, quality)
            if quality
            else (record.weighted_score.score if record.weighted_score else None),
            cost=value(record, "cost_per_query"),
            latency=value(record, "latency_p50"),
        )
        for record in records
    ]
    return pareto_frontier(points)


@main.command("stats")
@click.argument("run_id", required=False)
@click.option("--dataset", "-d", "datasets", multiple=True, help="Dataset (repeatable).")
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
def stats_command(run_id: str | None, datasets: tuple[str, ...], store: str, as_json: bool) -> None:
    """Summarise datasets (counts, gold passages, question length) and, given RUN_ID, a run
    (errors by type, latency percentiles, metric coverage). No dataset and no run: the demo."""
    from ragmeter.datasets import load_datasets
    from ragmeter.reports.stats import dataset_stats, run_stats

    document: dict[str, Any] = {}
    if run_id is not None:
        run_store, record = _open_run(store, run_id)
        cases = run_store.get_cases(record.id)
        document["run"] = run_stats(
            record, run_store.get_results(record.id), run_store.get_scores(record.id)
        )
        if not datasets:
            document["dataset"] = dataset_stats(cases)
    if datasets or run_id is None:
        document["dataset"] = dataset_stats(load_datasets(list(datasets) or ["demo"]))
    if as_json:
        click.echo(json.dumps(document, indent=2))
        return
    from ragmeter.reports.stats import stats_tables

    for table in stats_tables(document):
        console.print(table)


@main.command("export")
@click.argument("run_id")
@store_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["responses", "json", "trec-run", "trec-qrels"]),
    default="responses",
    show_default=True,
    help="'responses': JSONL replayable with --target replay:FILE; 'trec-run' / 'trec-qrels': "
    "the retrieval as TREC files (for trec_eval or 'ragmeter trec').",
)
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False))
def export_command(run_id: str, store: str, fmt: str, output: str) -> None:
    """Export a stored run: its responses as replayable JSONL, or the run file."""
    from ragmeter.reports.json_report import run_document

    run_store, record = _open_run(store, run_id)
    results = run_store.get_results(record.id)
    path = Path(output)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"-o {output}: cannot create its folder ({exc.strerror or exc}); pass a file path")
    if path.is_dir():
        fail(f"-o {output} is a folder; pass a file path")
    if fmt == "json":
        document = run_document(record, results, run_store.get_scores(record.id))
        path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    elif fmt in ("trec-run", "trec-qrels"):
        from ragmeter.reports.trec_export import export_trec

        export_trec(
            path,
            fmt,
            run_store.get_cases(record.id),
            results,
            record,
            require_snippet=bool(record.config.get("require_snippet", False)),
        )
    else:
        with path.open("w", encoding="utf-8") as handle:
            for result in results:
                line: dict[str, Any] = {"case_id": result.case_id}
                if result.response is not None:
                    line["response"] = result.response.model_dump(mode="json", exclude={"raw"})
                else:
                    line["error_type"] = result.error_type
                    line["error_message"] = result.error_message
                handle.write(json.dumps(line) + "\n")
    console.print(f"wrote {path} ({len(results)} cases)")


@main.command("trec")
@click.argument("qrels", type=click.Path(exists=True, dir_okay=False))
@click.argument("run", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-m",
    "--measure",
    "measures",
    multiple=True,
    help="e.g. ndcg_cut.10, P.5, recall.100, map, recip_rank, recip_rank.10, Rprec, "
    "success.5, f1.5 (repeatable; default: map, P.5, P.10, recall.100, "
    "ndcg_cut.10, recip_rank, Rprec).",
)
@click.option("-q", "per_query", is_flag=True, help="Also print every query's values.")
@click.option(
    "-c",
    "complete",
    is_flag=True,
    help="Average over every qrels query (missing in the run = 0), like trec_eval -c.",
)
@click.option(
    "-l",
    "--level",
    "relevance_level",
    default=1,
    show_default=True,
    help="Grade at which a document counts as relevant for binary measures.",
)
@click.option(
    "--gain",
    type=click.Choice(["linear", "exponential"]),
    default="linear",
    show_default=True,
    help="nDCG gain: the grade (trec_eval) or 2^grade - 1.",
)
def trec_command(
    qrels: str,
    run: str,
    measures: tuple[str, ...],
    per_query: bool,
    complete: bool,
    relevance_level: int,
    gain: str,
) -> None:
    """Evaluate a TREC run file against TREC qrels, printing trec_eval-style lines."""
    from ragmeter.datasets.trec import read_qrels, read_run
    from ragmeter.metrics.ir import parse_measure
    from ragmeter.metrics.ir_batch import evaluate_batch

    names = measures or ("map", "P.5", "P.10", "recall.100", "ndcg_cut.10", "recip_rank", "Rprec")
    parsed = list(dict.fromkeys(parse_measure(name) for name in names))
    judgments, ranking = read_qrels(qrels), read_run(run)
    result = evaluate_batch(
        judgments,
        ranking,
        parsed,
        relevance_level,
        "exponential" if gain == "exponential" else "linear",
        complete,
    )
    if per_query:
        for position, query_id in enumerate(result.query_ids):
            for measure in parsed:
                value = result.values[measure.label][position]
                click.echo(f"{measure.label:<22}\t{query_id}\t{value:.4f}")
    click.echo(f"{'num_q':<22}\tall\t{len(result.query_ids)}")
    for measure in parsed:
        click.echo(f"{measure.label:<22}\tall\t{result.mean(measure.label):.4f}")


@main.group("datasets")
def datasets_group() -> None:
    """Validate datasets and print their schema."""


@datasets_group.command("validate")
@click.argument("path")
@click.option(
    "--field-map", "field_map", multiple=True, help="FIELD=SOURCE_PATH for foreign JSONL/CSV."
)
def validate_command(path: str, field_map: tuple[str, ...]) -> None:
    """Report every problem in a dataset as file:line + field; exit 1 if there is any."""
    problems = validate_dataset(path, _pairs(field_map, "--field-map") or None)
    for problem in problems:
        click.echo(str(problem))
    if problems:
        click.echo(f"{len(problems)} problem(s)", err=True)
        sys.exit(1)
    from ragmeter.datasets import load_dataset

    count = len(load_dataset(path, _pairs(field_map, "--field-map") or None))
    click.echo(f"ok: {count} cases")


@datasets_group.command("import-squad")
@click.argument("squad_json", type=click.Path(exists=True, dir_okay=False))
@click.argument("out_dir", type=click.Path(file_okay=False))
def import_squad_command(squad_json: str, out_dir: str) -> None:
    """Turn a SQuAD v1.1/v2.0 JSON file into OUT_DIR/cases.jsonl and a Markdown OUT_DIR/corpus/
    (one document a paragraph) for `ragmeter eval --dataset ... --corpus ...`."""
    from ragmeter.datasets.squad import import_squad

    cases_file, corpus, count = import_squad(squad_json, out_dir)
    click.echo(f"{count} cases -> {cases_file}; corpus -> {corpus}")
    click.echo(f"run: ragmeter eval --dataset {cases_file} --corpus {corpus}")


@datasets_group.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of a case."""
    click.echo(json.dumps(Case.model_json_schema(by_alias=False), indent=2))


@main.command("metrics")
def metrics_command() -> None:
    """List the metric families and the metrics each produces."""
    from ragmeter.metrics.base import MetricSettings
    from ragmeter.registry import registry
    from ragmeter.reports.console import metrics_table

    rows = [
        (family, metric)
        for family in registry.names("metrics")
        for metric in registry.get("metrics", family)(MetricSettings())
    ]
    console.print(metrics_table(rows))


@main.command("reference-server")
@click.option(
    "--corpus", type=click.Path(file_okay=False), help="Markdown corpus (default: the demo)."
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True)
@click.option("--top-k", default=5, show_default=True)
def reference_server_command(corpus: str | None, host: str, port: int, top_k: int) -> None:
    """Serve the reference RAG pipeline over HTTP: POST /query, GET /health, GET /models/info."""
    from ragmeter.demo import DEMO_CORPUS
    from ragmeter.targets.reference.pipeline import PipelineSettings, ReferencePipeline
    from ragmeter.targets.reference.server import make_server

    pipeline = ReferencePipeline.from_corpus(
        Path(corpus) if corpus else DEMO_CORPUS, PipelineSettings(top_k=top_k)
    )
    server = make_server(pipeline, host, port)
    click.echo(
        f"reference server on http://{host}:{server.server_address[1]} "
        f"({len(pipeline.chunks)} chunks)",
        err=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()

"""``ragmeter eval`` and ``ragmeter rescore``."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.text import Text

from ragmeter.cli.app import console, fail, main
from ragmeter.cli.compat_options import seed002_options
from ragmeter.cli.executor_options import executor_options
from ragmeter.cli.noise_options import noise_options
from ragmeter.cli.options import config_overrides, goals_file, pairs, shared, target_spec
from ragmeter.cli.overrides import (
    option_names,
    refuse_conflicting_options,
    refuse_ignored_by_resume,
)
from ragmeter.cli.perspective import seed003_options
from ragmeter.cli.running import (
    exit_if_every_case_failed,
    print_dataset_readings,
    print_files,
    print_outcome,
    run_with_progress,
)
from ragmeter.cli.target_options import target_options
from ragmeter.config import (
    DEFAULT_BREAKDOWNS,
    DEFAULT_JUDGE_RETRIES,
    DEFAULT_JUDGE_TIMEOUT_S,
    EvalConfig,
    env_var,
    load_config,
)
from ragmeter.errors import EXIT_GATE
from ragmeter.reports.console import print_run
from ragmeter.reports.terminal import inert


@main.command("eval")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="YAML config file.")
@shared("datasets")
@click.option(
    "--target",
    "-t",
    "target_spec",
    callback=target_spec,
    help="'reference', http(s)://HOST:PORT, 'replay:FILE.jsonl', 'module:function' or a "
    "registered target type (NAME[:ARGUMENT]).",
)
@click.option(
    "--corpus", type=click.Path(file_okay=False), help="Corpus folder for the reference target."
)
@click.option("--top-k", type=int, help="Chunks to retrieve per question.")
@click.option(
    "--header",
    "headers",
    multiple=True,
    callback=pairs(":"),
    help="HTTP header 'Name: value' (use ${ENV} for secrets).",
)
@target_options
@shared("field_map")
@shared("metrics")
@shared("metric_params")
@click.option(
    "--samples",
    type=int,
    envvar=env_var("samples"),
    show_envvar=True,
    help="Evaluate a seeded random sample of N cases per dataset.",
)
@shared("seed")
@click.option(
    "--concurrency",
    type=int,
    envvar=env_var("concurrency"),
    show_envvar=True,
    help="Cases in flight at once.",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=float,
    envvar=env_var("target", "timeout_s"),
    show_envvar=True,
    help="Seconds one request to the target may take; a case, retries included, may take "
    "3x that (case_timeout_s).",
)
@shared("name", help="Run name.")
@shared("store")
@shared("output_dir")
@click.option("--resume", help="Finish an interrupted run by its id.")
@shared("judge")
@shared("max_judge_cost")
@click.option("--spot-check", type=int, help="Re-judge N random cases (see --second-judge).")
@click.option(
    "--dry-run",
    is_flag=True,
    help="With --judge: estimate judge calls, tokens and cost for the dataset, ask nothing.",
)
@click.option("--second-judge", help="Judge for the reliability spot check (disagreement, kappa).")
@shared("spot_check_prompts")
@click.option(
    "--judge-timeout",
    "judge_timeout_s",
    type=float,
    envvar=env_var("judge_timeout_s"),
    show_envvar=True,
    help=f"Seconds one judge request may take (default {DEFAULT_JUDGE_TIMEOUT_S:g}); a hung "
    "judge fails that score.",
)
@click.option(
    "--judge-retries",
    type=int,
    envvar=env_var("judge_max_retries"),
    show_envvar=True,
    help=f"Retries of a failed judge request (default {DEFAULT_JUDGE_RETRIES}: "
    f"{DEFAULT_JUDGE_RETRIES + 1} tries).",
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
    f"default: {', '.join(DEFAULT_BREAKDOWNS)}).",
)
@click.option(
    "--goals",
    "--targets",
    "goals_file",
    type=click.Path(dir_okay=False),
    callback=goals_file,
    help="YAML goals ({metric: '> 0.6'} or a list; seed 003's targets, --targets works too); "
    "replaces the default table.",
)
@click.option("--gate", is_flag=True, help="Exit 4 when a goal fails (after storing the run).")
@click.option(
    "--baseline",
    help="Run id or run JSON file: check the new run for regressions against it (exit 4).",
)
@shared("margin")
@shared("alpha")
@seed003_options
@seed002_options
@noise_options
@executor_options
@click.pass_context
def eval_command(ctx: click.Context, /, **params: Any) -> None:
    """Ask every case, score, store the run and print the scorecard.

    With no options: the bundled demo dataset against the built-in reference pipeline, offline.
    """
    refuse_conflicting_options(ctx)
    if params.get("resume"):
        refuse_ignored_by_resume(ctx, str(params["resume"]))
    config = load_config(
        params["config_file"], config_overrides(ctx), option_names=option_names(ctx)
    )
    if config.dry_run:
        _judge_estimate(config)
        return
    if not config.resume:
        print_dataset_readings(config)
    outcome = run_with_progress(config)
    print_outcome(outcome, config)
    exit_if_every_case_failed(outcome.record)  # exit 3, before a gate's 4: nothing measured
    if outcome.verdict is not None and outcome.verdict.failed:
        sys.exit(EXIT_GATE)


def _judge_estimate(config: EvalConfig) -> None:
    """Print the judging cost of a run before anything is asked or judged."""
    from ragmeter.reports.run_notes import dry_run_line
    from ragmeter.runner.run import estimate_judging_cost

    if not config.judge:
        fail("--dry-run estimates judging: name a --judge")
    estimate = estimate_judging_cost(config)
    console.print(dry_run_line(config.judge, estimate))


@main.command("rescore")
@click.argument("run_id")
@shared("store")
@shared("judge")
@shared("max_judge_cost")
@shared("metrics", help="Comma-separated metric families (default: the run's own).")
@shared("metric_params")
@shared("output_dir", help="Folder for the new run file (default: the run's own).")
@shared("name")
@click.option("--output", metavar="NAME", help="Name of the new run's files (NAME.json, NAME.md).")
@click.pass_context
def rescore_command(
    ctx: click.Context, /, run_id: str, store: str, output_dir: str | None, **_: Any
) -> None:
    """Score a stored run again without asking its target again.

    The stored responses are scored with the run's config, changed by the options given (for
    example another judge); the result is a new run, so `ragmeter compare OLD NEW` works.
    """
    from ragmeter.runner.rescore import rescore

    changes = config_overrides(
        ctx, only={"judge", "max_judge_cost", "metrics", "metric_params", "name", "output"}
    )
    outcome = rescore(store, run_id, changes, output_dir)
    print_run(outcome.record, console)
    message = f"rescored {inert(run_id, markup=False)} as {outcome.record.id} · run file "
    console.print(Text(message + str(outcome.run_file)))
    print_files(outcome, traced=False)

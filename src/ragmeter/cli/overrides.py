"""The one mapping from command-line options to config fields, and the config overrides of
the options a command was given (the flags layer of defaults < file < environment < flags).

Every option of ``ragmeter eval`` but ``--config`` has an entry (tests/test_config_layers.py
checks it), so a config file can hold any of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from click.core import ParameterSource

# option (click parameter name) -> config field ("target.top_k"), and how its value becomes the
# field's value. Only options the user gave (command line or environment) are applied.
CONFIG_FIELDS: dict[str, tuple[str, Callable[[Any], Any] | None]] = {
    "datasets": ("datasets", list),
    "field_map": ("field_map", None),
    "target_spec": ("target", None),
    "corpus": ("target.corpus", None),
    "top_k": ("target.top_k", None),
    "headers": ("target.headers", None),
    "timeout_s": ("target.timeout_s", None),
    "no_health_check": ("target.health_path", lambda _: None),
    # how to talk to the target (ragmeter.cli.target_options)
    "response_format": ("target.response_format", None),
    "request_template": ("target.request_template", None),
    "response_mapping": ("target.response_mapping", None),
    "metrics": ("metrics", None),
    "metric_params": ("metric_params", None),
    "samples": ("samples", None),
    "seed": ("seed", None),
    "concurrency": ("concurrency", None),
    "name": ("name", None),
    "store": ("store", None),
    "output_dir": ("output_dir", None),
    "no_progress": ("progress", lambda _: False),
    "breakdowns": ("breakdowns", list),
    "goals_file": ("goals", None),
    "judge": ("judge", None),
    "max_judge_cost": ("max_judge_cost", None),
    "spot_check": ("spot_check", None),
    "second_judge": ("second_judge", None),
    "spot_check_prompts": ("spot_check_prompts", None),
    "judge_timeout_s": ("judge_timeout_s", None),
    "judge_retries": ("judge_max_retries", None),
    "judge_api_key_env": ("judge_api_key_env", None),
    "perspectives": ("perspectives", None),
    "suite": ("suite", None),
    "output": ("output", None),
    # the command's own settings (config fields too: a CI config file can set the gate)
    "gate": ("gate", None),
    "baseline": ("baseline", None),
    "margin": ("margin", None),
    "alpha": ("alpha", None),
    "verbose": ("verbose", None),
    "save_trace": ("save_trace", None),
    "resume": ("resume", None),
    "dry_run": ("dry_run", None),
    # gates under noise (ragmeter.cli.noise_options)
    "repeats": ("repeats", None),
    "failed_as": ("failed_as", None),
    "coverage_floor": ("coverage_floor", None),
    # where the run executes (ragmeter.cli.executor_options)
    "executor": ("executor", None),
    "ray_address": ("ray_address", None),
    # seed 002's options (ragmeter.cli.compat_options)
    "dataset_list": ("datasets", list),
    "no_judge": ("judge", lambda _: None),
    "rag_url": ("target", lambda url: {"type": "http", "url": url}),
}
_GIVEN = (ParameterSource.ENVIRONMENT, ParameterSource.COMMANDLINE)


def _put(data: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for key in parents:
        data = data.setdefault(key, {})
    if isinstance(value, dict) and isinstance(data.get(last), dict):
        for key, item in value.items():  # -P retrieval.ks=... keeps the file's retrieval.*
            if isinstance(item, dict):
                _put(data[last], key, item)
            else:
                data[last][key] = item
    elif isinstance(value, list) and isinstance(data.get(last), list):
        data[last] = data[last] + value  # --dataset a --datasets b,c: all three
    else:
        data[last] = value


def config_overrides(ctx: click.Context, only: set[str] | None = None) -> dict[str, Any]:
    """The config overrides of the options given to this command (``only``: of these)."""
    overrides: dict[str, Any] = {}
    # environment variables first, flags after them (a flag wins: --no-judge over RAGMETER_JUDGE)
    given = sorted(
        (
            (_GIVEN.index(source), name, value)
            for name, value in ctx.params.items()
            if (source := ctx.get_parameter_source(name)) in _GIVEN
        ),
        key=lambda item: item[0],
    )
    for _, name, value in given:
        if name not in CONFIG_FIELDS or (only is not None and name not in only):
            continue
        if value is None or value is False or value == "":  # not given, an unset flag
            continue
        path, convert = CONFIG_FIELDS[name]
        _put(overrides, path, convert(value) if convert is not None else value)
    return overrides


def option_names(ctx: click.Context) -> dict[tuple[str, ...], str]:
    """The config path of each option given on the command line -> its flag (``--perspective``),
    so that a bad value is blamed on the flag, not on the config file."""
    names: dict[tuple[str, ...], str] = {}
    for param in ctx.command.params:
        name = param.name or ""
        if name in CONFIG_FIELDS and ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE:
            long = [opt for opt in param.opts if opt.startswith("--")]
            names[tuple(CONFIG_FIELDS[name][0].split("."))] = (long or param.opts or [name])[0]
    return names


# what a resumed run takes from this command line (the rest comes from the stored run)
_RESUME_KEEPS = frozenset(
    {
        "resume", "store", "output_dir", "output", "executor", "ray_address", "no_progress",
        "verbose", "gate", "baseline", "margin", "alpha", "coverage_floor", "save_trace",
    }
)  # fmt: skip


def refuse_ignored_by_resume(ctx: click.Context, run_id: str) -> None:
    """Fail when options a resumed run would not apply were given on the command line: the
    run finishes with the settings it was started with."""
    from ragmeter.cli.app import fail

    ignored = [
        param.opts[0] if param.opts else param.name or ""
        for param in ctx.command.params
        if param.name not in _RESUME_KEEPS
        and ctx.get_parameter_source(param.name or "") == ParameterSource.COMMANDLINE
    ]
    if ignored:
        fail(
            f"--resume {run_id} finishes the run with the settings it was started with; "
            f"{', '.join(ignored)} would be ignored: drop them, or start a new run"
        )


# the target types --corpus applies to (the reference pipeline answers over it)
CORPUS_TARGETS = frozenset({"reference"})
TYPE_NAMES = {"http": "an HTTP", "python": "a Python", "replay": "a replay"}


def refuse_conflicting_options(ctx: click.Context) -> None:
    """Fail, before the first question, on options that say two things at once (the run would
    otherwise follow one of them without a word)."""
    from ragmeter.cli.app import fail

    def given(name: str) -> bool:
        # on the command line: a flag over an environment variable is the layering, no conflict
        source = ctx.get_parameter_source(name)
        return source == ParameterSource.COMMANDLINE and ctx.params.get(name) not in (None, {})

    if given("rag_url") and given("target_spec"):
        fail("--rag-url and --target both name the system to evaluate; give one of them")
    target_type = (ctx.params.get("target_spec") or {}).get("type")
    if given("corpus") and given("target_spec") and target_type not in CORPUS_TARGETS:
        fail(
            f"--corpus is the reference pipeline's corpus, and --target names "
            f"{TYPE_NAMES.get(str(target_type), repr(target_type))} target, "
            "which answers from its own documents; drop --corpus (or use --target reference)"
        )
    if given("corpus") and given("rag_url"):
        fail("--corpus is the reference pipeline's corpus, and --rag-url names an HTTP target; "
             "drop --corpus")  # fmt: skip

"""Options shared by several commands, each declared once, and the one mapping from options to
config fields.

An option that has an environment variable shows it in its help (``[env var: ...]``); a
config-backed option uses the variable the config's environment layer reads
(:data:`ragmeter.config.ENV_FIELDS`), so ``ragmeter eval`` and ``ragmeter runs`` agree on
``RAGMETER_STORE`` and the rest.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from ragmeter.config import (
    DEFAULT_ALPHA,
    DEFAULT_MARGIN,
    DEFAULT_SEED,
    DEFAULT_STORE,
    env_var,
    read_targets_file,
)

F = TypeVar("F", bound=Callable[..., Any])

ALPHA_ENV, MARGIN_ENV = "RAGMETER_ALPHA", "RAGMETER_MARGIN"  # settings that are no config field


def _alpha(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if not 0 < value < 1:
        raise click.BadParameter(f"must be between 0 and 1 (e.g. 0.05), got {value}")
    return value


def _margin(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if not (math.isfinite(value) and value >= 0):
        raise click.BadParameter(f"must be a finite number >= 0 (e.g. 0.02), got {value}")
    return value


def pairs(separator: str) -> Callable[[click.Context, click.Parameter, Any], dict[str, str]]:
    """A click callback: repeated ``KEY<separator>VALUE`` options as a dict."""

    def parse(ctx: click.Context, param: click.Parameter, values: Any) -> dict[str, str]:
        found: dict[str, str] = {}
        for value in values or ():
            key, present, rest = value.partition(separator)
            if not present or not key.strip():
                raise click.BadParameter(f"expected KEY{separator}VALUE, got {value!r}")
            found[key.strip()] = rest.strip()
        return found

    return parse


def comma_list(ctx: click.Context, param: click.Parameter, value: str | None) -> list[str] | None:
    """A click callback: ``a, b,c`` as ``["a", "b", "c"]`` (None when nothing is named)."""
    names = [name.strip() for name in (value or "").split(",") if name.strip()]
    return names or None


def target_spec(ctx: click.Context, param: click.Parameter, spec: str | None) -> dict[str, Any]:
    """A click callback: ``--target SPEC`` as the target config's fields."""
    from ragmeter.cli.app import error_context
    from ragmeter.targets import parse_target_spec

    if not spec:
        return {}
    with error_context(prefix="--target: "):
        return parse_target_spec(spec)


def targets_file(ctx: click.Context, param: click.Parameter, path: str | None) -> Any:
    """A click callback: the targets table read from ``--targets FILE``."""
    return read_targets_file(path) if path else None


# name -> (declarations, click attributes); see shared()
_SHARED: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "store": (
        ("--store",),
        {
            "envvar": env_var("store"),
            "default": DEFAULT_STORE,
            "show_default": True,
            "help": "SQLite run store.",
        },
    ),
    "output_dir": (
        ("--output-dir",),
        {
            "envvar": env_var("output_dir"),
            "help": "Folder for run JSON files (default: 'runs' beside the store).",
        },
    ),
    "seed": (
        ("--seed",),
        {
            "envvar": env_var("seed"),
            "type": int,
            "default": DEFAULT_SEED,
            "show_default": True,
            "help": "Seed for sampling, bootstrap intervals and the resampling tests.",
        },
    ),
    "alpha": (
        ("--alpha",),
        {
            "envvar": ALPHA_ENV,
            "default": DEFAULT_ALPHA,
            "show_default": True,
            "callback": _alpha,
            "help": "Significance level of the paired tests.",
        },
    ),
    "margin": (
        ("--margin",),
        {
            "envvar": MARGIN_ENV,
            "default": DEFAULT_MARGIN,
            "show_default": True,
            "callback": _margin,
            "help": "Smallest worsening that counts as a regression (absolute; relative for "
            "ms/USD).",
        },
    ),
    "judge": (
        ("--judge",),
        {
            "envvar": env_var("judge"),
            "help": "LLM judge for the judged metrics: openai:MODEL, anthropic:MODEL, "
            "http://HOST:PORT/v1#MODEL or local:PATH.gguf (keys from environment variables "
            "only).",
        },
    ),
    "max_judge_cost": (
        ("--max-judge-cost", "--max-cost", "max_judge_cost"),
        {
            "envvar": env_var("max_judge_cost"),
            "type": float,
            "help": "Stop judging at this many USD (judge cost).",
        },
    ),
    "metrics": (
        ("--metrics",),
        {
            "callback": comma_list,
            "help": "Comma-separated metric families (see 'ragmeter metrics').",
        },
    ),
    "name": (("--name",), {"help": "Name of the new run."}),
    "datasets": (
        ("--dataset", "-d", "datasets"),
        {
            "multiple": True,
            "help": "Dataset: 'demo', a .jsonl/.yaml/.csv file or a label folder (repeatable).",
        },
    ),
    "field_map": (
        ("--field-map", "field_map"),
        {
            "multiple": True,
            "callback": pairs("="),
            "help": "FIELD=SOURCE_PATH for foreign JSONL/CSV.",
        },
    ),
    "json": (("--json", "as_json"), {"is_flag": True, "help": "Print JSON instead of tables."}),
    "spot_check_prompts": (
        ("--spot-check-prompt", "spot_check_prompts"),
        {
            "multiple": True,
            "callback": pairs("="),
            "help": "TASK=VERSION: the spot check asks this prompt version of a judged task "
            "(e.g. groundedness=v1) of --second-judge, else of the run's judge (repeatable).",
        },
    ),
}


def shared(name: str, **changes: Any) -> Callable[[F], F]:
    """The shared option ``name`` (``changes``: a command's own help or default)."""
    declarations, attributes = _SHARED[name]
    merged = {**attributes, **changes}
    return click.option(*declarations, show_envvar="envvar" in merged, **merged)


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
    "metrics": ("metrics", None),
    "samples": ("samples", None),
    "seed": ("seed", None),
    "concurrency": ("concurrency", None),
    "name": ("name", None),
    "store": ("store", None),
    "output_dir": ("output_dir", None),
    "no_progress": ("progress", lambda _: False),
    "breakdowns": ("breakdowns", list),
    "targets_file": ("targets", None),
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
}
_GIVEN = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def _put(data: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for key in parents:
        data = data.setdefault(key, {})
    if isinstance(value, dict) and isinstance(data.get(last), dict):
        data[last].update(value)
    else:
        data[last] = value


def config_overrides(ctx: click.Context, only: set[str] | None = None) -> dict[str, Any]:
    """The config overrides of the options given to this command (``only``: of these)."""
    overrides: dict[str, Any] = {}
    for name, value in ctx.params.items():
        if name not in CONFIG_FIELDS or (only is not None and name not in only):
            continue
        if ctx.get_parameter_source(name) not in _GIVEN:
            continue
        if value is None or value is False or value == "":  # not given, an unset flag
            continue
        path, convert = CONFIG_FIELDS[name]
        _put(overrides, path, convert(value) if convert is not None else value)
    return overrides

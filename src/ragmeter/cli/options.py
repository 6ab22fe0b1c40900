"""Options shared by several commands, each declared once (the mapping from options to config
fields is :mod:`ragmeter.cli.overrides`, re-exported here).

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

from ragmeter.cli.overrides import CONFIG_FIELDS, config_overrides
from ragmeter.config import (
    DEFAULT_ALPHA,
    DEFAULT_MARGIN,
    DEFAULT_SEED,
    DEFAULT_STORE,
    env_var,
)

__all__ = [
    "CONFIG_FIELDS",
    "comma_list",
    "config_overrides",
    "goals_file",
    "pairs",
    "shared",
    "target_spec",
]

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


def field_map(ctx: click.Context, param: click.Parameter, values: Any) -> dict[str, str]:
    """A click callback: ``--field-map`` values as a checked field map (datasets.fieldmap)."""
    from ragmeter.datasets.fieldmap import FieldMapError, parse_field_map

    try:
        return parse_field_map(values or ())
    except FieldMapError as exc:
        raise click.BadParameter(str(exc)) from None


def metric_params(
    ctx: click.Context, param: click.Parameter, values: Any
) -> dict[str, dict[str, Any]]:
    """A click callback: ``-P FAMILY.PARAM=VALUE`` values as ``{family: {param: value}}``."""
    from ragmeter.metrics.family import MetricParamError, parse_param

    found: dict[str, dict[str, Any]] = {}
    for text in values or ():
        try:
            family, name, value = parse_param(text)
        except MetricParamError as exc:
            raise click.BadParameter(str(exc)) from None
        found.setdefault(family, {})[name] = value
    return found


def comma_list(ctx: click.Context, param: click.Parameter, value: str | None) -> list[str] | None:
    """A click callback: ``a, b,c`` as ``["a", "b", "c"]`` (None when the option is not
    given). Given on the command line with nothing in it (``--metrics ""``), it is an error:
    read as not given, it would run the defaults the user meant to narrow."""
    names = [name.strip() for name in (value or "").split(",") if name.strip()]
    source = ctx.get_parameter_source(param.name) if param.name else None
    if not names and value is not None and source == click.core.ParameterSource.COMMANDLINE:
        raise click.BadParameter("is empty: name at least one, or leave the option out")
    return names or None


def target_spec(ctx: click.Context, param: click.Parameter, spec: str | None) -> dict[str, Any]:
    """A click callback: ``--target SPEC`` as the target config's fields."""
    from ragmeter.cli.app import error_context
    from ragmeter.targets import parse_target_spec

    if not spec:
        return {}
    with error_context(prefix="--target: "):
        return parse_target_spec(spec)


def goals_file(ctx: click.Context, param: click.Parameter, path: str | None) -> Any:
    """A click callback: the goals table read from ``--goals FILE``."""
    from ragmeter.scoring.goals import read_goals_file

    return read_goals_file(path) if path else None


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
    "metric_params": (
        ("-P", "--param", "metric_params"),
        {
            "multiple": True,
            "callback": metric_params,
            "metavar": "FAMILY.PARAM=VALUE",
            "help": "Set one parameter of one metric family, e.g. -P retrieval.ks=1,5 or "
            "-P judged.max_contexts=20 (repeatable; 'ragmeter metrics --params' lists them).",
        },
    ),
    "name": (("--name",), {"help": "Name of the new run."}),
    "datasets": (
        ("--dataset", "-d", "datasets"),
        {
            "multiple": True,
            "help": "Dataset: 'demo', a .jsonl/.yaml/.csv/.parquet file or a label folder "
            "(repeatable).",
        },
    ),
    "field_map": (
        ("--field-map", "field_map"),
        {
            "multiple": True,
            "callback": field_map,
            "help": "FIELD=SOURCE[,FIELD=SOURCE...]: read case FIELD (or a path into it, "
            "e.g. gold_passages.0.doc_id) from SOURCE of each record; other fields are read "
            "by their own names (repeatable).",
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

"""Seed 002's ``eval`` options, kept as that seed spells them: ``--datasets a,b,c`` (beside the
repeatable ``--dataset``), ``--no-judge`` and ``--rag-url URL`` (docs/api.md maps them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ragmeter.cli.options import comma_list

F = TypeVar("F", bound=Callable[..., Any])

_OPTIONS = (
    click.option(
        "--datasets",
        "dataset_list",
        metavar="A,B,C",
        callback=comma_list,
        help="Comma-separated datasets (seed 002's form; added to any --dataset).",
    ),
    click.option(
        "--no-judge",
        is_flag=True,
        help="Run without an LLM judge, whatever the config file or RAGMETER_JUDGE names "
        "(judged metrics are skipped).",
    ),
    click.option(
        "--rag-url",
        metavar="URL",
        help="The RAG server to evaluate over HTTP (seed 002's name of --target URL).",
    ),
)


def seed002_options(function: F) -> F:
    """Add the options to a command."""
    for option in reversed(_OPTIONS):
        function = option(function)
    return function

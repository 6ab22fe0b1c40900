"""Seed 002's ``eval`` options, kept as that seed spells them: ``--datasets a,b,c`` (beside the
repeatable ``--dataset``), ``--no-judge`` and ``--rag-url URL`` (docs/api.md maps them)."""

from __future__ import annotations

import click

from ragmeter.cli.app import option_group
from ragmeter.cli.options import comma_list

seed002_options = option_group(
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

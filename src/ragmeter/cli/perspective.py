"""Seed 003's ``eval`` options (``--perspective``, ``--suite``, ``-v``, ``--save-trace``,
``--output``) and the files a run writes besides its JSON: the Markdown report and the traces."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ragmeter.cli.app import option_group
from ragmeter.cli.options import comma_list
from ragmeter.metrics.base import PERSPECTIVES

if TYPE_CHECKING:
    pass

DEFAULT_TRACE_DIR = "traces"

seed003_options = option_group(
    click.option(
        "--perspective",
        "perspectives",
        callback=comma_list,
        help=f"Comma-separated perspectives to run and show: {', '.join(PERSPECTIVES)} "
        "(default: all).",
    ),
    click.option(
        "--suite",
        type=click.Choice(["smoke", "full"]),
        help="smoke: a small seeded subset keeping every category (PR checks); full (default): "
        "every case.",
    ),
    click.option(
        "-v",
        "--verbose",
        is_flag=True,
        help="Print the full scorecard (default: headline metrics per perspective, goals and "
        "failures).",
    ),
    click.option(
        "--save-trace",
        "save_trace",
        is_flag=False,
        flag_value=DEFAULT_TRACE_DIR,
        default=None,
        metavar="[DIR]",
        help="Write one JSON line per failed case to DIR/PERSPECTIVE-RUN_ID.jsonl, a file per "
        f"perspective with a failure (default DIR: {DEFAULT_TRACE_DIR}).",
    ),
    click.option(
        "--output",
        "output",
        metavar="NAME",
        help="Name of the run files: NAME.json and NAME.md in the output folder (default: run id "
        "and time).",
    ),
)

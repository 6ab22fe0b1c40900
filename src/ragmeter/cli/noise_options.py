"""``eval`` options of the gates under noise (docs/statistics.md): ``--repeats N``,
``--failed-as exclude|zero|worst`` and ``--coverage-floor F``."""

from __future__ import annotations

import click

from ragmeter.cli.app import option_group
from ragmeter.config import DEFAULT_COVERAGE_FLOOR

noise_options = option_group(
    click.option(
        "--repeats",
        type=click.IntRange(min=1),
        help="Ask each case N times; per-case means feed the aggregates, the intervals resample "
        "cases, and each metric reports its within- and between-case variance.",
    ),
    click.option(
        "--failed-as",
        "failed_as",
        type=click.Choice(["exclude", "zero", "worst"]),
        help="How failed cases enter a value: left out with the coverage shown (exclude, the "
        "default), as 0, or as the scale's worst end.",
    ),
    click.option(
        "--coverage-floor",
        "coverage_floor",
        type=click.FloatRange(0.0, 1.0),
        help="A goal whose metric measured less than this share of the cases it applies to "
        f"is not measured (default {DEFAULT_COVERAGE_FLOOR:g}).",
    ),
)

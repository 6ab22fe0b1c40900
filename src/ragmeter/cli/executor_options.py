"""``eval`` options of where a run executes (docs/runs.md, "Executors: local and Ray"):
``--executor local|ray`` and ``--ray-address ADDR``."""

from __future__ import annotations

import click

from ragmeter.cli.app import option_group

executor_options = option_group(
    click.option(
        "--executor",
        type=click.Choice(["local", "ray"]),
        help="Where target calls and scoring run: this process (local, the default) or a Ray "
        "cluster (ray; needs pip install 'ragmeter[ray]'). Same scores either way.",
    ),
    click.option(
        "--ray-address",
        "ray_address",
        metavar="ADDR",
        help="The Ray cluster to use with --executor ray (auto, or ray://HOST:10001); without "
        "it a local Ray instance is started for the run.",
    ),
)

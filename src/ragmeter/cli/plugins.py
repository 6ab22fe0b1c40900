"""``ragmeter plugins`` and ``ragmeter metrics``: what the registry holds."""

from __future__ import annotations

import json

import click

from ragmeter.cli.app import console, main
from ragmeter.cli.options import shared
from ragmeter.reports.terminal import inert


@main.command("plugins")
@shared("json")
def plugins_command(as_json: bool) -> None:
    """List what the registry holds for each extension point (metric families, target types,
    judge providers, ...) with each entry's origin; metric families with each metric's group
    and kind."""
    from ragmeter.registry import registry
    from ragmeter.reports.plugins import plugin_listing, plugins_tables

    listing = plugin_listing(registry)
    if as_json:
        click.echo(json.dumps({**listing, "ignored": registry.shadowed}, indent=2))
        return
    for table in plugins_tables(listing):
        console.print(table)
    for line in registry.shadowed:  # a plugin entry whose name another entry holds
        console.print(f"[yellow]warning:[/yellow] {inert(line)}")


@main.command("metrics")
def metrics_command() -> None:
    """List the metric families and the metrics each produces (group, kind, inputs)."""
    from ragmeter.metrics.base import MetricSettings
    from ragmeter.registry import registry
    from ragmeter.reports.console import metrics_table

    rows = [
        (family, metric)
        for family in registry.names("metrics")
        for metric in registry.get("metrics", family)(MetricSettings())
    ]
    console.print(metrics_table(rows))

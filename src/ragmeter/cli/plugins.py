"""``ragmeter plugins`` and ``ragmeter metrics``: what the registry holds."""

from __future__ import annotations

import json

import click

from ragmeter.cli.app import console, main
from ragmeter.cli.options import shared
from ragmeter.reports.terminal import inert


@main.command("plugins")
@shared("json")
@click.option(
    "--markdown",
    "as_markdown",
    is_flag=True,
    help="Print the reference tables (metrics, family parameters, target types, judge "
    "providers, embedders, dataset loaders) as Markdown, plugins included.",
)
def plugins_command(as_json: bool, as_markdown: bool) -> None:
    """List what the registry holds for each extension point (metric families, target types,
    judge providers, ...) with each entry's origin; metric families with each metric's group
    and kind."""
    from ragmeter.registry import registry
    from ragmeter.reports.plugins import plugin_listing, plugins_tables

    if as_markdown:
        from ragmeter.reports.doc_tables import registry_markdown

        click.echo(registry_markdown(registry), nl=False)
        return
    listing = plugin_listing(registry)
    if as_json:
        click.echo(json.dumps({**listing, "ignored": registry.shadowed}, indent=2))
        return
    for table in plugins_tables(listing):
        console.print(table)
    for line in registry.shadowed:  # a plugin entry whose name another entry holds
        console.print(f"[yellow]warning:[/yellow] {inert(line)}")


@main.command("metrics")
@click.option(
    "--params", "show_params", is_flag=True, help="List each family's parameters (-P) instead."
)
@shared("json")
def metrics_command(show_params: bool, as_json: bool) -> None:
    """List the metric families and the metrics each produces (group, kind, inputs).

    Read from the families' declarations; with --params, the parameters that ``eval -P
    FAMILY.PARAM=VALUE`` sets."""
    from ragmeter.metrics.family import declarations
    from ragmeter.registry import registry
    from ragmeter.reports.console import metrics_table
    from ragmeter.reports.plugins import params_table, plugin_listing

    if show_params:
        families = plugin_listing(registry)["metrics"]
        if as_json:
            click.echo(json.dumps({f["name"]: f.get("params", []) for f in families}, indent=2))
        else:
            console.print(params_table(families))
        return
    rows = [
        (family, declared)
        for family in registry.names("metrics")
        for declared in declarations(family)
    ]
    if as_json:
        click.echo(json.dumps([declared.model_dump(mode="json") for _, declared in rows], indent=2))
        return
    console.print(metrics_table(rows))

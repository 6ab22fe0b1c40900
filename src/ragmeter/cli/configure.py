"""``ragmeter config show|schema``: the effective configuration and its JSON Schema."""

from __future__ import annotations

import json

import click
from rich.table import Table
from rich.text import Text

from ragmeter.cli.app import console, main


@main.group("config")
def config_group() -> None:
    """The eval configuration: the effective settings (show) and the file's JSON Schema."""


@config_group.command("show")
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    help="YAML config file, as 'ragmeter eval --config FILE' reads it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print {config, sources} as JSON.")
def show_command(config_file: str | None, as_json: bool) -> None:
    """The settings 'ragmeter eval --config FILE' would run with (defaults < file < RAGMETER_*
    environment; flags come last), each with its source, secrets redacted."""
    from ragmeter.config_view import config_rows, effective_config

    config, sources = effective_config(config_file)
    rows = config_rows(config, sources)
    if as_json:
        document = {
            "config": {key: value for key, value, _ in rows},
            "sources": {key: source for key, _, source in rows},
        }
        click.echo(json.dumps(document, indent=2))
        return
    table = Table("setting", "value", "source", title="effective eval config")
    for key, value, source in rows:
        shown = json.dumps(value) if not isinstance(value, str) else value
        table.add_row(
            Text(key), Text(shown), Text(source, style="dim" if source == "default" else "")
        )
    console.print(table)


@config_group.command("schema")
def schema_command() -> None:
    """The JSON Schema of the config file (editors validate and complete a file with it)."""
    from ragmeter.config_view import config_schema

    click.echo(json.dumps(config_schema(), indent=2))

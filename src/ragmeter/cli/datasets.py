"""``ragmeter datasets``: validate a dataset, print the case schema, import SQuAD."""

from __future__ import annotations

import json
import sys

import click

from ragmeter.cli.app import main
from ragmeter.cli.options import shared


@main.group("datasets")
def datasets_group() -> None:
    """Validate datasets and print their schema."""


@datasets_group.command("validate")
@click.argument("path")
@shared("field_map")
def validate_command(path: str, field_map: dict[str, str]) -> None:
    """Report every problem in a dataset as file:line + field; exit 1 if there is any."""
    from ragmeter.datasets import load_dataset, validate_dataset

    problems = validate_dataset(path, field_map or None)
    for problem in problems:
        click.echo(str(problem))
    if problems:
        click.echo(f"{len(problems)} problem(s)", err=True)
        sys.exit(1)
    click.echo(f"ok: {len(load_dataset(path, field_map or None))} cases")


@datasets_group.command("import-squad")
@click.argument("squad_json", type=click.Path(exists=True, dir_okay=False))
@click.argument("out_dir", type=click.Path(file_okay=False))
def import_squad_command(squad_json: str, out_dir: str) -> None:
    """Turn a SQuAD v1.1/v2.0 JSON file into OUT_DIR/cases.jsonl and a Markdown OUT_DIR/corpus/
    (one document a paragraph) for `ragmeter eval --dataset ... --corpus ...`."""
    from ragmeter.datasets.squad import import_squad

    cases_file, corpus, count = import_squad(squad_json, out_dir)
    click.echo(f"{count} cases -> {cases_file}; corpus -> {corpus}")
    click.echo(f"run: ragmeter eval --dataset {cases_file} --corpus {corpus}")


@datasets_group.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of a case."""
    from ragmeter.models import Case

    click.echo(json.dumps(Case.model_json_schema(by_alias=False), indent=2))

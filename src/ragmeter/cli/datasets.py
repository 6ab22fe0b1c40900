"""``ragmeter datasets``: list the known datasets (the default), their statistics, one dataset
in detail; validate a dataset, print the case schema, import SQuAD, RAGAS, deepeval, RAGBench."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ragmeter.cli.app import main
from ragmeter.cli.options import shared


@main.group("datasets", invoke_without_command=True)
@click.pass_context
def datasets_group(ctx: click.Context) -> None:
    """Datasets: what is available (the default: list), stats, show, validate, import."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_command)


@datasets_group.command("list")
@click.option(
    "--data",
    type=click.Path(file_okay=False),
    envvar="RAGMETER_DATA",
    show_envvar=True,
    help="A folder to search for local copies.",
)
def list_command(data: str | None = None) -> None:
    """The datasets ragmeter loads by name or format, how to point each at local files, and
    which local copies --data holds."""
    from rich.table import Table

    from ragmeter.cli.app import console
    from ragmeter.datasets.catalog import hub_available, local_matches
    from ragmeter.datasets.declarations import DATASETS

    table = Table("dataset", "aspects", "source", "--dataset form")
    for item in DATASETS:
        table.add_row(item.name, item.aspects, item.source, item.local_form)
    for name, origin in plugin_loaders():
        table.add_row(name, "", f"plugin: {origin}", f"{name}:ARGUMENT")
    console.print(table)
    if data:
        found = [(item.name, path) for item in DATASETS for path in local_matches(item, Path(data))]
        click.echo(f"local copies under {data}:" if found else f"no local copies under {data}")
        for name, path in found:
            click.echo(f"  {name}: --dataset {name}:{path}")
    hub = "installed" if hub_available() else "not installed (pip install datasets)"
    click.echo(f"by bare name (the hub): the 'datasets' library is {hub}; offline, give the file")


@datasets_group.command("stats")
@click.argument("specs", nargs=-1, required=True)
@shared("field_map")
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
def stats_command(specs: tuple[str, ...], field_map: dict[str, str], as_json: bool) -> None:
    """Counts, answerable share, categories and passage lengths of each dataset SPEC."""
    from ragmeter.cli.app import error_context
    from ragmeter.datasets.catalog import dataset_stats

    found = []
    for spec in specs:
        with error_context():
            found.append(dataset_stats(spec, field_map or None))
    if as_json:
        click.echo(json.dumps(found if len(found) > 1 else found[0], indent=2))
        return
    for stats in found:
        _print_stats(stats)


def _print_stats(stats: dict[str, Any]) -> None:
    share = stats["answerable_share"]
    click.echo(f"{stats['dataset']}: {stats['cases']} cases")
    click.echo(f"  answerable: {stats['answerable']} ({share:.1%})")
    click.echo(f"  with gold passages: {stats['with_gold_passages']}")
    click.echo(f"  with a reference answer: {stats['with_reference_answer']}")
    click.echo(f"  multi-hop: {stats['multi_hop']}")
    cats = ", ".join(f"{k} {v}" for k, v in list(stats["categories"].items())[:12])
    click.echo(f"  categories: {cats}")
    for key, label in (("question_words", "question words"), ("passage_words", "passage words")):
        if stats[key]:
            click.echo(f"  {label}: " + ", ".join(f"{k} {v:g}" for k, v in stats[key].items()))
    if stats["corpus"]:
        click.echo(
            f"  corpus: {stats['corpus_documents']} documents ({', '.join(stats['corpus'])})"
        )


@datasets_group.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def show_command(name: str, as_json: bool) -> None:
    """One dataset: what it measures, where it comes from, how to load it; given a loadable
    spec (NAME:PATH, a file), also its statistics and first case."""
    from ragmeter.cli.app import error_context, fail
    from ragmeter.datasets import load_dataset
    from ragmeter.datasets.catalog import dataset_stats
    from ragmeter.datasets.declarations import declared

    item = declared(name.partition(":")[0])
    loadable = ":" in name or Path(name).exists() or name == "demo"
    if item is None and not loadable:
        fail(f"unknown dataset {name!r}; `ragmeter datasets list` names them")
    info: dict[str, Any] = {"dataset": name}
    if item is not None:
        info.update(
            aspects=item.aspects, source=item.source, form=item.local_form, notes=item.notes
        )
    if loadable:
        with error_context():
            info["stats"] = dataset_stats(name)
            info["first_case"] = load_dataset(name)[0].model_dump(
                mode="json", exclude_defaults=True
            )
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    for key in ("aspects", "source", "form", "notes"):
        if key in info:
            click.echo(f"{key}: {info[key]}")
    if "stats" in info:
        _print_stats(info["stats"])
        click.echo("first case: " + json.dumps(info["first_case"])[:600])


@datasets_group.command("import")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(["ragas", "deepeval", "ragbench"]))
@click.argument("source")
@click.argument("out_dir", type=click.Path(file_okay=False))
def import_command(fmt: str, source: str, out_dir: str) -> None:
    """Import a RAGAS dataset, deepeval test cases or RAGBench rows as OUT_DIR/cases.jsonl plus
    their recorded answers OUT_DIR/responses.jsonl (for --target replay:)."""
    from ragmeter.cli.app import error_context

    with error_context():
        if fmt == "ragbench":
            from ragmeter.datasets.ragbench import load_ragbench, ragbench_responses

            cases = load_ragbench(source)
            lines = ragbench_responses(cases)
        else:
            from ragmeter.datasets.interop import import_rows

            cases, lines = import_rows(fmt, source)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "cases.jsonl").open("w", encoding="utf-8") as handle:
        for case in cases:
            handle.write(case.model_dump_json(exclude_defaults=True) + "\n")
    with (out / "responses.jsonl").open("w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    click.echo(f"{len(cases)} cases -> {out / 'cases.jsonl'}; {len(lines)} responses")
    click.echo(
        f"run: ragmeter eval --dataset {out / 'cases.jsonl'} "
        f"--target replay:{out / 'responses.jsonl'}"
    )


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
    from ragmeter.datasets.readings import dataset_readings, describe_readings

    readings = dataset_readings(path, field_map or None)
    read = f"; read {describe_readings(readings)}" if readings else ""
    click.echo(f"ok: {len(load_dataset(path, field_map or None))} cases{read}")


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


def plugin_loaders() -> list[tuple[str, str]]:
    """The dataset loaders packages registered (entry points ``ragmeter.loaders``), each with
    the distribution it came from."""
    from ragmeter.registry import registry

    return [
        (name, registry.origin("loaders", name))
        for name in registry.names("loaders", built_in=False)
    ]

"""The stored runs: ``ragmeter runs``, ``show``, ``export`` and ``stats``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from ragmeter.cli.app import console, errors, fail, main, open_run
from ragmeter.cli.options import shared
from ragmeter.config import RUNS_LIST_LIMIT
from ragmeter.reports.console import print_run
from ragmeter.reports.export import DEFAULT_FORMAT, EXPORT_FORMATS
from ragmeter.reports.validity import stored_reports, validity_section
from ragmeter.store.sqlite import RunStore


@main.command("runs")
@shared("store")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=RUNS_LIST_LIMIT,
    show_default=True,
    help="How many runs to list.",
)
def runs_command(store: str, limit: int) -> None:
    """List stored runs, newest first."""
    from ragmeter.reports.show import runs_table

    run_store = RunStore(store, create=False)
    try:
        console.print(runs_table(run_store.list_runs(limit)))
    finally:
        run_store.close()


@main.command("show")
@click.argument("run_id")
@shared("store")
@click.option("--cases", "show_cases", is_flag=True, help="Also list every case's outcome.")
@click.option(
    "--details",
    is_flag=True,
    help="Every case: question, answer, reference and each metric's value or reason "
    "(unsupported claims, missing keywords, judge reasons); with --json, as JSON.",
)
@click.option(
    "--failing",
    is_flag=True,
    help="With --details: only cases whose query or a score failed, or that scored low on a "
    "metric named with --metric.",
)
@click.option("--case", "case_ids", multiple=True, help="With --details: only these case ids.")
@click.option(
    "--max-chars",
    type=click.IntRange(min=0),
    default=600,
    show_default=True,
    help="With --details: characters of each question, answer, reference and error shown "
    "(0: whole; --json always gives them whole).",
)
@shared("json")
@click.option(
    "--by",
    "by_field",
    help="Print the breakdown by a case field (category, tags, difficulty, answerable, "
    "query_type, dataset, metadata.FIELD).",
)
@click.option(
    "--metric", "by_metrics", multiple=True, help="Limit --by or --details to these metrics."
)
def show_command(
    run_id: str,
    store: str,
    show_cases: bool,
    as_json: bool,
    by_field: str | None,
    by_metrics: tuple[str, ...],
    details: bool,
    failing: bool,
    case_ids: tuple[str, ...],
    max_chars: int,
) -> None:
    """Print one run's scorecard (a unique id prefix is enough)."""
    run_store, record = open_run(store, run_id)
    if by_field:
        from ragmeter.reports.console import breakdown_table
        from ragmeter.reports.show import breakdown_groups

        groups = breakdown_groups(run_store, record, by_field)
        console.print(breakdown_table(by_field, groups, list(by_metrics) or None))
        return
    if details:
        from ragmeter.reports.case_details import case_details, case_details_json
        from ragmeter.reports.show import select_cases

        cases = select_cases(record, run_store.get_cases(record.id), case_ids)
        arguments = (cases, run_store.get_results(record.id), run_store.get_scores(record.id))
        selection: dict[str, Any] = {
            "only_failing": failing,
            "metrics": list(by_metrics) or None,
            "scorecard": record.scorecard,
        }
        if as_json:
            click.echo(json.dumps(case_details_json(*arguments, **selection), indent=2))
            return
        for renderable in case_details(*arguments, **selection, max_chars=max_chars):
            console.print(renderable)
        return
    if as_json:
        from ragmeter.reports.json_report import run_document

        results, scores = run_store.get_results(record.id), run_store.get_scores(record.id)
        document = run_document(record, results, scores)
        validity = stored_reports(run_store, record.id)
        if validity:
            document["validity"] = [report.model_dump(mode="json") for report in validity]
        click.echo(json.dumps(document, indent=2))
        return
    print_run(record, console)
    validity = stored_reports(run_store, record.id)
    if validity:
        console.print(validity_section(validity))
    from ragmeter.reports.run_notes import unfinished_note

    note = unfinished_note(record, len(run_store.answered_case_ids(record.id)))
    if note is not None:
        errors.print(note, soft_wrap=True)
    if show_cases:
        from ragmeter.reports.console import cases_table

        console.print(cases_table(run_store.get_results(record.id)))


@main.command("export")
@click.argument("run_id")
@shared("store")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    default=DEFAULT_FORMAT,
    show_default=True,
    help="'responses': JSONL replayable with --target replay:FILE; 'json': the run file; "
    "'trec-run' / 'trec-qrels': the retrieval as TREC files (for trec_eval or 'ragmeter trec'); "
    "'csv': one row a case and metric (value, status, reason); 'csv-wide': one row a case, "
    "a column a metric; 'ragas' / 'deepeval': JSONL rows in their dataset formats.",
)
@click.option(
    "--output", "-o", required=True, type=click.Path(dir_okay=False), help="File to write."
)
def export_command(run_id: str, store: str, fmt: str, output: str) -> None:
    """Export a stored run: its responses as replayable JSONL, the run file, TREC files or
    CSV (docs/reports.md)."""
    from ragmeter.reports.export import export_run

    run_store, record = open_run(store, run_id)
    path = Path(output)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"-o {output}: cannot create its folder ({exc.strerror or exc}); pass a file path")
    if path.is_dir():
        fail(f"-o {output} is a folder; pass a file path")
    count = export_run(path, fmt, run_store, record)
    console.print(Text(f"wrote {path} ({count} cases)"))


@main.command("stats")
@click.argument("run_id", required=False)
@shared("datasets")
@shared("store")
@shared("json")
def stats_command(run_id: str | None, datasets: tuple[str, ...], store: str, as_json: bool) -> None:
    """Summarise datasets (counts, gold passages, question length) and, given RUN_ID, a run
    (errors by type, latency percentiles, metric coverage). No dataset and no run: the demo."""
    from ragmeter.datasets import load_datasets
    from ragmeter.reports.stats import dataset_stats, run_stats, stats_tables

    document: dict[str, Any] = {}
    if run_id is not None:
        run_store, record = open_run(store, run_id)
        document["run"] = run_stats(
            record, run_store.get_results(record.id), run_store.get_scores(record.id)
        )
        if not datasets:
            document["dataset"] = dataset_stats(run_store.get_cases(record.id))
    if datasets or run_id is None:
        document["dataset"] = dataset_stats(load_datasets(list(datasets) or ["demo"]))
    if as_json:
        click.echo(json.dumps(document, indent=2))
        return
    for table in stats_tables(document):
        console.print(table)

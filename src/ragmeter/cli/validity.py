"""``ragmeter validity``: a stored run's metrics measured against human labels."""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from rich.text import Text

from ragmeter.cli.app import console, errors, fail, main, open_run
from ragmeter.cli.options import pairs, shared
from ragmeter.errors import EXIT_GATE
from ragmeter.reports.terminal import inert
from ragmeter.scoring.validity import DEFAULT_RESAMPLES
from ragmeter.scoring.validity_report import DEFAULT_MIN_CASES


def _positive(ctx: click.Context, param: click.Parameter, value: int) -> int:
    if value < 1:
        raise click.BadParameter(f"must be at least 1, got {value}")
    return value


@main.command("validity")
@click.argument("run_id")
@click.option(
    "--labels",
    "labels_path",
    required=True,
    metavar="FILE.jsonl",
    help='JSONL of human labels, one {"case_id": ..., "label": ...} a line: true/false '
    "(binary) or a number (graded, e.g. 0-5); true or higher means a better case.",
)
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    metavar="METRIC",
    help="Measure only these metrics (default: all).",
)
@click.option(
    "--floor",
    "floors",
    multiple=True,
    metavar="METRIC=VALUE",
    callback=pairs("="),
    help="The lowest acceptable AUC (binary labels) or Spearman's rho (graded) "
    "of the metric (repeatable).",
)
@click.option(
    "--gate",
    is_flag=True,
    help="Exit 4 when a metric named with --floor is below its floor or was not measured.",
)
@click.option(
    "--min-cases",
    type=int,
    metavar="N",
    default=DEFAULT_MIN_CASES,
    show_default=True,
    callback=_positive,
    help="Fewest labelled cases a metric must have scored to be measured.",
)
@click.option(
    "--resamples",
    type=int,
    metavar="N",
    default=DEFAULT_RESAMPLES,
    show_default=True,
    callback=_positive,
    help="Bootstrap resamples of the cases for the intervals.",
)
@shared("seed")
@shared("json")
@shared("store")
def validity_command(
    run_id: str,
    labels_path: str,
    metrics: tuple[str, ...],
    floors: dict[str, str],
    gate: bool,
    min_cases: int,
    resamples: int,
    seed: int,
    as_json: bool,
    store: str,
) -> None:
    """Measure a stored run's metrics against human labels of its cases: AUC, balanced
    accuracy and Cohen's kappa (binary labels) or Spearman's rho and Kendall's tau-b (graded),
    with bootstrap intervals. The report is stored with the run and shown by 'ragmeter show'."""
    from ragmeter.reports.validity import validity_report
    from ragmeter.scoring.validity_report import (
        gate_failures,
        measure_validity,
        parse_floors,
        read_labels,
        stored_rows,
    )

    floor_values = parse_floors(floors)
    if gate and not floor_values:
        fail("--gate checks the metrics named with --floor METRIC=VALUE; name at least one")
    labels = read_labels(labels_path)
    run_store, record = open_run(store, run_id)
    try:
        if record.scorecard is not None:
            known = {m.name for m in record.scorecard.metrics}
            for metric in floor_values:
                if metric not in known:
                    fail(f"--floor {metric}: run {record.id} has no such metric")
        chosen = list(dict.fromkeys([*metrics, *floor_values])) if metrics else None
        report = measure_validity(
            record,
            [case.case_id for case in run_store.get_cases(record.id)],
            run_store.get_scores(record.id),
            labels,
            chosen,
            resamples=resamples,
            seed=seed,
            min_cases=min_cases,
        )
        context, results = stored_rows(report)
        run_store.save_validity(
            record.id, report.labels_sha256, report.labels_path, report.created_at, context, results
        )
    finally:
        run_store.close()
    failures = gate_failures(report, floor_values)
    if as_json:
        document: dict[str, Any] = report.model_dump(mode="json")
        if floor_values:
            document["floors"] = {"floors": floor_values, "failures": failures}
        click.echo(json.dumps(document, indent=2))
    else:
        for part in validity_report(report):
            console.print(part)
    for reason in failures:
        prefix = "gate" if gate else "below floor"
        errors.print(Text(f"{prefix}: ", style="red").append(inert(reason, markup=False)))
    if gate and failures:
        sys.exit(EXIT_GATE)

"""``ragmeter compare``: paired tests between stored runs or run files."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ragmeter.cli.app import console, error_context, errors, main
from ragmeter.cli.options import shared
from ragmeter.config import DEFAULT_COVERAGE_FLOOR
from ragmeter.errors import EXIT_GATE
from ragmeter.store.sqlite import RunStore

if TYPE_CHECKING:
    from ragmeter.scoring.power import Correction


@main.command("compare")
@click.argument("baseline")
@click.argument("candidates", nargs=-1, required=True)
@shared("store")
@click.option("--metric", "metrics", multiple=True, help="Compare only these metrics.")
@shared("alpha")
@shared("margin")
@click.option(
    "--correction",
    type=click.Choice(["holm", "bh", "none"]),
    default="holm",
    show_default=True,
    help="Correction of the gated metrics' p values for testing them together: Holm "
    "(family-wise error), bh (Benjamini-Hochberg, false discovery rate) or none.",
)
@click.option(
    "--fail-on-regression",
    is_flag=True,
    help="Exit 4 if a candidate regressed on any gated metric, or a gated metric could not be "
    "compared (not paired, paired on less than --coverage-floor of the cases, or missing from "
    "the candidate).",
)
@click.option(
    "--coverage-floor",
    type=click.FloatRange(0.0, 1.0),
    default=DEFAULT_COVERAGE_FLOOR,
    show_default=True,
    help="The share of the cases a gated metric must be paired on (the others failed or not "
    "reported) for the gate to rely on it; a run whose quality is measured on less cannot "
    "dominate in --pareto.",
)
@click.option("--gate-performance", is_flag=True, help="Also gate latency, cost and error metrics.")
@click.option("--pareto", is_flag=True, help="Mark runs on the quality/cost/latency frontier.")
@click.option("--quality", help="Quality axis for --pareto (default: the weighted score).")
@click.option("--all", "show_all", is_flag=True, help="Also list metrics that did not change.")
@shared("seed")
@shared("json")
def compare_command(
    baseline: str,
    candidates: tuple[str, ...],
    store: str,
    metrics: tuple[str, ...],
    alpha: float,
    margin: float,
    correction: Correction,
    fail_on_regression: bool,
    coverage_floor: float,
    gate_performance: bool,
    pareto: bool,
    quality: str | None,
    show_all: bool,
    seed: int,
    as_json: bool,
) -> None:
    """Compare CANDIDATE runs with BASELINE case by case (run ids or run JSON files).

    Paired tests on the shared cases: exact McNemar for 0/1 metrics, sign-flip permutation
    for the others; the gated metrics' p values corrected together (--correction); a
    regression is significantly worse, after the correction, by at least --margin. Each
    metric's MDE is the smallest change the comparison could detect (power 0.8).
    """
    from ragmeter.reports.compare_console import (
        comparison_table,
        flips_lines,
        gate_failure_lines,
        methods_table,
        one_sided_lines,
        pareto_table,
    )
    from ragmeter.reports.pareto import headline_metrics, pareto_document, pareto_points
    from ragmeter.reports.run_notes import compare_regressions
    from ragmeter.scoring.compare import CaseValues, compare_runs

    run_store = _open_store(store, [baseline, *candidates])
    try:
        with error_context(suffix=f" ({store})"):
            base = CaseValues.load(run_store, baseline)
            others = [CaseValues.load(run_store, c) for c in candidates]
            comparisons = [
                compare_runs(
                    base,
                    other,
                    alpha=alpha,
                    margin=margin,
                    metrics=list(metrics) or None,
                    gate_performance=gate_performance,
                    seed=seed,
                    correction=correction,
                    coverage_floor=coverage_floor,
                    require_shared=True,
                )
                for other in others
            ]
    finally:
        run_store.close()
    records = [base.record, *(other.record for other in others)]
    points, dropped = pareto_points(records, quality, coverage_floor) if pareto else ([], [])
    if as_json:
        document: dict[str, Any] = {"comparisons": [c.model_dump(mode="json") for c in comparisons]}
        if pareto:
            document["pareto"] = pareto_document(points, quality, dropped)
        click.echo(json.dumps(document, indent=2))
    else:
        for comparison in comparisons:
            console.print(comparison_table(comparison, show_all))
            for line in [*flips_lines(comparison.rows), *one_sided_lines(comparison)]:
                console.print(f"  {line}", highlight=False, markup=False)
        if len(records) > 2 or show_all:
            console.print(methods_table(records, list(metrics) or headline_metrics(records[0])))
        if pareto:
            console.print(pareto_table(points, quality or "weighted score", dropped))
    regressions = compare_regressions(comparisons)
    uncompared = gate_failure_lines(comparisons)
    for line in [*regressions, *uncompared]:
        errors.print(line)
    if fail_on_regression and (regressions or uncompared):
        sys.exit(EXIT_GATE)


def _open_store(store: str, references: list[str]) -> RunStore:
    """The run store, never created here; run files alone need none (an in-memory one)."""
    files = all(ref.endswith(".json") or Path(ref).is_file() for ref in references)
    if files and not Path(store).is_file():
        return RunStore(":memory:")
    return RunStore(store, create=False)

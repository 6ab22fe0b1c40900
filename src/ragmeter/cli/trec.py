"""``ragmeter trec``: trec_eval-exact evaluation of TREC files."""

from __future__ import annotations

import click

from ragmeter.cli.app import main
from ragmeter.config import DEFAULT_NDCG_GAIN, DEFAULT_RELEVANCE_LEVEL, DEFAULT_TREC_MEASURES


@main.command("trec")
@click.argument("qrels", type=click.Path(exists=True, dir_okay=False))
@click.argument("run", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-m",
    "--measure",
    "measures",
    multiple=True,
    help="e.g. ndcg_cut.10, P.5, recall.100, map, recip_rank, recip_rank.10, Rprec, "
    f"success.5, f1.5 (repeatable; default: {', '.join(DEFAULT_TREC_MEASURES)}).",
)
@click.option("-q", "per_query", is_flag=True, help="Also print every query's values.")
@click.option(
    "-c",
    "complete",
    is_flag=True,
    help="Average over every qrels query (missing in the run = 0), like trec_eval -c.",
)
@click.option(
    "-l",
    "--level",
    "relevance_level",
    default=DEFAULT_RELEVANCE_LEVEL,
    show_default=True,
    help="Grade at which a document counts as relevant for binary measures.",
)
@click.option(
    "--gain",
    type=click.Choice(["linear", "exponential"]),
    default=DEFAULT_NDCG_GAIN,
    show_default=True,
    help="nDCG gain: the grade (trec_eval) or 2^grade - 1.",
)
def trec_command(
    qrels: str,
    run: str,
    measures: tuple[str, ...],
    per_query: bool,
    complete: bool,
    relevance_level: int,
    gain: str,
) -> None:
    """Evaluate a TREC run file against TREC qrels, printing trec_eval-style lines."""
    from ragmeter.datasets.trec import read_qrels, read_run
    from ragmeter.metrics.ir import parse_measure
    from ragmeter.metrics.ir_batch import evaluate_batch

    parsed = list(dict.fromkeys(parse_measure(name) for name in measures or DEFAULT_TREC_MEASURES))
    judgments, ranking = read_qrels(qrels), read_run(run)
    result = evaluate_batch(
        judgments,
        ranking,
        parsed,
        relevance_level,
        "exponential" if gain == "exponential" else "linear",
        complete,
    )
    if per_query:
        for position, query_id in enumerate(result.query_ids):
            for measure in parsed:
                value = result.values[measure.label][position]
                click.echo(f"{measure.label:<22}\t{query_id}\t{value:.4f}")
    click.echo(f"{'num_q':<22}\tall\t{len(result.query_ids)}")
    for measure in parsed:
        click.echo(f"{measure.label:<22}\tall\t{result.mean(measure.label):.4f}")

"""``ragmeter trec``: trec_eval 10.0 on TREC files, its measures, options and output lines.

The command imports nothing heavy until it runs (click only), so a launcher can start it
without the rest of the CLI: ``python -m ragmeter.cli.trec QRELS RUN ...`` does, and
:func:`standalone` is the entry point for that.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

DEFAULT_LEVEL = 1  # trec_eval's -l default


@click.command("trec")
@click.argument("qrels", type=click.Path(exists=True, dir_okay=False))
@click.argument("run", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-m",
    "--measure",
    "measures",
    multiple=True,
    help="trec_eval's -m: a measure (map, P.5,10, ndcg_cut.10, ndcg.1=3,2=9, utility.1,-1,0,0, "
    "recip_rank.10 = MRR@10, ...) or a set (official, all_trec, set); repeatable; default "
    "official.",
)
@click.option("-q", "per_query", is_flag=True, help="Also print every query's values.")
@click.option(
    "-c",
    "complete",
    is_flag=True,
    help="Average over every qrels query; one the run lacks scores as trec_eval -c scores it.",
)
@click.option("-n", "--no-summary", "no_summary", is_flag=True, help="Print no summary lines.")
@click.option(
    "-l",
    "--level",
    "relevance_level",
    type=click.IntRange(min=0),
    default=DEFAULT_LEVEL,
    show_default=True,
    help="Grade at which a document counts as relevant for binary measures.",
)
@click.option(
    "-M",
    "--max-retrieved",
    "max_retrieved",
    type=click.IntRange(min=0),
    default=None,
    help="Evaluate only each query's top N documents.",
)
@click.option(
    "-J",
    "--judged-only",
    "judged_only",
    is_flag=True,
    help="Drop the documents the qrels do not judge before computing (trec_eval -J).",
)
@click.option(
    "-N",
    "--num-docs",
    "num_docs",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Documents in the collection (utility's fourth coefficient).",
)
@click.option(
    "-R",
    "--rel-format",
    "rel_format",
    default="qrels",
    show_default=True,
    help="Judgment format: qrels only (trec_eval's prefs and qrels_jg are not read).",
)
@click.option(
    "--gain",
    type=click.Choice(["linear", "exponential"]),
    default="linear",
    show_default=True,
    help="A level's default gain: the grade (trec_eval) or 2^grade - 1.",
)
def trec_command(
    qrels: str,
    run: str,
    measures: tuple[str, ...],
    per_query: bool,
    complete: bool,
    no_summary: bool,
    relevance_level: int,
    max_retrieved: int | None,
    judged_only: bool,
    num_docs: int,
    rel_format: str,
    gain: str,
) -> None:
    """Evaluate a TREC run file against TREC qrels, printing trec_eval's lines."""
    from ragmeter.metrics.ir import MeasureError, evaluate_ranked, expand_measures, read_ranked
    from ragmeter.metrics.ir.report import trec_lines

    if rel_format != "qrels":
        raise MeasureError(
            f"-R {rel_format}: ragmeter trec reads qrels judgments only; trec_eval's preference "
            "(prefs, qrels_prefs) and judgment-group (qrels_jg) formats are not supported"
        )
    chosen = expand_measures(measures or ("official",))
    ranked = read_ranked(qrels, run, complete)
    result = evaluate_ranked(
        ranked,
        chosen,
        relevance_level,
        "exponential" if gain == "exponential" else "linear",
        judged_only=judged_only,
        max_retrieved=max_retrieved,
        num_docs=num_docs,
    )
    lines = trec_lines(
        result, chosen, per_query=per_query, totals=not no_summary, runid=ranked.runid
    )
    text = "\n".join(lines)
    sys.stdout.write(text + "\n" if text else "")


def standalone(args: Sequence[str] | None = None) -> None:
    """Run ``ragmeter trec`` on its own: errors as ``error: ...`` lines with their exit code."""
    from ragmeter.errors import RagmeterError

    try:
        trec_command.main(
            list(args) if args is not None else None,
            prog_name="ragmeter trec",
            standalone_mode=False,
        )
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except RagmeterError as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    standalone()

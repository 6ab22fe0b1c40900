"""``ragmeter generate``: a dataset written from a corpus by an LLM judge."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table
from rich.text import Text

from ragmeter.cli.app import console, errors, fail, main
from ragmeter.cli.options import comma_list, shared

if TYPE_CHECKING:
    from ragmeter.generate import Corpus, Options, Summary
    from ragmeter.judges import JudgeSettings
    from ragmeter.models import Case

EXIT_NO_CASES = 1
SHOWN_REJECTIONS = 10  # rejection details printed (all of them are in --json)


@main.command("generate")
@click.argument("corpus")
@shared("judge", help="LLM judge that writes and validates the cases: openai:MODEL, "
        "anthropic:MODEL, http://HOST:PORT/v1#MODEL or local:PATH.gguf.")  # fmt: skip
@click.option("-n", "--count", "count", default=20, show_default=True, help="Cases to write.")
@click.option(
    "--categories",
    "--kinds",
    "categories",
    callback=comma_list,
    help="Comma-separated case categories: factual, multi_hop, numeric, list, unanswerable "
    "(default: all five, mixed 30/20/20/10/20 percent).",
)
@shared("seed", help="Seed of the plan: which chunks each category is written from.")
@click.option("-o", "--output", required=True, help="JSONL file the cases are written to.")
@click.option("--corpus-name", help="Dataset name and case id prefix (default: the corpus name).")
@shared("max_judge_cost", help="Stop generating at this many USD of judge cost.")
@shared("store", help="SQLite store where every judge call is recorded (and cached).")
@click.option("--no-judge-cache", is_flag=True, help="Ask the judge again instead of reusing "
              "recorded replies to the same prompts.")  # fmt: skip
@click.option(
    "--attempts",
    default=2,
    show_default=True,
    help="Generation attempts per case asked, at most (a rejected attempt is replaced by "
    "one written from other chunks).",
)
@click.option("--concurrency", default=2, show_default=True, help="Judge calls at a time.")
@shared("json", help="Print the summary as JSON.")
def generate_command(
    corpus: str,
    judge: str | None,
    count: int,
    categories: list[str] | None,
    seed: int,
    output: str,
    corpus_name: str | None,
    max_judge_cost: float | None,
    store: str,
    no_judge_cache: bool,
    attempts: int,
    concurrency: int,
    as_json: bool,
) -> None:
    """Write a dataset of COUNT cases from CORPUS with an LLM judge.

    CORPUS is what `ragmeter eval --corpus` takes (a Markdown folder, cranfield:DIR, beir:DIR,
    ...). Each case is written from the reference pipeline's chunks, keeps their ids as gold
    passages, and is kept only if a second judge call confirms it (see docs/generate.md).
    Exit 1 when no case was kept (no file is written); fewer cases than asked are written
    with a warning.
    """
    from ragmeter.generate import CATEGORIES, Options, open_corpus
    from ragmeter.judges import judge_settings

    if not judge:
        fail("--judge is required: the judge writes and validates the cases")
    if count < 1:
        fail("-n/--count must be at least 1")
    if attempts < 1:
        fail("--attempts must be at least 1")
    if concurrency < 1:
        fail("--concurrency must be at least 1")
    chosen = tuple(categories or CATEGORIES)
    unknown = [category for category in chosen if category not in CATEGORIES]
    if unknown or len(set(chosen)) != len(chosen):
        fail(f"--categories {','.join(chosen)}: name each of {', '.join(CATEGORIES)} at most once")
    settings = judge_settings(
        judge,
        store=store,
        use_cache=not no_judge_cache,
        max_cost=max_judge_cost,
        concurrency=concurrency,
    )
    opened = open_corpus(corpus)
    name = corpus_name or _default_name(corpus)
    options = Options(
        n=count,
        categories=tuple(k for k in CATEGORIES if k in chosen),
        seed=seed,
        dataset=name,
        attempts_per_case=attempts,
    )
    cases, summary = asyncio.run(_generate(opened, settings, options))
    path = Path(output)
    if cases:
        from ragmeter.generate import write_cases

        write_cases(path, cases)
        summary.output = str(path)
    if as_json:
        click.echo(json.dumps(summary.as_dict(), indent=2))
    else:
        _print_summary(summary)
    if not cases:
        fail(
            f"no case kept out of {count} asked; nothing written to {output}"
            + (f" ({summary.stopped})" if summary.stopped else ""),
            EXIT_NO_CASES,
        )
    if len(cases) < count:
        errors.print(
            Text(
                f"warning: wrote {len(cases)} of the {count} cases asked to {output}"
                + (f" ({summary.stopped})" if summary.stopped else "; see the rejections"),
                style="yellow",
            ),
            soft_wrap=True,
        )


def _default_name(corpus: str) -> str:
    name, sep, argument = corpus.partition(":")
    stem = Path(argument if sep and not Path(corpus).exists() else corpus).name or name
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in stem) or "generated"


async def _generate(
    corpus: Corpus, settings: JudgeSettings, options: Options
) -> tuple[list[Case], Summary]:
    from ragmeter.generate import generate
    from ragmeter.judges import preflight_judge
    from ragmeter.judges.cache import JudgeStore
    from ragmeter.judges.cost import Budget, price_for
    from ragmeter.judges.session import JudgeSession

    await preflight_judge(str(settings.spec), timeout_s=settings.timeout_s)
    judge = settings.build()
    try:
        if settings.max_cost is not None and price_for(judge.model, settings.prices) is None:
            fail(f"--max-judge-cost is set but judge {judge.model} has no price")
        store = JudgeStore(settings.store)
        try:
            session = JudgeSession(
                judge,
                store,
                use_cache=settings.use_cache,
                prices=settings.prices,
                budget=Budget(settings.max_cost),
                concurrency=settings.concurrency,
            )
            return await generate(corpus, session, options)
        finally:
            store.close()
    finally:
        await judge.aclose()


def _print_summary(summary: Summary) -> None:
    table = Table(title=f"generated {summary.kept} of {summary.asked} cases")
    for column in ("category", "asked", "attempts", "kept", "rejected"):
        table.add_column(column, justify="left" if column in ("category", "rejected") else "right")
    for category, count in summary.categories.items():
        reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(count.rejected.items()))
        if count.exhausted and count.kept < count.asked:
            reasons = ", ".join(filter(None, [reasons, "out of chunks"]))
        table.add_row(
            category, str(count.asked), str(count.attempts), str(count.kept), Text(reasons or "-")
        )
    console.print(table)
    for rejection in summary.rejections[:SHOWN_REJECTIONS]:
        line = (
            f"  rejected {rejection.category} ({', '.join(rejection.chunks)}): {rejection.reason}"
        )
        console.print(Text(f"{line}: {rejection.detail}"), soft_wrap=True)
    if len(summary.rejections) > SHOWN_REJECTIONS:
        more = len(summary.rejections) - SHOWN_REJECTIONS
        console.print(f"  ... and {more} more rejections (--json lists them all)")
    cost = "unknown (no price)" if summary.cost_usd is None else f"{summary.cost_usd:.4f} USD"
    console.print(
        Text(
            f"judge {summary.judge_model}: {summary.requests} requests, {summary.cache_hits} "
            f"cached, {summary.prompt_tokens}+{summary.completion_tokens} tokens, cost {cost}"
        ),
        soft_wrap=True,
    )
    if summary.output:
        console.print(Text(f"wrote {summary.kept} cases -> {summary.output}"), soft_wrap=True)

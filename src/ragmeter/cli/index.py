"""``ragmeter index``: build the reference pipeline's index for a dataset's corpus."""

from __future__ import annotations

import json

import click

from ragmeter.cli.app import error_context, fail, main


@main.command("index")
@click.argument("corpus")
@click.option("--force", is_flag=True, help="Rebuild even when the cached index is current.")
@click.option("--max-chunk-words", default=400, show_default=True, help="Words per chunk.")
@click.option("--json", "as_json", is_flag=True, help="Print the index manifest as JSON.")
def index_command(corpus: str, force: bool, max_chunk_words: int, as_json: bool) -> None:
    """Index CORPUS for the reference pipeline, so `ragmeter eval --dataset CORPUS` answers
    over it.

    CORPUS is a dataset spec that carries documents: cranfield:DIR, beir:DIR (or a BEIR or
    Cranfield folder), trec:DIR or trec:topics=F,qrels=F,docs=P, squad_v2:FILE,
    hotpotqa:FILE, msmarco:FILE, qasper:FILE, ragbench:FILE|DIR. The index is cached under
    $RAGMETER_CACHE (default ~/.cache/ragmeter)/index/, keyed by the corpus and its content.
    """
    from ragmeter.datasets.corpus import corpus_spec
    from ragmeter.datasets.declarations import CORPUS_READERS
    from ragmeter.targets.reference.corpus_index import as_corpus_spec, build_index

    name, sep, argument = corpus.partition(":")
    spec = corpus_spec(name, argument) if sep and name in CORPUS_READERS else as_corpus_spec(corpus)
    if spec is None:
        known = ", ".join(f"{n}:PATH" for n in sorted(CORPUS_READERS))
        fail(
            f"{corpus}: not a corpus ragmeter can index; give {known}, or a BEIR/Cranfield "
            "folder (a Markdown folder needs no index: pass it to eval --corpus)"
        )
    if max_chunk_words < 1:
        fail("--max-chunk-words must be at least 1")
    with error_context(prefix=f"{corpus}: "):
        folder, manifest = build_index(spec, max_chunk_words, force=force)
    if as_json:
        click.echo(json.dumps({**manifest, "path": str(folder)}, indent=2))
        return
    click.echo(
        f"indexed {manifest['documents']} documents as {manifest['chunks']} chunks -> {folder}"
    )
    click.echo(f"run: ragmeter eval --dataset {corpus}")

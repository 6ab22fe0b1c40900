"""``ragmeter reference-server``: the reference pipeline over HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ragmeter.cli.app import main
from ragmeter.config import DEFAULT_TOP_K, SERVER_HOST, SERVER_PORT

if TYPE_CHECKING:
    from ragmeter.targets.reference.chunking import Chunk
    from ragmeter.targets.reference.pipeline import PipelineSettings


@main.command("reference-server")
@click.option(
    "--corpus",
    multiple=True,
    help="Markdown folder, or a dataset's corpus (ragbench:SUBSET|DIR, hotpotqa:FILE, "
    "squad_v2:FILE, beir:DIR, cranfield:DIR, ...) so its gold ids can match; repeat it to "
    "serve several in one index (default: the demo).",
)
@click.option("--host", default=SERVER_HOST, show_default=True, help="Address to listen on.")
@click.option("--port", default=SERVER_PORT, show_default=True, help="Port (0: any free one).")
@click.option("--top-k", default=DEFAULT_TOP_K, show_default=True, help="Chunks a query returns.")
def reference_server_command(corpus: tuple[str, ...], host: str, port: int, top_k: int) -> None:
    """Serve the reference RAG pipeline over HTTP: POST /query, GET /health, GET /models/info."""
    from ragmeter.demo import DEMO_CORPUS
    from ragmeter.targets.reference.pipeline import PipelineSettings, ReferencePipeline
    from ragmeter.targets.reference.server import make_server

    settings = PipelineSettings(top_k=top_k)
    pipeline = ReferencePipeline(served_chunks(corpus or (str(DEMO_CORPUS),), settings), settings)
    server = make_server(pipeline, host, port)
    click.echo(
        f"reference server on http://{host}:{server.server_address[1]} "
        f"({len(pipeline.chunks)} chunks)",
        err=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def served_chunks(corpora: tuple[str, ...], settings: PipelineSettings) -> list[Chunk]:
    """The chunks of every corpus named (a Markdown folder or a corpus spec, as ``eval
    --corpus`` takes), in one list: a dataset's questions are then answered over its own
    documents, under the ids its gold passages name."""
    from ragmeter.datasets.problems import DatasetError
    from ragmeter.targets.reference.chunking import chunk_corpus
    from ragmeter.targets.reference.corpus_index import as_corpus_spec, load_chunks

    chunks: list[Chunk] = []
    for corpus in corpora:
        spec = as_corpus_spec(corpus)
        if spec is None and not Path(corpus).is_dir():
            raise click.BadParameter(
                f"{corpus!r} is neither a folder nor a corpus spec (NAME:ARG)",
                param_hint="--corpus",
            )
        try:
            if spec is not None:
                chunks += load_chunks(spec, settings.max_chunk_words)
            else:
                chunks += chunk_corpus(Path(corpus), settings.max_chunk_words)
        except DatasetError as exc:
            raise click.BadParameter(str(exc), param_hint="--corpus") from None
    return chunks

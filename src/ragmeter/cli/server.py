"""``ragmeter reference-server``: the reference pipeline over HTTP."""

from __future__ import annotations

from pathlib import Path

import click

from ragmeter.cli.app import main
from ragmeter.config import DEFAULT_TOP_K, SERVER_HOST, SERVER_PORT


@main.command("reference-server")
@click.option(
    "--corpus", type=click.Path(file_okay=False), help="Markdown corpus (default: the demo)."
)
@click.option("--host", default=SERVER_HOST, show_default=True, help="Address to listen on.")
@click.option("--port", default=SERVER_PORT, show_default=True, help="Port (0: any free one).")
@click.option("--top-k", default=DEFAULT_TOP_K, show_default=True, help="Chunks a query returns.")
def reference_server_command(corpus: str | None, host: str, port: int, top_k: int) -> None:
    """Serve the reference RAG pipeline over HTTP: POST /query, GET /health, GET /models/info."""
    from ragmeter.demo import DEMO_CORPUS
    from ragmeter.targets.reference.pipeline import PipelineSettings, ReferencePipeline
    from ragmeter.targets.reference.server import make_server

    pipeline = ReferencePipeline.from_corpus(
        Path(corpus) if corpus else DEMO_CORPUS, PipelineSettings(top_k=top_k)
    )
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

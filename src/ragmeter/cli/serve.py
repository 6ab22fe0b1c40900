"""``ragmeter serve``: the local web UI over a store."""

from __future__ import annotations

import click

from ragmeter.cli.app import console, errors, fail, main
from ragmeter.cli.options import shared

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
LOOPBACK = ("127.0.0.1", "localhost", "::1")
NO_AUTH_WARNING = (
    "warning: listening on {host}, not only on this machine: the UI has no authentication, "
    "anyone who can reach {host}:{port} can read every run in {store}"
)


@main.command("serve")
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=int, help="Port.")
@shared("store")
def serve_command(host: str, port: int, store: str) -> None:
    """Browse the store in a web browser: runs, scorecards, cases, comparisons (read-only)."""
    try:
        import uvicorn

        from ragmeter.web.app import create_app
    except ImportError as exc:
        fail(
            f"the web UI needs Starlette and uvicorn ({exc.name} is missing): "
            "pip install 'ragmeter[web]'"
        )
    # a StoreError exits with its message (cli/app.py); requests for other host names (DNS
    # rebinding) get a 400, unless the address is a wildcard
    app = create_app(store, host=host)
    if host not in LOOPBACK:
        errors.print(
            NO_AUTH_WARNING.format(host=host, port=port, store=store),
            style="bold yellow",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    shown = f"[{host}]" if ":" in host else host
    console.print(
        f"ragmeter UI on http://{shown}:{port}/ (store {store}, read-only); Ctrl+C stops it",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)

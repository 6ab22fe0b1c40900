"""The Starlette application of ``ragmeter serve``: pages and their JSON twins over a run
store opened read-only.

=========================================  ==============================================
page                                       JSON twin
=========================================  ==============================================
``/`` (runs: ``?q= &status= &dataset=``)   ``/api/runs``
``/runs/{id}`` (``?page= &status=``        ``/api/runs/{id}``
``&category= &failing=``)
(live progress on the run page)            ``/api/runs/{id}/progress``
``/runs/{id}/cases/{case_id}``             ``/api/runs/{id}/cases/{case_id}``
``/runs/{id}/case?id=CASE_ID`` (any id)     ``/api/runs/{id}/case?id=CASE_ID``
``/compare?runs=A,B[,C]``                  ``/api/compare?runs=A,B[,C]``
=========================================  ==============================================

``?runs=A,B`` compares in the given order (A is the baseline); repeated ``runs`` (or ``run``)
parameters, as the runs list's checkboxes send them, are ordered by creation time (the oldest
is the baseline).

Requests whose ``Host`` is not this machine (``127.0.0.1``, ``localhost``, ``[::1]``) or the
``--host`` given get a 400 (Starlette's ``TrustedHostMiddleware``): a page on another site
cannot reach the UI through DNS rebinding. Listening on a wildcard address (``0.0.0.0``,
``::``) allows any host (``ragmeter serve`` warns). Non-finite numbers (Inf, NaN) in the store
are sent as ``null``.

Every response carries a Content-Security-Policy (scripts and styles from the app only, no
inline script), ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer`` and
``X-Frame-Options: DENY``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragmeter.errors import StoreError
from ragmeter.reports.html.page import finite_only
from ragmeter.web import case_page, pages, run_pages, views
from ragmeter.web.db import NotFound, ReadOnlyStore, connect
from ragmeter.web.html import error_page
from ragmeter.web.static import APP_JS, STYLE_CSS

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self';"
    " connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self';"
    " frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]
FAVICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
    '<rect width="16" height="16" rx="3" fill="#0b57d0"/>'
    '<rect x="3" y="9" width="2" height="4" fill="#fff"/>'
    '<rect x="7" y="6" width="2" height="7" fill="#fff"/>'
    '<rect x="11" y="3" width="2" height="10" fill="#fff"/></svg>'
)


LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def allowed_hosts(host: str = "127.0.0.1") -> list[str]:
    """The ``Host`` header values the app answers: this machine's names, plus ``host`` (the
    address it listens on) unless that is a wildcard, which allows any."""
    if host in WILDCARD_HOSTS or host == "*":
        return ["*"]
    named = f"[{host.strip('[]')}]" if ":" in host else host
    return [*LOCAL_HOSTS, *([named.lower()] if named.lower() not in LOCAL_HOSTS else [])]


class SafeJSON(JSONResponse):
    """JSON with non-finite numbers (not JSON) as ``null``, so a foreign value never fails a
    response."""

    def render(self, content: Any) -> bytes:
        return super().render(finite_only(content))


class SecurityHeaders:
    """Adds :data:`SECURITY_HEADERS` to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in SECURITY_HEADERS}
                headers = [h for h in message.get("headers", []) if h[0] not in names]
                message["headers"] = [*headers, *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, sending)


def _failure(request: Request, status: int, message: str) -> Response:
    if request.url.path.startswith("/api/"):
        return SafeJSON({"error": message, "status": status}, status_code=status)
    return HTMLResponse(error_page(status, message), status_code=status)


def create_app(store_path: str | Path, host: str = "127.0.0.1") -> Starlette:
    """The web UI over the store at ``store_path`` (StoreError if it is not a run store),
    answering requests for this machine and for ``host`` (:func:`allowed_hosts`)."""
    path = Path(store_path)
    connect(path).close()  # fail now, not on the first request

    def endpoint(handler: Callable[[Request, ReadOnlyStore], Response]) -> Any:
        def run(request: Request) -> Response:
            try:
                store = ReadOnlyStore(path)
            except StoreError as exc:
                return _failure(request, 500, str(exc))
            try:
                return handler(request, store)
            except NotFound as exc:
                return _failure(request, 404, str(exc))
            except ValueError as exc:
                return _failure(request, 400, str(exc))
            except StoreError as exc:
                return _failure(request, 500, str(exc))
            finally:
                store.close()

        return run

    def query(request: Request) -> dict[str, str]:
        return dict(request.query_params)

    def record_of(request: Request, store: ReadOnlyStore) -> Any:
        return store.get_run(request.path_params["run_id"])

    def runs_html(request: Request, store: ReadOnlyStore) -> Response:
        document, _ = views.runs_view(store, query(request))
        return HTMLResponse(pages.runs_page(document))

    def runs_api(request: Request, store: ReadOnlyStore) -> Response:
        document, _ = views.runs_view(store, query(request))
        return SafeJSON(document)

    def run_html(request: Request, store: ReadOnlyStore) -> Response:
        record = record_of(request, store)
        document = views.run_view(store, record, query(request))
        return HTMLResponse(run_pages.run_page(record, document))

    def run_api(request: Request, store: ReadOnlyStore) -> Response:
        record = record_of(request, store)
        return SafeJSON(views.run_view(store, record, query(request)))

    def progress_api(request: Request, store: ReadOnlyStore) -> Response:
        return SafeJSON(store.progress(record_of(request, store)))

    def case_id(request: Request) -> str:
        if "case_id" in request.path_params:
            return str(request.path_params["case_id"])
        if "id" not in request.query_params:
            raise ValueError("which case? /runs/RUN/case?id=CASE_ID")
        return request.query_params["id"]

    def case_html(request: Request, store: ReadOnlyStore) -> Response:
        record = record_of(request, store)
        document = views.case_view(store, record, case_id(request))
        return HTMLResponse(case_page.case_page(record, document))

    def case_api(request: Request, store: ReadOnlyStore) -> Response:
        record = record_of(request, store)
        return SafeJSON(views.case_view(store, record, case_id(request)))

    def compare_document(request: Request, store: ReadOnlyStore) -> dict[str, Any]:
        values = [*request.query_params.getlist("runs"), *request.query_params.getlist("run")]
        ids, by_created = views.compared_ids(values)
        return views.compare_view(store, ids, by_created)

    def compare_html(request: Request, store: ReadOnlyStore) -> Response:
        document = compare_document(request, store)
        records = [store.get_run(run["id"]) for run in document["runs"]]
        show = request.query_params.get("show", "")
        return HTMLResponse(pages.compare_page(document, show, records))

    def compare_api(request: Request, store: ReadOnlyStore) -> Response:
        return SafeJSON(compare_document(request, store))

    def asset(body: str, media_type: str) -> Callable[[Request], Response]:
        def serve(request: Request) -> Response:
            return Response(
                body,
                media_type=media_type,
                headers={"Cache-Control": "no-cache"},
            )

        return serve

    routes = [
        Route("/", endpoint(runs_html)),
        Route("/api/runs", endpoint(runs_api)),
        Route("/runs/{run_id}", endpoint(run_html)),
        Route("/api/runs/{run_id}", endpoint(run_api)),
        Route("/api/runs/{run_id}/progress", endpoint(progress_api)),
        Route("/runs/{run_id}/cases/{case_id:path}", endpoint(case_html)),
        Route("/api/runs/{run_id}/cases/{case_id:path}", endpoint(case_api)),
        Route("/runs/{run_id}/case", endpoint(case_html)),
        Route("/api/runs/{run_id}/case", endpoint(case_api)),
        Route("/compare", endpoint(compare_html)),
        Route("/api/compare", endpoint(compare_api)),
        Route("/static/style.css", asset(STYLE_CSS, "text/css; charset=utf-8")),
        Route("/static/app.js", asset(APP_JS, "text/javascript; charset=utf-8")),
        Route("/favicon.svg", asset(FAVICON, "image/svg+xml")),
        Route("/favicon.ico", asset(FAVICON, "image/svg+xml")),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        return _failure(request, 404, f"no page at {request.url.path}")

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return _failure(request, 405, "the UI is read-only: only GET requests")

    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_allowed})
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(host))
    app.add_middleware(SecurityHeaders)
    app.state.store_path = path
    return app

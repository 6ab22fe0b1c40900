"""HTML building blocks: escaping, the page layout, tables and pagers.

Every string that comes from the store (run names, case text, answers, metric names, judge
prompts) is untrusted: it goes through :func:`esc` (the HTML reports' escaper,
:mod:`ragmeter.reports.html.format`: control characters, escape sequences and bidi overrides
removed, then ``html.escape`` with quotes) and only ever becomes text or an attribute value.
Links are built here from the app's own paths with each part percent-encoded, never taken from
the store, so a ``javascript:`` URL cannot become one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from ragmeter.reports.html.format import esc


def _segment(text: str) -> str:
    """``text`` as one path segment: every reserved character percent-encoded, dots too (a
    browser would resolve a ``.`` or ``..`` segment, even written ``%2E``; see
    :func:`case_url`)."""
    return quote(text, safe="").replace(".", "%2E")


def run_url(run_id: str) -> str:
    return f"/runs/{_segment(run_id)}"


def case_url(run_id: str, case_id: str) -> str:
    """The case page. An id made only of dots (``.``, ``..``; a browser resolves such a path
    segment even percent-encoded) or empty goes in the query string: ``/runs/R/case?id=..``."""
    if not case_id.strip("."):
        return f"{run_url(run_id)}/case?{urlencode({'id': case_id})}"
    return f"{run_url(run_id)}/cases/{_segment(case_id)}"


def with_query(path: str, params: dict[str, Any]) -> str:
    kept = {k: v for k, v in params.items() if v not in (None, "")}
    return f"{path}?{urlencode(kept)}" if kept else path


def pretty_json(value: Any) -> str:
    return esc(json.dumps(value, indent=2, ensure_ascii=False, default=str))


CRUMB = " \u203a "  # the breadcrumb separator
Header = str | tuple[str, str]  # a column's label, or its label and CSS class


def table(
    headers: Sequence[Header],
    rows: Iterable[str],
    caption: str | None = None,
    css: str = "",
) -> str:
    """A table; ``headers`` are plain labels or (label, css class); ``rows`` are ready
    ``<tr>`` strings (their cells escaped by the caller)."""
    head = "".join(
        f'<th scope="col" class="{esc(h[1])}">{esc(h[0])}</th>'
        if isinstance(h, tuple)
        else f'<th scope="col">{esc(h)}</th>'
        for h in headers
    )
    body = "".join(rows)
    cap = f'<caption class="muted">{esc(caption)}</caption>' if caption else ""
    return (
        f'<table class="{esc(css)}">{cap}<thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def cell(value: object, css: str = "", attrs: str = "") -> str:
    klass = f' class="{esc(css)}"' if css else ""
    return f"<td{klass}{attrs}>{esc(value)}</td>"


def raw_cell(markup: str, css: str = "") -> str:
    klass = f' class="{esc(css)}"' if css else ""
    return f"<td{klass}>{markup}</td>"


def select(name: str, label: str, options: Sequence[tuple[str, str]], chosen: str | None) -> str:
    """A labelled ``<select>``; the first option is "all" (empty value)."""
    items = "".join(
        f'<option value="{esc(value)}"{" selected" if value == (chosen or "") else ""}>'
        f"{esc(text)}</option>"
        for value, text in options
    )
    return f'<label>{esc(label)}<select name="{esc(name)}">{items}</select></label>'


def pager(path: str, params: dict[str, Any], paging: dict[str, int], noun: str) -> str:
    page, pages, total = paging["page"], paging["pages"], paging["total"]
    links = []
    if page > 1:
        links.append(
            f'<a rel="prev" href="{esc(with_query(path, {**params, "page": page - 1}))}">'
            "← previous</a>"
        )
    if page < pages:
        links.append(
            f'<a rel="next" href="{esc(with_query(path, {**params, "page": page + 1}))}">next →</a>'
        )
    label = f"page {page} of {pages} · {total} {noun}"
    return (
        f'<nav class="pager" aria-label="{esc(noun)} pages"><span>{esc(label)}</span>'
        f"{''.join(links)}</nav>"
    )


def layout(title: str, body: str, crumbs: Sequence[tuple[str, str | None]] = ()) -> str:
    """A whole page: the stylesheet and the script come from the app (no inline script)."""
    trail = ""
    if crumbs:
        parts = [
            f'<a href="{esc(href)}">{esc(text)}</a>'
            if href
            else f'<span aria-current="page">{esc(text)}</span>'
            for text, href in crumbs
        ]
        trail = f'<nav aria-label="breadcrumb" class="muted">{CRUMB.join(parts)}</nav>'
    return (
        "<!doctype html>"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · ragmeter</title>"
        '<link rel="stylesheet" href="/static/style.css">'
        '<script src="/static/app.js" defer></script>'
        "</head><body>"
        '<a class="skip" href="#main">Skip to content</a>'
        '<header class="top"><a class="brand" href="/">ragmeter</a>'
        '<a href="/">Runs</a><span class="muted">read-only view of the run store</span></header>'
        f'<main id="main">{trail}{body}</main></body></html>'
    )


def error_page(status: int, message: str) -> str:
    title = "Not found" if status == 404 else "Bad request" if status == 400 else "Error"
    body = f'<h1>{esc(title)}</h1><p role="alert">{esc(message)}</p><p><a href="/">All runs</a></p>'
    return layout(title, body)

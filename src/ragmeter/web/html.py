"""HTML building blocks: escaping, the page layout, tables and pagers.

Every string that comes from the store (run names, case text, answers, metric names, judge
prompts) is untrusted: it goes through :func:`e` (``html.escape`` with quotes) and only ever
becomes text or an attribute value. Links are built here from the app's own paths with each
part percent-encoded, never taken from the store, so a ``javascript:`` URL cannot become one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from ragmeter.models import MetricSummary
from ragmeter.reports.console import format_value


def e(value: object) -> str:
    """Text for HTML (element content or a quoted attribute value)."""
    return escape("" if value is None else str(value), quote=True)


def run_url(run_id: str) -> str:
    return f"/runs/{quote(run_id, safe='')}"


def case_url(run_id: str, case_id: str) -> str:
    return f"{run_url(run_id)}/cases/{quote(case_id, safe='')}"


def with_query(path: str, params: dict[str, Any]) -> str:
    kept = {k: v for k, v in params.items() if v not in (None, "")}
    return f"{path}?{urlencode(kept)}" if kept else path


def number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def metric_value(summary: MetricSummary, value: float | None) -> str:
    return format_value(summary, value)


def interval(summary: MetricSummary) -> str:
    if summary.ci_low is None or summary.ci_high is None:
        return "-"
    return (
        f"{format_value(summary, summary.ci_low)} \u2013 {format_value(summary, summary.ci_high)}"
    )


def pretty_json(value: Any) -> str:
    return e(json.dumps(value, indent=2, ensure_ascii=False, default=str))


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
        f'<th scope="col" class="{e(h[1])}">{e(h[0])}</th>'
        if isinstance(h, tuple)
        else f'<th scope="col">{e(h)}</th>'
        for h in headers
    )
    body = "".join(rows)
    cap = f'<caption class="muted">{e(caption)}</caption>' if caption else ""
    return (
        f'<table class="{e(css)}">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    )


def cell(value: object, css: str = "", attrs: str = "") -> str:
    klass = f' class="{e(css)}"' if css else ""
    return f"<td{klass}{attrs}>{e(value)}</td>"


def raw_cell(markup: str, css: str = "") -> str:
    klass = f' class="{e(css)}"' if css else ""
    return f"<td{klass}>{markup}</td>"


def select(name: str, label: str, options: Sequence[tuple[str, str]], chosen: str | None) -> str:
    """A labelled ``<select>``; the first option is "all" (empty value)."""
    items = "".join(
        f'<option value="{e(value)}"{" selected" if value == (chosen or "") else ""}>'
        f"{e(text)}</option>"
        for value, text in options
    )
    return f'<label>{e(label)}<select name="{e(name)}">{items}</select></label>'


def pager(path: str, params: dict[str, Any], paging: dict[str, int], noun: str) -> str:
    page, pages, total = paging["page"], paging["pages"], paging["total"]
    links = []
    if page > 1:
        links.append(
            f'<a rel="prev" href="{e(with_query(path, {**params, "page": page - 1}))}">'
            "← previous</a>"
        )
    if page < pages:
        links.append(
            f'<a rel="next" href="{e(with_query(path, {**params, "page": page + 1}))}">next →</a>'
        )
    label = f"page {page} of {pages} · {total} {noun}"
    return (
        f'<nav class="pager" aria-label="{e(noun)} pages"><span>{e(label)}</span>'
        f"{''.join(links)}</nav>"
    )


def layout(title: str, body: str, crumbs: Sequence[tuple[str, str | None]] = ()) -> str:
    """A whole page: the stylesheet and the script come from the app (no inline script)."""
    trail = ""
    if crumbs:
        parts = [
            f'<a href="{e(href)}">{e(text)}</a>'
            if href
            else f'<span aria-current="page">{e(text)}</span>'
            for text, href in crumbs
        ]
        trail = f'<nav aria-label="breadcrumb" class="muted">{CRUMB.join(parts)}</nav>'
    return (
        "<!doctype html>"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} · ragmeter</title>"
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
    body = f'<h1>{e(title)}</h1><p role="alert">{e(message)}</p><p><a href="/">All runs</a></p>'
    return layout(title, body)

"""The operational part of a run on the console: latency budgets (seed 003's per-stage p95),
coverage by document type and the target's index statistics (seed 004)."""

from __future__ import annotations

import json
from typing import Any

from rich.console import RenderableType
from rich.table import Table

from ragmeter.reports.terminal import inert
from ragmeter.run_record import IndexStatsRecord, RunRecord

_STATUS_STYLE = {"pass": "green", "fail": "red", "not_measured": "yellow"}


def budgets_table(rows: list[dict[str, Any]]) -> Table | None:
    if not rows:
        return None
    table = Table(title="Latency budgets (ms)", title_justify="left")
    table.add_column("stage", overflow="fold")
    for column in ("statistic", "budget", "observed", "n", "status"):
        table.add_column(column, justify="right", no_wrap=True)
    for row in rows:
        observed = row.get("observed_ms")
        status = str(row.get("status", "-"))
        table.add_row(
            inert(str(row.get("stage"))),
            inert(str(row.get("statistic"))),
            f"{row.get('budget_ms', 0):g}",
            "-" if observed is None else f"{observed:.1f}",
            str(row.get("n", 0)),
            f"[{_STATUS_STYLE.get(status, 'white')}]{inert(status.replace('_', ' '))}[/]",
        )
    return table


def doc_type_table(coverage: dict[str, dict[str, Any]]) -> Table | None:
    """Coverage by document type, shown when the gold documents have two types or more."""
    if len(coverage) < 2:
        return None
    table = Table(title="Coverage by document type", title_justify="left")
    table.add_column("type", overflow="fold")
    for column in ("cases", "errors", "empty", "gold retrieved"):
        table.add_column(column, justify="right", no_wrap=True)
    for doc_type, row in coverage.items():
        rate = row.get("gold_retrieved_rate")
        table.add_row(
            inert(doc_type),
            str(row.get("cases", 0)),
            str(row.get("errors", 0)),
            str(row.get("empty", 0)),
            "-" if rate is None else f"{rate:.3f} ({row.get('gold_retrieved', 0)})",
        )
    return table


def _rate(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def index_stats_line(record: IndexStatsRecord | None) -> str | None:
    """One line for the index stats a target reported or failed to give (nothing when it has
    none)."""
    if record is None or record.status == "not_reported":
        return None
    source = inert(record.source)
    if record.status != "reported":
        return f"index stats ({source}): [red]failed[/] {inert(record.reason or '')}"
    found: dict[str, Any] = record.stats or {}
    derived: dict[str, Any] = record.derived or {}
    parts = [
        f"{found[key]} {label}"
        for key, label in (("documents", "documents"), ("chunks", "chunks"))
        if found.get(key) is not None
    ]
    parts.append(f"no-chunk rate {_rate(derived.get('no_chunks_rate'))}")
    parts.append(f"skipped for context {_rate(derived.get('skipped_for_context_rate'))}")
    tokens = found.get("tokens_per_chunk") or {}
    if isinstance(tokens, dict) and tokens:
        spread = "/".join(
            f"{tokens[key]:g}" if isinstance(tokens.get(key), int | float) else "-"
            for key in ("min", "max", "mean", "p95")
        )
        parts.append(f"tokens/chunk min/max/mean/p95 {spread}")
    versions = [
        f"{key} {inert(str(found[key]))}"
        for key in ("chunker_version", "embedding_model", "index_version")
        if found.get(key)
    ]
    return f"index stats ({source}): " + " · ".join(parts + versions)


def _goal_notes(record: RunRecord) -> list[str]:
    """The request body the service's schema asked for, and the reply formats (``replies read
    as llamaindex (26) · response format auto``; nothing for ragmeter's own format)."""
    notes = []
    config = record.config if isinstance(record.config, dict) else {}
    info = config.get("target_info")
    declared = info.get("request_template") if isinstance(info, dict) else None
    if isinstance(declared, dict):
        notes.append(
            f"requests as the service's {declared.get('from')} asks: "
            f"{json.dumps(declared.get('template'))}"
        )
    formats: dict[str, int] = record.performance.response_formats
    if formats and set(formats) != {"native"}:
        target = config.get("target")
        chosen = target.get("response_format") if isinstance(target, dict) else None
        counts = ", ".join(f"{name} ({count})" for name, count in formats.items())
        notes.append(
            f"replies read as {counts}" + (f" · response format {chosen}" if chosen else "")
        )
    return notes


def _matching_note(record: RunRecord) -> str | None:
    """How retrieval was matched, when the id-space check (metrics/id_space.py) chose the
    document level."""
    matching = record.performance.retrieval_matching
    return f"retrieval: {matching}" if matching else None


def reading_notes(record: RunRecord) -> list[str]:
    """How the run read its target, as plain text (each report makes it inert its own way):
    the request body, the reply formats, how retrieval was matched."""
    matching = _matching_note(record)
    return _goal_notes(record) + ([matching] if matching else [])


def response_format_line(record: RunRecord) -> str | None:
    """The request and reply notes on one console line (inert)."""
    return " · ".join(map(inert, _goal_notes(record))) or None


def retrieval_matching_line(record: RunRecord) -> str | None:
    """``retrieval: retrieved chunk ids never match gold chunk ids (example: ...): matched by
    doc_id`` (inert), when the id-space check changed the level."""
    matching = _matching_note(record)
    return inert(matching) if matching else None


def operational_renderables(record: RunRecord) -> list[RenderableType]:
    found: list[RenderableType | None] = [
        response_format_line(record),
        retrieval_matching_line(record),
        budgets_table(record.performance.latency_budgets),
        doc_type_table(record.performance.coverage_by_doc_type),
        index_stats_line(record.index_stats),
    ]
    return [item for item in found if item is not None]

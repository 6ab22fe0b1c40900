"""Index statistics (seed 004's indexing coverage): what the target's index holds, fetched once
per run and stored with it (``RunRecord.index_stats``).

A target offers them with an optional ``async index_stats()`` method returning one of the
records built here: :func:`reported` (the stats, checked against :class:`IndexStats` and with
the derived rates added), :func:`not_reported` (the target has none: an HTTP 404, a Python
module without an ``index_stats`` function) or :func:`failed` (it has some, but they could not
be read). :func:`fetch_index_stats` calls the method with a time limit; a target without the
method gives None. Nothing about index statistics ever stops a run.

The stats are a JSON object; every field is optional and unknown fields are kept:

- ``documents``, ``documents_without_chunks``: documents processed, and those that produced no
  chunk (``no_chunks_rate`` = their share);
- ``chunks``, ``chunks_attempted``: chunks indexed (embedded) and attempted;
- ``chunks_skipped``: skipped chunks by reason (``{"context_length": 3}``), or a plain count;
  ``skipped_for_context_rate`` = ``context_length`` / ``chunks_attempted`` (else / chunks +
  skipped);
- ``tokens_per_chunk``: ``{min, max, mean, p95}``;
- ``chunker_version``, ``embedding_model``, ``index_version``: strings;
- ``documents_by_type``: ``{"pdf": {"documents": 10, "without_chunks": 2}, ...}`` (a
  ``no_chunks_rate`` is added per type).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragmeter.models import NotBool
from ragmeter.redaction import redact, redact_text
from ragmeter.targets.python import clip, describe_validation_error

INDEX_STATS_PATH = "/index/stats"
# a larger reply is not stored (it would weigh on every read of the run)
MAX_STATS_CHARS = 100_000
CONTEXT_LENGTH = "context_length"

Status = Literal["reported", "not_reported", "failed"]
Count = Annotated[int, NotBool, Field(ge=0)]
Amount = Annotated[float, NotBool, Field(ge=0)]


class TokenStats(BaseModel):
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    min: Amount | None = None
    max: Amount | None = None
    mean: Amount | None = None
    p95: Amount | None = None


class TypeCoverage(BaseModel):
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    documents: Count | None = None
    without_chunks: Count | None = None


class IndexStats(BaseModel):
    """The documented fields of a target's index statistics (all optional, others kept)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    documents: Count | None = None
    documents_without_chunks: Count | None = None
    chunks: Count | None = None
    chunks_attempted: Count | None = None
    chunks_skipped: dict[str, Count] | Count | None = None
    tokens_per_chunk: TokenStats | None = None
    chunker_version: str | None = None
    embedding_model: str | None = None
    index_version: str | None = None
    documents_by_type: dict[str, TypeCoverage] | None = None


def _rate(part: int | None, whole: int | None) -> float | None:
    return part / whole if part is not None and whole else None


def _skipped(stats: IndexStats) -> tuple[int | None, int | None]:
    """(chunks skipped for context length, chunks skipped in all) as reported."""
    skipped = stats.chunks_skipped
    if isinstance(skipped, dict):
        return skipped.get(CONTEXT_LENGTH, 0), sum(skipped.values())
    return None, skipped


def derived(stats: IndexStats) -> dict[str, Any]:
    """The rates seed 004 asks for, where the stats allow them (None otherwise)."""
    context, total_skipped = _skipped(stats)
    attempted = stats.chunks_attempted
    if attempted is None and stats.chunks is not None and total_skipped is not None:
        attempted = stats.chunks + total_skipped
    by_type = {
        doc_type: _rate(row.without_chunks, row.documents)
        for doc_type, row in (stats.documents_by_type or {}).items()
    }
    return {
        "no_chunks_rate": _rate(stats.documents_without_chunks, stats.documents),
        "skipped_for_context_rate": _rate(context, attempted),
        "no_chunks_rate_by_type": by_type,
    }


def _record(status: Status, source: str, **fields: Any) -> dict[str, Any]:
    return {"status": status, "source": source, **fields}


def not_reported(source: str, reason: str) -> dict[str, Any]:
    return _record("not_reported", source, reason=clip(redact_text(reason)))


def failed(source: str, reason: str) -> dict[str, Any]:
    return _record("failed", source, reason=clip(redact_text(reason)))


def reported(source: str, raw: Any) -> dict[str, Any]:
    """The record of stats a target sent: checked, secrets masked, rates derived; a reply that
    is not a JSON object in the contract (or is too large to store) is a failed record."""
    if not isinstance(raw, dict):
        return failed(source, f"index stats must be a JSON object, not {type(raw).__name__}")
    try:
        text = json.dumps(raw, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return failed(source, f"index stats are not plain JSON: {exc}")
    if len(text) > MAX_STATS_CHARS:
        return failed(source, f"index stats larger than {MAX_STATS_CHARS} characters as JSON")
    try:
        stats = IndexStats.model_validate(raw)
    except ValidationError as exc:
        reason = describe_validation_error(exc)
        return failed(source, f"index stats do not fit the contract: {reason}")
    return _record("reported", source, stats=redact(raw), derived=derived(stats))


IndexStatsHook = Callable[[], Awaitable[dict[str, Any]]]


async def fetch_index_stats(target: Any, timeout_s: float) -> dict[str, Any] | None:
    """The target's index stats record, or None when the target has no ``index_stats``
    method; an error or a hook slower than ``timeout_s`` gives a failed record."""
    hook: IndexStatsHook | None = getattr(target, "index_stats", None)
    if hook is None or not callable(hook):
        return None
    source = f"{getattr(target, 'name', 'target')} index_stats"
    try:
        async with asyncio.timeout(timeout_s):
            record = await hook()
    except TimeoutError:
        return failed(source, f"no index stats within {timeout_s}s")
    except Exception as exc:
        return failed(source, f"{type(exc).__name__}: {exc}")
    if not isinstance(record, dict) or record.get("status") not in (
        "reported",
        "not_reported",
        "failed",
    ):
        return failed(source, "index_stats() did not return an index stats record")
    return record

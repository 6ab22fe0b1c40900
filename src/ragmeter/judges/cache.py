"""Judge call records and the judge cache, in the run store's ``judge_calls`` table.

Every judge call is recorded: input messages, output text, model, prompt name and version,
parameters, tokens, cost, latency and status. A completed call is also the cache entry for its
key, a sha256 of (model, prompt version, messages, params, schema, max tokens): a repeated call
is answered from the table with no request (and recorded again with ``cached = 1``).

The model id, the parameters and the error of a row are redacted before they are written (a
judge URL's credentials or a remembered key never reach the table).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragmeter.judges.base import Message
from ragmeter.redaction import redact, redact_text
from ragmeter.store.sqlite import RunStore


def cache_key(
    model: str,
    prompt_version: str,
    messages: list[Message],
    params: dict[str, Any],
    schema: dict[str, Any] | None,
    max_tokens: int,
) -> str:
    blob = json.dumps(
        [model, prompt_version, messages, params, schema, max_tokens],
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass
class CallRecord:
    cache_key: str
    purpose: str  # e.g. "faithfulness_claims" or "faithfulness_claims:repair"
    model: str
    prompt_name: str
    prompt_version: str
    params: dict[str, Any]
    messages: list[Message]
    status: str  # ok, error
    output_text: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    cached: bool = False
    error: str | None = None
    case_id: str | None = None
    run_id: str | None = None


@dataclass
class CachedReply:
    output_text: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None


class JudgeStore:
    """Records and cache over a SQLite file (the run store by default; ``:memory:`` works)."""

    def __init__(self, path: str | Path) -> None:
        self._store = RunStore(path)  # applies the migrations, judge_calls included
        self.db = self._store.db

    def lookup(self, key: str) -> CachedReply | None:
        row = self.db.execute(
            "SELECT output_text, finish_reason, prompt_tokens, completion_tokens"
            " FROM judge_calls WHERE cache_key = ? AND status = 'ok' AND cached = 0"
            " ORDER BY id DESC LIMIT 1",
            (key,),
        ).fetchone()
        if row is None:
            return None
        return CachedReply(
            output_text=row["output_text"] or "",
            finish_reason=row["finish_reason"],
            prompt_tokens=row["prompt_tokens"],
            completion_tokens=row["completion_tokens"],
        )

    def record(self, call: CallRecord) -> int:
        cursor = self.db.execute(
            "INSERT INTO judge_calls (cache_key, created_at, run_id, case_id, purpose, model,"
            " prompt_name, prompt_version, params_json, messages_json, output_text,"
            " finish_reason, prompt_tokens, completion_tokens, cost_usd, latency_ms, cached,"
            " status, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                call.cache_key,
                datetime.now(UTC).isoformat(timespec="seconds"),
                call.run_id,
                call.case_id,
                call.purpose,
                redact_text(call.model),
                call.prompt_name,
                call.prompt_version,
                json.dumps(redact(call.params), sort_keys=True),
                json.dumps(call.messages, ensure_ascii=False),
                call.output_text,
                call.finish_reason,
                call.prompt_tokens,
                call.completion_tokens,
                call.cost_usd,
                call.latency_ms,
                int(call.cached),
                call.status,
                redact_text(call.error) if call.error is not None else None,
            ),
        )
        return int(cursor.lastrowid or 0)

    def calls(self, case_id: str | None = None) -> list[dict[str, Any]]:
        """Recorded calls (all, or one case's), oldest first, as dicts."""
        query = "SELECT * FROM judge_calls"
        args: tuple[Any, ...] = ()
        if case_id is not None:
            query += " WHERE case_id = ?"
            args = (case_id,)
        return [dict(row) for row in self.db.execute(query + " ORDER BY id", args)]

    def close(self) -> None:
        self._store.close()

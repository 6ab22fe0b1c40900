"""The judge protocol: one chat completion that should come back as JSON.

A judge is an LLM behind some API. Every provider answers ``complete(messages, schema,
max_tokens)`` with a :class:`JudgeReply` (text, parsed JSON when the text is JSON, token usage,
latency, finish reason, the provider's raw body) or raises :class:`JudgeError` naming what went
wrong. Providers never put an API key in a reply, an error or a log line.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any, Protocol

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}

MAX_RETRY_AFTER_S = 60.0


@dataclass
class JudgeReply:
    text: str
    parsed: Any | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float
    finish_reason: str | None  # "stop", "length" (truncated), "refusal", ...
    raw: dict[str, Any] = field(default_factory=dict)
    refusal: str | None = None  # the provider's refusal message, when it flags one

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


class JudgeError(Exception):
    """A judge call that produced no reply: ``kind`` is timeout, rate_limited, http_4xx,
    http_5xx, connection_error, invalid_response, config or server."""

    def __init__(self, kind: str, message: str, attempts: int = 1) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.attempts = attempts


class Judge(Protocol):
    @property
    def model(self) -> str:
        """The pinned identity of the judge model (recorded and part of the cache key)."""
        ...

    @property
    def params(self) -> dict[str, Any]:
        """Sampling parameters sent with every call (temperature, seed, ...)."""
        ...

    async def complete(
        self, messages: list[Message], schema: dict[str, Any] | None, max_tokens: int
    ) -> JudgeReply: ...

    async def aclose(self) -> None: ...


def parse_json(text: str) -> Any | None:
    """The JSON value in ``text`` (also inside a ```json fence), or None."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`")
        if stripped.lower().startswith("json"):
            stripped = stripped[4:]
    try:
        return json.loads(stripped)
    except ValueError:
        start, end = stripped.find("{"), stripped.rfind("}")
        if 0 <= start < end:
            try:
                return json.loads(stripped[start : end + 1])
            except ValueError:
                return None
    return None


def backoff_s(attempt: int, retry_after: str | None, base_s: float) -> float:
    """Seconds to wait before retry ``attempt`` (1-based): ``Retry-After`` when the server
    sent one (capped), else exponential with jitter."""
    if retry_after:
        try:
            return min(max(float(retry_after), 0.0), MAX_RETRY_AFTER_S)
        except ValueError:
            pass
    return float(base_s * (2 ** (attempt - 1)) * (0.5 + random.random()))

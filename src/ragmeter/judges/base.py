"""The judge protocol: one chat completion that should come back as JSON.

A judge is an LLM behind some API. Every provider answers ``complete(messages, schema,
max_tokens)`` with a :class:`JudgeReply` (text, parsed JSON when the text is JSON, token usage,
latency, finish reason, the provider's raw body) or raises :class:`JudgeError` naming what went
wrong. Providers never put an API key in a reply, an error or a log line: every error message
goes through :func:`ragmeter.redaction.redact_text`, and credentials written into a judge URL
(``http://user:pass@host/v1``) are taken out of it by :func:`split_credentials` before the URL is
used anywhere else.

Each request has a wall-clock deadline of ``timeout_s`` (connect, send, wait and read together,
so a server that trickles bytes cannot hold a call forever) and is tried ``1 + max_retries``
times.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx

from ragmeter.errors import RagmeterError
from ragmeter.redaction import REDACTED, redact_text, remember_secret
from ragmeter.retry import retry_delay_s
from ragmeter.text import replace_lone_surrogates, valid_text

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}

MAX_RETRY_AFTER_S = 60.0
CONTEXT_WORDS = re.compile(r"context[ _]length|context window", re.IGNORECASE)
DEFAULT_TIMEOUT_S = 60.0  # one request's wall-clock deadline
DEFAULT_MAX_RETRIES = 1  # retries after the first try: 2 tries in all


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

    def __post_init__(self) -> None:
        # a judge's text is untrusted: a lone surrogate (a JSON escape like \\ud800) would stop
        # every UTF-8 writer downstream (the store, a report), so it becomes U+FFFD here
        self.text = valid_text(self.text)
        self.refusal = None if self.refusal is None else valid_text(self.refusal)
        self.parsed = replace_lone_surrogates(self.parsed)[0]
        self.raw = replace_lone_surrogates(self.raw)[0]

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


class JudgeError(RagmeterError):
    """A judge call that produced no reply: ``error_type`` is timeout, rate_limited, http_4xx,
    http_5xx, context_length (a 400 saying the prompt exceeds the model's context),
    connection_error, invalid_response, config or server. The message is redacted; ``raw``
    keeps the server's reply body as it came (None when there was none)."""

    def __init__(
        self, error_type: str, message: str, attempts: int = 1, raw: str | None = None
    ) -> None:
        self.error_type = error_type
        self.message = valid_text(redact_text(message))
        self.attempts = attempts
        self.raw = None if raw is None else valid_text(raw)
        super().__init__(f"{error_type}: {self.message}")


def split_credentials(url: str) -> tuple[str, str | None]:
    """``url`` without the ``user:password@`` part, and the ``Basic`` Authorization value those
    credentials make (None when the URL has none). The password, the user:password pair and
    the header value are remembered as secrets (masked wherever they appear later). A
    ``***REDACTED***@`` left by redaction is dropped: it is no credential."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    if userinfo == REDACTED:  # a spec read back from a run's redacted config snapshot
        return urlunsplit(parts._replace(netloc=host)), None
    user, _, password = userinfo.partition(":")
    user, password = unquote(user), unquote(password)
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    for secret in (password, userinfo, f"{user}:{password}", token):
        remember_secret(secret)
    return urlunsplit(parts._replace(netloc=host)), f"Basic {token}"


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
    """The wait before retry ``attempt`` of a judge call (``Retry-After`` capped at 60 s)."""
    return retry_delay_s(attempt, retry_after, base_s, MAX_RETRY_AFTER_S)


class RetryingPoster:
    """The POST-with-retries loop shared by the HTTP judge clients: connection errors, timeouts,
    5xx and rate limits are retried with backoff (``Retry-After`` honoured) up to
    ``max_retries`` times; other 4xx fail at once. Each try has a wall-clock deadline of
    ``timeout_s``. ``restart`` may ask for an immediate re-send that does not count as a retry
    (e.g. after switching the structured-output format the server rejected)."""

    timeout_s: float
    max_retries: int
    backoff_base_s: float
    requests: int

    async def post_with_retries(
        self,
        client: httpx.AsyncClient,
        url: str,
        body: Callable[[], dict[str, Any]],
        headers: dict[str, str],
        rate_limit_statuses: tuple[int, ...] = (429,),
        restart: Callable[[httpx.Response], bool] | None = None,
    ) -> tuple[httpx.Response, float, int]:
        """(successful reply, its latency in ms, attempts made)."""
        attempts = 0
        while True:
            attempts += 1
            retry_after: str | None = None
            started = time.perf_counter()
            try:
                self.requests += 1
                async with asyncio.timeout(self.timeout_s):
                    reply = await client.post(url, json=body(), headers=headers)
            except (TimeoutError, httpx.TimeoutException) as exc:
                tries = "try" if attempts == 1 else "tries"
                error = JudgeError(
                    "timeout",
                    f"no answer from {url} within the judge timeout of {self.timeout_s:g}s"
                    f" ({attempts} {tries})",
                    attempts,
                )
                error.__cause__ = exc
            except httpx.HTTPError as exc:
                error = JudgeError(
                    "connection_error", f"{url}: {type(exc).__name__} {exc}".strip(), attempts
                )
                error.__cause__ = exc
            else:
                if reply.status_code < 400:
                    return reply, (time.perf_counter() - started) * 1000.0, attempts
                if restart is not None and restart(reply):
                    attempts -= 1
                    continue
                status = reply.status_code
                limited = status in rate_limit_statuses
                error_type = "rate_limited" if limited else f"http_{status // 100}xx"
                if status == 400 and CONTEXT_WORDS.search(reply.text):
                    error_type = "context_length"  # the prompt did not fit the model's context
                error = JudgeError(
                    error_type,
                    f"HTTP {status} from {url}: {reply.text[:300]}",
                    attempts,
                    reply.text,
                )
                if status < 500 and not limited:
                    raise error
                retry_after = reply.headers.get("Retry-After")
            if attempts > self.max_retries:
                raise error
            await asyncio.sleep(backoff_s(attempts, retry_after, self.backoff_base_s))

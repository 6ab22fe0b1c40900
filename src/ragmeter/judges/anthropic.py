"""Anthropic Messages API judge.

Structured output goes through a forced tool call: the prompt's JSON schema is the tool's
``input_schema`` and ``tool_choice`` names the tool, so the verdict arrives as the tool input.
System messages move to the top-level ``system`` field. ``stop_reason`` ``max_tokens`` is
reported as the finish reason ``length`` (truncated) and ``refusal`` as a refusal. The key is
read from ``ANTHROPIC_API_KEY`` at call time and only sent in the ``x-api-key`` header.
Credentials in ``ANTHROPIC_BASE_URL`` (a proxy's ``user:pass@``) are taken out of the URL and
sent as HTTP ``Basic`` authorization.
"""

from __future__ import annotations

import json
import os
from typing import Any

import httpx

from ragmeter.judges.base import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    JudgeError,
    JudgeReply,
    Message,
    RetryingPoster,
    parse_json,
    split_credentials,
)
from ragmeter.redaction import remember_secret

API_VERSION = "2023-06-01"
TOOL_NAME = "record_verdict"
STOP_REASONS = {"max_tokens": "length", "end_turn": "stop", "tool_use": "stop"}


class AnthropicJudge(RetryingPoster):
    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.anthropic.com",
        api_key_env: str = "ANTHROPIC_API_KEY",
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff_base_s: float = 1.0,
    ) -> None:
        clean_url, self._basic_auth = split_credentials(base_url)
        self.base_url = clean_url.rstrip("/")
        self.model_name = model
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.requests = 0
        self._client: httpx.AsyncClient | None = None

    @property
    def model(self) -> str:
        return f"anthropic:{self.model_name}"

    @property
    def params(self) -> dict[str, Any]:
        return {"temperature": 0}

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env, "")
        if not key:
            raise JudgeError(
                "config", f"environment variable {self.api_key_env} is not set (the API key)"
            )
        remember_secret(key)
        headers = {
            "x-api-key": key,
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
        }
        if self._basic_auth:
            headers["Authorization"] = self._basic_auth
        return headers

    def _body(
        self, messages: list[Message], schema: dict[str, Any] | None, max_tokens: int
    ) -> dict[str, Any]:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        body: dict[str, Any] = {
            "model": self.model_name,
            "max_tokens": max_tokens,
            "messages": [m for m in messages if m["role"] != "system"],
            **self.params,
        }
        if system:
            body["system"] = system
        if schema is not None:
            body["tools"] = [
                {
                    "name": TOOL_NAME,
                    "description": "Record the verdict as JSON matching the schema.",
                    "input_schema": schema,
                }
            ]
            body["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        return body

    async def complete(
        self, messages: list[Message], schema: dict[str, Any] | None, max_tokens: int
    ) -> JudgeReply:
        headers = self._headers()
        url = f"{self.base_url}/v1/messages"
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout_s)
        reply, latency, attempts = await self.post_with_retries(
            self._client,
            url,
            lambda: self._body(messages, schema, max_tokens),
            headers,
            rate_limit_statuses=(429, 529),
        )
        return _parse(reply, latency, attempts)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _parse(reply: httpx.Response, latency_ms: float, attempts: int) -> JudgeReply:
    try:
        body = reply.json()
        blocks = list(body["content"])
    except (ValueError, KeyError, TypeError) as exc:
        raise JudgeError(
            "invalid_response", f"not a Messages API reply: {reply.text[:200]!r}", attempts
        ) from exc
    parsed: Any | None = None
    texts: list[str] = []
    for block in blocks:
        if block.get("type") == "tool_use" and block.get("name") == TOOL_NAME:
            parsed = block.get("input")
        elif block.get("type") == "text":
            texts.append(str(block.get("text", "")))
    text = json.dumps(parsed) if parsed is not None else "".join(texts)
    if parsed is None:
        parsed = parse_json(text)
    usage = body.get("usage") or {}
    stop = body.get("stop_reason")
    return JudgeReply(
        text=text,
        parsed=parsed,
        prompt_tokens=usage.get("input_tokens"),
        completion_tokens=usage.get("output_tokens"),
        latency_ms=latency_ms,
        finish_reason=STOP_REASONS.get(stop, stop),
        raw=body,
        refusal="".join(texts) or "refused" if stop == "refusal" else None,
    )

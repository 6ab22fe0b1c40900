"""OpenAI-compatible chat completions judge (OpenAI, vLLM, llama.cpp's server, ...).

Every call sends ``temperature=0`` and a fixed ``seed``. Structured output first asks for
OpenAI's ``response_format={"type": "json_schema", ...}``; a server that rejects it with an HTTP
4xx/5xx whose body mentions the format (llama.cpp answers 500) is asked again, at once, with
llama.cpp's ``{"type": "json_object", "schema": ...}``, and that choice is kept for the rest of
the process (every later judge on the same server and model starts with it, so a run's later
batches and passes send no rejected request); while the first structured call has not yet shown
which format the server takes, the other structured calls wait for it instead of being rejected
alongside.
429 and 5xx are retried with exponential backoff (``Retry-After`` honoured); a timeout is
retried too (``max_retries`` times; each try has a ``timeout_s`` deadline). The API key is read
from an environment variable at call time and only ever put in the ``Authorization`` header
(``Bearer``). Credentials written into the URL (``http://user:pass@host/v1``) are taken out of
it and sent as HTTP ``Basic`` authorization instead, unless a key from the environment is set
(the key wins); the URL kept, shown and recorded never holds them.
"""

from __future__ import annotations

import asyncio
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
from ragmeter.redaction import redact_url, remember_secret

FORMAT_WORDS = ("response_format", "json_schema", "schema", "format")
# (base URL, model) of the servers that rejected json_schema in this process
_JSON_OBJECT_SERVERS: set[tuple[str, str]] = set()


class OpenAICompatJudge(RetryingPoster):
    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        key_required: bool = True,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff_base_s: float = 1.0,
        seed: int = 0,
        model_id: str | None = None,
    ) -> None:
        clean_url, self._basic_auth = split_credentials(base_url)
        self.base_url = clean_url.rstrip("/")
        self.model_name = model
        self._model_id = redact_url(model_id or f"{self.base_url}#{model}")
        self.api_key_env = api_key_env
        self.key_required = key_required
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.seed = seed
        # "json_object" after a rejection (by this server, earlier in the process too)
        rejected = (self.base_url, model) in _JSON_OBJECT_SERVERS
        self.format_mode = "json_object" if rejected else "json_schema"
        self._format_known = rejected  # whether a structured call has shown the format
        self._format_probe: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self.requests = 0  # HTTP requests sent (tests count them)
        self._client: httpx.AsyncClient | None = None

    @property
    def model(self) -> str:
        return self._model_id

    @property
    def params(self) -> dict[str, Any]:
        return {"temperature": 0, "seed": self.seed}

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        if key:
            remember_secret(key)
            headers["Authorization"] = f"Bearer {key}"
        elif self.api_key_env and self.key_required:
            raise JudgeError(
                "config", f"environment variable {self.api_key_env} is not set (the API key)"
            )
        elif self._basic_auth:
            headers["Authorization"] = self._basic_auth
        return headers

    def _client_for(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout_s)
        return self._client

    def _response_format(self, schema: dict[str, Any]) -> dict[str, Any]:
        if self.format_mode == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "schema": schema, "strict": False},
            }
        return {"type": "json_object", "schema": schema}

    def _body(
        self, messages: list[Message], schema: dict[str, Any] | None, max_tokens: int
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": messages,
            "max_tokens": max_tokens,
            **self.params,
        }
        if schema is not None:
            body["response_format"] = self._response_format(schema)
        return body

    def _rejects_format(self, reply: httpx.Response, schema: dict[str, Any] | None) -> bool:
        if schema is None or self.format_mode != "json_schema" or reply.status_code == 429:
            return False
        text = reply.text.lower()
        return reply.status_code >= 400 and any(word in text for word in FORMAT_WORDS)

    async def complete(
        self, messages: list[Message], schema: dict[str, Any] | None, max_tokens: int
    ) -> JudgeReply:
        headers = self._headers()
        url = f"{self.base_url}/chat/completions"

        def switch_format(reply: httpx.Response) -> bool:
            if not self._rejects_format(reply, schema):
                return False
            self.format_mode = "json_object"
            self._format_known = True
            _JSON_OBJECT_SERVERS.add((self.base_url, self.model_name))
            return True

        async def post() -> tuple[httpx.Response, float, int]:
            return await self.post_with_retries(
                self._client_for(),
                url,
                lambda: self._body(messages, schema, max_tokens),
                headers,
                restart=switch_format,
            )

        if schema is None or self._format_known:
            reply, latency, attempts = await post()
        else:  # the first structured call finds the format; the others wait for it
            loop = asyncio.get_running_loop()
            if self._format_probe is None or self._format_probe[0] is not loop:
                self._format_probe = (loop, asyncio.Lock())  # a lock serves one loop
            async with self._format_probe[1]:
                reply, latency, attempts = await post()
                self._format_known = True
        return self._parse(reply, latency, attempts)

    def _parse(self, reply: httpx.Response, latency_ms: float, attempts: int) -> JudgeReply:
        try:
            body = reply.json()
            choice = body["choices"][0]
            message = choice.get("message") or {}
            text = message.get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise JudgeError(
                "invalid_response",
                f"not a chat completion: {reply.text[:200]!r}",
                attempts,
            ) from exc
        usage = body.get("usage") or {}
        refusal = message.get("refusal")
        finish = choice.get("finish_reason")
        return JudgeReply(
            text=text,
            parsed=parse_json(text),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_ms=latency_ms,
            finish_reason="refusal" if refusal else finish,
            raw=body,
            refusal=refusal,
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

"""HTTP target: ``POST /query`` with a body template and a dotted-path response mapping.

``GET /health`` is checked before the run and ``GET /models/info`` is snapshot into the run's
config. Connection errors, 5xx and 429 are retried with exponential backoff (``Retry-After``
honoured); timeouts and other 4xx are not.
"""

from __future__ import annotations

import asyncio
import os
import re
from typing import Any

import httpx
from pydantic import ValidationError

from ragmeter.config import TargetConfig
from ragmeter.models import Case, Response
from ragmeter.paths import MISSING, get_path
from ragmeter.retry import retry_delay_s
from ragmeter.targets.base import TargetError

DEFAULT_TEMPLATE: dict[str, Any] = {"question": "{question}", "top_k": "{top_k}"}
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_ENV_REFERENCE = re.compile(r"\$\{(\w+)\}")
_LIST_FIELDS = ("retrieved", "citations")
_MAX_RETRY_AFTER_S = 30.0


def render_template(template: Any, variables: dict[str, Any]) -> Any:
    """Fill ``{name}`` placeholders; a string that is one placeholder keeps the value's type."""
    if isinstance(template, dict):
        return {key: render_template(value, variables) for key, value in template.items()}
    if isinstance(template, list):
        return [render_template(value, variables) for value in template]
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        if whole and whole.group(1) in variables:
            return variables[whole.group(1)]
        return _PLACEHOLDER.sub(
            lambda m: str(variables[m.group(1)]) if m.group(1) in variables else m.group(0),
            template,
        )
    return template


def apply_mapping(body: Any, mapping: dict[str, str]) -> dict[str, Any]:
    """Build Response fields from ``body`` by dotted paths.

    Keys are Response fields (``answer: data.text``) or item fields of the list fields
    (``retrieved.text: content``). Unmapped fields are read under their own name.
    """
    if not mapping:
        return body if isinstance(body, dict) else {"answer": body}
    top: dict[str, str] = {}
    items: dict[str, dict[str, str]] = {}
    for key, path in mapping.items():
        field, _, sub = key.partition(".")
        if sub and field in _LIST_FIELDS:
            items.setdefault(field, {})[sub] = path
        else:
            top[key] = path
    result: dict[str, Any] = {}
    for field in Response.model_fields:
        if field == "raw":
            continue
        path = top.get(field, field)
        value = get_path(body, path)
        if value is MISSING:
            if field in top:
                raise TargetError(
                    "invalid_response", f"response has no field at '{path}' (for {field})"
                )
            continue
        result[field] = value
    for field, sub_mapping in items.items():
        values = result.get(field)
        if isinstance(values, list):
            result[field] = [_map_item(item, sub_mapping) for item in values]
    return result


def _map_item(item: Any, sub_mapping: dict[str, str]) -> Any:
    if not isinstance(item, dict):
        return item
    mapped = dict(item)
    for sub_field, path in sub_mapping.items():
        value = get_path(item, path)
        if value is not MISSING:
            mapped[sub_field] = value
    return mapped


def _expand_env(value: str) -> str:
    return _ENV_REFERENCE.sub(lambda m: os.environ.get(m.group(1), ""), value)


class HttpTarget:
    name = "http"

    def __init__(self, config: TargetConfig, concurrency: int = 8, **_: Any) -> None:
        if not config.url:
            raise ValueError("the http target needs a url (e.g. http://127.0.0.1:8000)")
        self.config = config
        self.template = config.request_template or DEFAULT_TEMPLATE
        self.client = httpx.AsyncClient(
            base_url=config.url.rstrip("/"),
            timeout=httpx.Timeout(config.timeout_s),
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
            headers={key: _expand_env(value) for key, value in config.headers.items()},
        )

    async def _get_json(self, path: str) -> Any:
        response = await self.client.get(path)
        response.raise_for_status()
        return response.json()

    async def preflight(self) -> dict[str, Any]:
        if self.config.health_path:
            try:
                await self._get_json(self.config.health_path)
            except (httpx.HTTPError, ValueError) as exc:
                raise TargetError(
                    "preflight_failed",
                    f"GET {self.config.url}{self.config.health_path} failed: {exc!r}",
                ) from exc
        snapshot: dict[str, Any] = {"url": self.config.url}
        if self.config.info_path:
            try:
                snapshot["models_info"] = await self._get_json(self.config.info_path)
            except (httpx.HTTPError, ValueError) as exc:
                snapshot["models_info_error"] = f"GET {self.config.info_path}: {exc!r}"
        return snapshot

    async def query(self, case: Case) -> Response:
        variables = {
            "question": case.question,
            "case_id": case.case_id,
            "top_k": self.config.top_k,
            "user_roles": case.user_roles,
            "query_type": case.query_type,
            "category": case.category,
        }
        body = render_template(self.template, variables)
        attempts = 0
        while True:
            attempts += 1
            retry_after: str | None = None
            try:
                reply = await self.client.post(self.config.query_path, json=body)
            except httpx.TimeoutException as exc:
                raise TargetError(
                    "timeout",
                    f"no answer within {self.config.timeout_s}s ({type(exc).__name__})",
                    attempts,
                ) from exc
            except httpx.TransportError as exc:
                error = TargetError("connection_error", f"{type(exc).__name__}: {exc}", attempts)
            else:
                if reply.status_code < 400:
                    return self._parse(reply, attempts)
                kind = (
                    "http_429" if reply.status_code == 429 else f"http_{reply.status_code // 100}xx"
                )
                error = TargetError(kind, f"HTTP {reply.status_code}: {reply.text[:200]}", attempts)
                if reply.status_code < 500 and reply.status_code != 429:
                    raise error
                retry_after = reply.headers.get("Retry-After")
            if attempts > self.config.max_retries:
                raise error
            await asyncio.sleep(
                retry_delay_s(attempts, retry_after, self.config.backoff_s, _MAX_RETRY_AFTER_S)
            )

    def _parse(self, reply: httpx.Response, attempts: int) -> Response:
        try:
            body = reply.json()
        except ValueError as exc:
            raise TargetError(
                "invalid_json", f"response is not JSON: {reply.text[:120]!r}", attempts
            ) from exc
        try:
            fields = apply_mapping(body, self.config.response_mapping)
            response = Response.model_validate(fields)
        except TargetError as exc:
            exc.attempts = attempts
            raise
        except ValidationError as exc:
            detail = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3]
            )
            raise TargetError(
                "invalid_response", f"response does not fit the contract: {detail}", attempts
            ) from exc
        response.raw = body
        response.attempts = attempts
        return response

    async def aclose(self) -> None:
        await self.client.aclose()

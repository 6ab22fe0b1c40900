"""HTTP target: ``POST /query`` with a body template; the reply is read in its response format
(``targets/formats.py``: ragmeter's own, LlamaIndex, LangChain, ... or auto) or by a dotted-path
response mapping.

``GET /health`` is checked before the run and ``GET /models/info`` is snapshot into the run's
config; ``GET /index/stats`` (optional: a 404 means the server has none) gives the index
statistics stored with the run (``targets/index_stats.py``). Connection errors, 5xx and 429 are
retried with exponential backoff (``Retry-After`` honoured); timeouts, redirects (3xx) and other
4xx are not. Replies are read as a stream and given up at ``max_response_bytes``; every message
quotes at most 200 characters of what the server sent, and never the credentials of the URL.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
from typing import Any, NoReturn

import httpx

from ragmeter.config import TargetConfig
from ragmeter.errors import InputError
from ragmeter.models import Case, Response
from ragmeter.paths import MISSING, get_path
from ragmeter.redaction import (
    ENV_REFERENCE,
    SAFE_HEADERS,
    is_secret_key,
    redact_text,
    redact_url,
    remember_secret,
)
from ragmeter.retry import retry_delay_s
from ragmeter.targets import index_stats
from ragmeter.targets.base import TargetError
from ragmeter.targets.formats import build_response
from ragmeter.targets.openapi import template_from_openapi
from ragmeter.targets.python import clip
from ragmeter.targets.shapes import describe_shape

DEFAULT_TEMPLATE: dict[str, Any] = {"question": "{question}", "top_k": "{top_k}"}
OPENAPI_PATH = "/openapi.json"  # FastAPI's schema: the body a service reads (targets.openapi)
OPENAPI_TIMEOUT_S = 5.0  # a service without one may not answer the path at all
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_LIST_FIELDS = ("retrieved", "citations")
_MAX_RETRY_AFTER_S = 30.0
# an error reply is read only this far: its message quotes 200 characters of it
_ERROR_BODY_BYTES = 4096
_NO_HEALTH_HINT = (
    "if the server has no health endpoint, pass --no-health-check "
    "(or health_path: null in the target config)"
)


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
        if field in ("raw", "reported", "response_format"):
            continue
        path = top.get(field, field)
        value = get_path(body, path)
        if value is MISSING:
            if field in top:
                raise TargetError(
                    "invalid_response", f"response has no field at {clip(path)!r} (for {field})"
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
    return ENV_REFERENCE.sub(lambda m: os.environ.get(m.group(1), ""), value)


def _expand_headers(headers: dict[str, str]) -> dict[str, str]:
    """Header values with ``${ENV}`` expanded; every value that is not harmless (literal or
    expanded) is remembered as a secret, so it is masked wherever it appears later: a stored
    error message, a reason, a printed line."""
    expanded = {name: _expand_env(value) for name, value in headers.items()}
    for name, value in expanded.items():
        if name.lower() in SAFE_HEADERS:
            continue
        remember_secret(value)
        words = value.split()
        if len(words) > 1:  # "Bearer TOKEN": the token alone
            remember_secret(words[-1])
    return expanded


def _refuse_two_credentials(headers: dict[str, str], display_url: str) -> None:
    """URL credentials are sent as basic auth, which would replace an ``Authorization`` header
    given too: refuse the pair (before the first request) rather than send the other one."""
    if any(name.strip().lower() == "authorization" for name in headers):
        raise InputError(
            f"the target url {display_url!r} holds credentials (user:password@), which are "
            "sent as basic auth, and an Authorization header is given too; use one or the "
            "other: drop the credentials from the url, or drop the Authorization header"
        )


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def _body_text(content: bytes) -> str:
    """The first 200 characters of a reply body, secrets masked (a server may echo them)."""
    return clip(redact_text(content[:_ERROR_BODY_BYTES].decode("utf-8", errors="replace")))


class _TooLarge(Exception):
    """A reply over ``max_response_bytes`` (declared or read)."""


async def _read_limited(reply: httpx.Response, limit: int) -> bytes:
    """The decoded body of a streamed ``reply``, or _TooLarge as soon as it passes ``limit``
    (a declared ``Content-Length`` over the limit fails before a byte is read)."""
    declared = reply.headers.get("Content-Length", "").strip()
    if declared.isdigit() and int(declared) > limit:
        raise _TooLarge(
            f"reply larger than {limit} bytes (max_response_bytes): Content-Length {declared}"
        )
    chunks: list[bytes] = []
    size = 0
    async for chunk in reply.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise _TooLarge(f"reply larger than {limit} bytes (max_response_bytes)")
        chunks.append(chunk)
    return b"".join(chunks)


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type: ``list``, ``string``, ``number``, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return "number"


def _redirect_message(reply: httpx.Response) -> str:
    location = reply.headers.get("Location")
    target = ""
    if location:
        try:
            target = f" to {clip(redact_url(str(reply.url.join(location))))}"
        except httpx.InvalidURL:
            target = f" to {clip(redact_url(location))}"
    return (
        f"HTTP {reply.status_code}{target}: the target redirected; point --target at the final URL"
    )


def remember_query_secrets(params: httpx.QueryParams) -> None:
    """Values of secret-looking query parameters are masked wherever they appear later."""
    for key, value in params.multi_items():
        if is_secret_key(key):
            remember_secret(value)


class HttpTarget:
    name = "http"

    def __init__(self, config: TargetConfig, concurrency: int = 8, **_: Any) -> None:
        if not config.url:
            raise InputError("the http target needs a url (e.g. http://127.0.0.1:8000)")
        url = config.url.rstrip("/")
        self.display_url = redact_url(url)
        try:
            parsed = httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise InputError(f"cannot read target url {self.display_url!r}: {exc}") from None
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise InputError(
                f"cannot read target url {self.display_url!r}: use http://HOST[:PORT] or "
                "https://HOST[:PORT]"
            )
        # credentials in the URL are sent as basic auth (by httpx) and masked wherever they
        # would be printed or stored, also as the basic-auth token a server might echo
        if parsed.userinfo:
            _refuse_two_credentials(config.headers, self.display_url)
        if parsed.password:
            remember_secret(parsed.password)
            token = f"{parsed.username}:{parsed.password}".encode()
            remember_secret(base64.b64encode(token).decode("ascii"))
        self.config = config
        self.template = config.request_template or DEFAULT_TEMPLATE
        # a query string (``?api_key=...``) is sent with every request, after the path
        query = parsed.params
        if query:
            url = str(parsed.copy_with(query=None)).rstrip("/")
            remember_query_secrets(query)
        self.client = httpx.AsyncClient(
            base_url=url,
            params=query,
            timeout=httpx.Timeout(config.timeout_s),
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
            headers=_expand_headers(config.headers),
            follow_redirects=False,
        )

    def _describe_transport_error(self, exc: httpx.HTTPError) -> str:
        detail = redact_text(str(exc)).replace(self.config.url or "", self.display_url)
        return clip(f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__)

    async def _get(self, path: str, *, read: bool = True) -> tuple[httpx.Response, bytes]:
        """``GET path``: the reply and, when ``read`` and it is 2xx, its body (read up to
        max_response_bytes)."""
        async with asyncio.timeout(self.config.timeout_s):
            async with self.client.stream("GET", path) as reply:
                if not (read and reply.is_success):
                    return reply, b""
                return reply, await _read_limited(reply, self.config.max_response_bytes)

    async def _check_health(self, path: str) -> None:
        where = f"GET {self.display_url}{path}"
        try:
            reply, _ = await self._get(path, read=False)  # any 2xx will do, JSON or not
        except TimeoutError:
            raise TargetError(
                "preflight_failed", f"{where} failed: no answer within {self.config.timeout_s}s"
            ) from None
        except httpx.HTTPError as exc:
            raise TargetError(
                "preflight_failed",
                f"{where} failed: {self._describe_transport_error(exc)}; is the server running "
                f"at {self.display_url}?",
            ) from None
        if 300 <= reply.status_code < 400:
            raise TargetError("preflight_failed", f"{where} failed ({_redirect_message(reply)})")
        if not reply.is_success:
            raise TargetError(
                "preflight_failed", f"{where} failed ({reply.status_code}); {_NO_HEALTH_HINT}"
            )

    async def _models_info(self, path: str) -> tuple[str, Any]:
        """``("models_info", json)``, or ``("models_info_error", message)``."""
        where = f"GET {path}"
        try:
            reply, content = await self._get(path)
        except TimeoutError:
            return "models_info_error", f"{where}: no answer within {self.config.timeout_s}s"
        except httpx.HTTPError as exc:
            return "models_info_error", f"{where}: {self._describe_transport_error(exc)}"
        except _TooLarge as exc:
            return "models_info_error", f"{where}: {exc}"
        if not reply.is_success:
            return "models_info_error", f"{where}: HTTP {reply.status_code}"
        try:
            # strict: NaN / Infinity would make the stored run config invalid JSON
            return "models_info", json.loads(content, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            return "models_info_error", f"{where}: not JSON: {_body_text(content)!r}"

    async def preflight(self) -> dict[str, Any]:
        if self.config.health_path:
            await self._check_health(self.config.health_path)
        snapshot: dict[str, Any] = {"url": self.display_url}
        if self.config.info_path:
            key, value = await self._models_info(self.config.info_path)
            snapshot[key] = value
        if self.config.request_template is None:
            declared = await self._declared_template()
            if declared is not None:
                self.template = declared
                snapshot["request_template"] = {"template": declared, "from": OPENAPI_PATH}
        return snapshot

    async def _declared_template(self) -> dict[str, str] | None:
        """The request body the service's OpenAPI schema asks for, when the default body does
        not fit it (``targets.openapi``); None when there is no schema or nothing to change."""
        try:
            async with asyncio.timeout(min(self.config.timeout_s, OPENAPI_TIMEOUT_S)):
                reply, content = await self._get(OPENAPI_PATH)
            document = json.loads(content) if reply.is_success else None
        except (TimeoutError, httpx.HTTPError, _TooLarge, ValueError, RecursionError):
            return None
        return template_from_openapi(document, self.config.query_path)

    async def index_stats(self) -> dict[str, Any]:
        """``GET /index/stats`` (``options.index_stats_path`` in the target config; null to
        skip) as an index stats record: a 404, 405 or 501 means the server has none."""
        path = self.config.options.get("index_stats_path", index_stats.INDEX_STATS_PATH)
        if not path:
            return index_stats.not_reported("http", "index_stats_path is null")
        source = f"GET {path}"
        try:
            reply, content = await self._get(str(path))
        except TimeoutError:
            return index_stats.failed(source, f"no answer within {self.config.timeout_s}s")
        except httpx.HTTPError as exc:
            return index_stats.failed(source, self._describe_transport_error(exc))
        except _TooLarge as exc:
            return index_stats.failed(source, str(exc))
        if reply.status_code in (404, 405, 501):
            return index_stats.not_reported(source, f"HTTP {reply.status_code}")
        if 300 <= reply.status_code < 400:
            return index_stats.failed(source, _redirect_message(reply))
        if not reply.is_success:
            return index_stats.failed(source, f"HTTP {reply.status_code}")
        try:
            body = json.loads(content, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            return index_stats.failed(source, f"not JSON: {_body_text(content)!r}")
        return index_stats.reported(source, body)

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
            outcome, retry_after = await self._attempt(body, attempts)
            if isinstance(outcome, Response):
                return outcome
            if attempts > self.config.max_retries:
                raise outcome
            await asyncio.sleep(
                retry_delay_s(attempts, retry_after, self.config.backoff_s, _MAX_RETRY_AFTER_S)
            )

    async def _attempt(self, body: Any, attempts: int) -> tuple[Response | TargetError, str | None]:
        """One POST: the Response, or a retryable error and the server's Retry-After; an
        error that must not be retried is raised."""
        try:
            async with asyncio.timeout(self.config.timeout_s):
                async with self.client.stream("POST", self.config.query_path, json=body) as reply:
                    status = reply.status_code
                    if 200 <= status < 300:
                        content = await _read_limited(reply, self.config.max_response_bytes)
                        return self._parse(content, attempts), None
                    if 300 <= status < 400:
                        raise TargetError("http_3xx", _redirect_message(reply), attempts)
                    text = await self._error_text(reply)
                    retry_after = reply.headers.get("Retry-After")
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise TargetError(
                "timeout",
                f"no answer within {self.config.timeout_s}s ({type(exc).__name__})",
                attempts,
            ) from None
        except _TooLarge as exc:
            raise TargetError("invalid_response", str(exc), attempts) from None
        except httpx.DecodingError as exc:
            raise TargetError(
                "invalid_response",
                f"reply body cannot be decoded: {self._describe_transport_error(exc)}",
                attempts,
            ) from None
        except httpx.TransportError as exc:
            return (
                TargetError("connection_error", self._describe_transport_error(exc), attempts),
                None,
            )
        kind = "http_429" if status == 429 else f"http_{status // 100}xx"
        hint = missing_body_hint(text, body) if status == 422 else ""
        error = TargetError(kind, f"HTTP {status}: {text}{hint}", attempts)
        if status < 500 and status != 429:
            raise error
        return error, retry_after

    @staticmethod
    async def _error_text(reply: httpx.Response) -> str:
        """The first 200 characters of an error reply (read no further than needed)."""
        content = b""
        async for chunk in reply.aiter_bytes():
            content += chunk
            if len(content) >= _ERROR_BODY_BYTES:
                break
        return _body_text(content)

    def _parse(self, content: bytes, attempts: int) -> Response:
        try:
            body = json.loads(content)
        except (ValueError, RecursionError) as exc:
            raise TargetError(
                "invalid_json", f"response is not JSON: {_body_text(content)!r}", attempts
            ) from exc
        if not self.config.response_mapping and not isinstance(body, dict | str):
            # a list, a number, true or null: not a reply in the contract (nor an answer text)
            raise TargetError(
                "invalid_response",
                f"the reply is a JSON {_json_type(body)}; expected a JSON object in the response "
                f'contract ({{"answer": ..., ...}}), or map its fields with response_mapping '
                f"(--response-map); its shape: {describe_shape(body)}",
                attempts,
            )
        try:
            response = build_response(
                body, self.config.response_format, self.config.response_mapping, "response"
            )
        except TargetError as exc:
            exc.attempts = attempts
            raise
        response.attempts = attempts
        return response

    async def aclose(self) -> None:
        await self.client.aclose()


_BODY_FIELD = re.compile(r'"loc"\s*:\s*\[\s*"body"\s*,\s*"([^"]{1,64})"')


def missing_body_hint(text: str, body: Any) -> str:
    """For a 422 in FastAPI's shape naming body fields the request did not send (``"loc":
    ["body", "query"]``): the request template that sends them."""
    sent = body if isinstance(body, dict) else {}
    wanted = [name for name in dict.fromkeys(_BODY_FIELD.findall(text)) if name not in sent]
    if not wanted:
        return ""
    template = json.dumps({name: "{question}" for name in wanted[:1]})
    return (
        f" (the service reads body field {', '.join(map(repr, wanted))}, which the request "
        f"did not send: --request-template '{template}')"
    )

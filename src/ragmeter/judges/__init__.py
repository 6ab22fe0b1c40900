"""LLM judges: providers, versioned prompts, records and cache, cost.

Judges are opt-in and explicit. A judge spec is one of

- ``openai:MODEL`` (key from ``OPENAI_API_KEY``; ``OPENAI_BASE_URL`` overrides the endpoint),
- ``anthropic:MODEL`` (key from ``ANTHROPIC_API_KEY``; ``ANTHROPIC_BASE_URL`` overrides),
- ``http://HOST:PORT/v1#MODEL`` (any OpenAI-compatible server; the key, sent as a bearer
  token, comes from the variable named by ``api_key_env``, else from
  ``RAGMETER_JUDGE_API_KEY`` when that is set, else none is sent; ``user:pass@`` in the URL is
  sent as HTTP Basic authorization when no key is, and never kept in the URL),
- ``local:PATH.gguf`` (llama.cpp server started on 127.0.0.1 for the run).

The judged metrics use the judge their run passes them (``MetricSettings.judge``, made with
:func:`judge_settings` from the config's ``judge``); without one they are skipped, never
defaulted. Providers are looked up in the registry by prefix, so a plugin can add one.
Each judge request waits at most ``timeout_s`` (default 60 s) and is retried ``max_retries``
times (default 1: two tries). :func:`preflight_judge` checks a spec, its key and its server
before the first question and raises :class:`~ragmeter.errors.JudgeConfigError` saying what to
do.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

from ragmeter.config import DEFAULT_STORE
from ragmeter.errors import JudgeConfigError
from ragmeter.judges.base import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    Judge,
    JudgeError,
    JudgeReply,
    split_credentials,
)
from ragmeter.judges.cost import Price
from ragmeter.judges.providers import HTTP_KEY_ENV, JudgeProvider
from ragmeter.redaction import redact, redact_text, redact_url, remember_secret
from ragmeter.registry import registry

__all__ = [
    "Judge",
    "JudgeError",
    "JudgeReply",
    "JudgeSettings",
    "build_judge",
    "build_judge_check",
    "judge_settings",
    "preflight_judge",
]

SPEC_FORMS = "openai:MODEL, anthropic:MODEL, http://HOST:PORT/v1#MODEL or local:PATH.gguf"
DEFAULT_CONTEXT_CHARS = 2000  # of each chunk shown to a judge
LOCAL_CONTEXT_CHARS = 24000  # ... to a local: judge, which fits its prompts to its context
PROBE_TIMEOUT_S = 5.0  # the pre-flight probe of a judge server waits at most this long


@dataclass(frozen=True)
class JudgeSettings:
    spec: str | None = None
    store: str = DEFAULT_STORE  # judge records and cache live in the run store
    use_cache: bool = True
    max_cost: float | None = None  # USD; judging stops cleanly when reached
    prices: dict[str, Price] = field(default_factory=dict)
    concurrency: int = 2
    # the variable holding the key (http:// default: RAGMETER_JUDGE_API_KEY when set)
    api_key_env: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S  # one request's wall-clock deadline
    max_retries: int = DEFAULT_MAX_RETRIES  # retries after the first try of a request
    run_id: str | None = None
    max_contexts: int = 10  # retrieved chunks shown to the judge, top first
    # each chunk is cut to this many characters; None: see ``context_chars``
    max_context_chars: int | None = None
    # judged tasks to run (see ragmeter.judges.tasks.TASKS); None = all
    tasks: tuple[str, ...] | None = None
    # templates asked in place of a task's own, as (its template, the one asked) pairs: the
    # spot check of another prompt version (ragmeter.judges.prompt_swaps)
    prompts: tuple[tuple[str, str], ...] = ()

    @property
    def context_chars(self) -> int:
        """Characters of each chunk shown to the judge: ``max_context_chars`` when set, else
        2000, and for a ``local:`` judge 24,000 (its prompts are measured and the evidence
        trimmed to the windows most relevant to the question and answer, so a long chunk is
        not simply cut after its first 2,000 characters; see ragmeter.judges.fitting)."""
        if self.max_context_chars is not None:
            return self.max_context_chars
        local = self.spec is not None and self.spec.startswith("local:")
        return LOCAL_CONTEXT_CHARS if local else DEFAULT_CONTEXT_CHARS

    def build(self) -> Judge:
        """The judge these settings name (nothing is started yet)."""
        if self.spec is None:
            raise JudgeConfigError("no judge spec given")
        return build_judge(
            self.spec,
            api_key_env=self.api_key_env,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
        )


def judge_settings(spec: str | None, **options: Any) -> JudgeSettings:
    """Checked settings for the judge ``spec`` (None: no judge). ``options`` are
    :class:`JudgeSettings` fields (store, use_cache, max_cost, prices, api_key_env, timeout_s,
    max_retries, tasks, ...). Raises JudgeConfigError for a spec of no known form or an unusable
    timeout / retry count. The settings are an object the caller passes on (in
    ``MetricSettings.judge``); nothing is kept in this module."""
    if spec is not None:
        build_judge_check(spec)
    settings = replace(JudgeSettings(), spec=spec, **options)
    _check_limits(settings.timeout_s, settings.max_retries)
    return settings


def _check_limits(timeout_s: float, max_retries: int) -> None:
    if not timeout_s > 0:  # also rejects NaN
        raise JudgeConfigError(f"judge timeout_s must be a positive number of seconds: {timeout_s}")
    if max_retries < 0:
        raise JudgeConfigError(f"judge max_retries must be 0 or more: {max_retries}")


def build_judge_check(spec: str) -> None:
    """Raise JudgeConfigError if ``spec`` has none of the accepted forms (nothing is started).
    Credentials in an http:// spec are remembered as secrets here, before anything can show
    them. A provider registered by a plugin (entry point ``ragmeter.judges``) is a prefix too."""
    if spec.startswith(("http://", "https://")):
        split_credentials(spec.rsplit("#", 1)[0])
        if "#" in spec and spec.rsplit("#", 1)[1]:
            return
    prefix, _, rest = spec.partition(":")
    if rest and prefix not in ("http", "https") and prefix in registry.names("judges"):
        return
    raise JudgeConfigError(f"judge spec {redact_url(spec)!r} not understood; use {SPEC_FORMS}")


def build_judge(
    spec: str,
    *,
    api_key_env: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> Judge:
    """The judge for ``spec`` (see the module docstring), made by the provider registered under
    its prefix (``registry.get("judges", prefix)``). Starts nothing yet: a local server starts
    on the first call and stops in ``aclose``. ``api_key_env`` overrides the provider's key
    variable; for an http:// judge a variable named here must be set when the judge is
    called."""
    build_judge_check(spec)
    _check_limits(timeout_s, max_retries)
    if spec.startswith(("http://", "https://")):
        provider, model = "http", spec
    else:
        provider, _, model = spec.partition(":")
    factory: JudgeProvider = registry.get("judges", provider)
    return factory(model, api_key_env=api_key_env, timeout_s=timeout_s, max_retries=max_retries)


async def preflight_judge(
    spec: str, *, api_key_env: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
) -> dict[str, Any]:
    """Check ``spec`` before the first question; return a small redacted snapshot of the judge
    (kind, model, base URL without credentials, key variable, what authorization is sent).

    Raises :class:`JudgeConfigError` saying what to do when the spec has no known form, the
    API key's variable is not set, a local model file does not exist (or llama-cpp-python is
    missing), or an http:// judge server does not answer ``GET {base}/models`` within
    ``min(timeout_s, 5)`` seconds (any HTTP status but 401/403 means it is up). Cloud judges
    (openai:, anthropic:) are not contacted: their key is checked, nothing is sent."""
    try:
        build_judge_check(spec)  # also remembers URL credentials before the spec is shown
    except JudgeConfigError:
        raise JudgeConfigError(f"--judge {redact_url(spec)}: use {SPEC_FORMS}") from None
    shown = redact_url(spec)
    if not timeout_s > 0:
        raise JudgeConfigError(f"judge timeout_s must be a positive number of seconds: {timeout_s}")
    if spec.startswith(("http://", "https://")):
        snapshot = await _preflight_http(spec, shown, api_key_env, timeout_s)
    else:
        prefix, _, rest = spec.partition(":")
        if prefix == "local":
            snapshot = _preflight_local(rest, shown)
        elif prefix in ("openai", "anthropic"):
            snapshot = _preflight_cloud(prefix, rest, shown, api_key_env)
        else:  # a plugin's provider: its factory is found, nothing is contacted
            registry.get("judges", prefix)
            snapshot = {"kind": prefix, "model": rest, "judge_model": shown, "contacted": False}
    snapshot["timeout_s"] = timeout_s
    return dict(redact(snapshot))


def _key_from(variable: str, shown: str, why: str = "") -> str:
    key = os.environ.get(variable, "")
    if not key:
        raise JudgeConfigError(f"--judge {shown} needs {variable} in the environment{why}")
    remember_secret(key)
    return key


def _preflight_cloud(
    prefix: str, model: str, shown: str, api_key_env: str | None
) -> dict[str, Any]:
    if prefix == "openai":
        variable = api_key_env or "OPENAI_API_KEY"
        base = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    else:
        variable = api_key_env or "ANTHROPIC_API_KEY"
        base = os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
    _key_from(variable, shown)
    clean, _ = split_credentials(base)
    return {
        "kind": prefix,
        "model": model,
        "judge_model": f"{prefix}:{model}",
        "base_url": redact_url(clean.rstrip("/")),
        "api_key_env": variable,
        "sends_key": "bearer" if prefix == "openai" else "x-api-key",
        "contacted": False,
    }


def _preflight_local(path_text: str, shown: str) -> dict[str, Any]:
    from ragmeter.judges.local import INSTALL_HINT

    path = Path(path_text).expanduser()
    if not path.is_file():
        raise JudgeConfigError(
            f"--judge {shown}: the model file {path} does not exist; give the path of a .gguf "
            "file (python scripts/setup_llama.py fetches a small test model and prints its path)"
        )
    if importlib.util.find_spec("llama_cpp") is None:
        raise JudgeConfigError(f"--judge {shown}: {INSTALL_HINT}")
    return {"kind": "local", "model": path.name, "path": str(path), "contacted": False}


async def _preflight_http(
    spec: str, shown: str, api_key_env: str | None, timeout_s: float
) -> dict[str, Any]:
    url, model = spec.rsplit("#", 1)
    clean, basic = split_credentials(url)
    base = clean.rstrip("/")
    headers: dict[str, str] = {}
    sends: str | None = None
    if api_key_env:
        key = _key_from(api_key_env, shown, " (named by --judge-api-key-env / judge_api_key_env)")
    else:
        key = os.environ.get(HTTP_KEY_ENV, "")
        remember_secret(key)
    if key:
        headers["Authorization"], sends = f"Bearer {key}", "bearer"
    elif basic:
        headers["Authorization"], sends = basic, "basic (credentials from the URL)"
    wait_s = min(timeout_s, PROBE_TIMEOUT_S)
    shown_base = redact_url(base)
    try:
        # the deadline is the request's alone: building the client (its TLS context) can take
        # seconds on a busy machine
        async with httpx.AsyncClient(timeout=wait_s) as client:
            async with asyncio.timeout(wait_s + 1.0):
                reply = await client.get(f"{base}/models", headers=headers)
    except (TimeoutError, httpx.HTTPError) as exc:
        cause = f"{type(exc).__name__} {exc}".strip()
        if isinstance(exc, TimeoutError | httpx.TimeoutException):
            cause = f"{type(exc).__name__} (no answer within {wait_s:g}s)"
        raise JudgeConfigError(
            redact_text(
                f"judge server {shown_base} is not reachable: {cause}; start it or check the URL"
            )
        ) from None
    if reply.status_code in (401, 403):
        fix = (
            f"check the key in {api_key_env or HTTP_KEY_ENV}"
            if sends == "bearer"
            else "check the user and password in the URL"
            if sends
            else f"set its key in {HTTP_KEY_ENV} (or name the variable with judge_api_key_env)"
        )
        raise JudgeConfigError(
            f"judge server {shown_base} refused the request (HTTP {reply.status_code} on "
            f"GET /models): {fix}"
        )
    return {
        "kind": "http",
        "model": model,
        "judge_model": f"{base}#{model}",
        "base_url": shown_base,
        "api_key_env": api_key_env or (HTTP_KEY_ENV if key else None),
        "sends_key": sends,
        "contacted": True,
        "models_status": reply.status_code,
    }

"""LLM judges: providers, versioned prompts, records and cache, cost.

Judges are opt-in and explicit. A judge spec is one of

- ``openai:MODEL`` (key from ``OPENAI_API_KEY``; ``OPENAI_BASE_URL`` overrides the endpoint),
- ``anthropic:MODEL`` (key from ``ANTHROPIC_API_KEY``; ``ANTHROPIC_BASE_URL`` overrides),
- ``http://HOST:PORT/v1#MODEL`` (any OpenAI-compatible server; the key, sent as a bearer
  token, comes from the variable named by ``api_key_env``, else from
  ``RAGMETER_JUDGE_API_KEY`` when that is set, else none is sent; ``user:pass@`` in the URL is
  sent as HTTP Basic authorization when no key is, and never kept in the URL),
- ``local:PATH.gguf`` (llama.cpp server started on 127.0.0.1 for the run).

The judged metrics read their judge from :func:`configure` (the CLI's ``--judge``) or else the
``RAGMETER_JUDGE`` environment variable; with neither they are skipped, never defaulted.
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
from typing import Any, TypeVar

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
from ragmeter.redaction import redact, redact_text, redact_url, remember_secret

__all__ = [
    "Judge",
    "JudgeError",
    "JudgeReply",
    "JudgeSettings",
    "build_judge",
    "build_judge_check",
    "configure",
    "current_settings",
    "preflight_judge",
]

SPEC_FORMS = "openai:MODEL, anthropic:MODEL, http://HOST:PORT/v1#MODEL or local:PATH.gguf"
HTTP_KEY_ENV = "RAGMETER_JUDGE_API_KEY"  # an http:// judge's key when api_key_env names none
PROBE_TIMEOUT_S = 5.0  # the pre-flight probe of a judge server waits at most this long
_N = TypeVar("_N", int, float)


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
    max_context_chars: int = 2000  # each chunk is cut to this many characters
    # judged tasks to run (see ragmeter.judges.tasks.TASKS); None = all
    tasks: tuple[str, ...] | None = None


_configured: JudgeSettings | None = None


def configure(spec: str | None = None, **options: Any) -> JudgeSettings:
    """Set the judge of the judged metrics for this process (``configure(None)`` clears it).
    ``options`` are :class:`JudgeSettings` fields (store, use_cache, max_cost, prices,
    api_key_env, timeout_s, max_retries, ...). Raises JudgeConfigError for a spec of no known
    form or an unusable timeout / retry count."""
    global _configured
    if spec is not None:
        build_judge_check(spec)
    settings = replace(JudgeSettings(), spec=spec, **options)
    _check_limits(settings.timeout_s, settings.max_retries)
    _configured = settings if spec or options else None
    return current_settings()


def _check_limits(timeout_s: float, max_retries: int) -> None:
    if not timeout_s > 0:  # also rejects NaN
        raise JudgeConfigError(f"judge timeout_s must be a positive number of seconds: {timeout_s}")
    if max_retries < 0:
        raise JudgeConfigError(f"judge max_retries must be 0 or more: {max_retries}")


def current_settings() -> JudgeSettings:
    """The configured settings, else the environment (``RAGMETER_JUDGE``,
    ``RAGMETER_JUDGE_MAX_COST``, ``RAGMETER_JUDGE_STORE`` or ``RAGMETER_STORE``,
    ``RAGMETER_JUDGE_TASKS`` as a comma-separated list, ``RAGMETER_JUDGE_TIMEOUT_S``,
    ``RAGMETER_JUDGE_MAX_RETRIES``)."""
    if _configured is not None and _configured.spec is not None:
        return _configured
    base = _configured or JudgeSettings()
    env = os.environ
    max_cost = env.get("RAGMETER_JUDGE_MAX_COST")
    tasks = env.get("RAGMETER_JUDGE_TASKS")
    timeout_s = env.get("RAGMETER_JUDGE_TIMEOUT_S")
    max_retries = env.get("RAGMETER_JUDGE_MAX_RETRIES")
    return replace(
        base,
        spec=env.get("RAGMETER_JUDGE") or None,
        store=env.get("RAGMETER_JUDGE_STORE") or env.get("RAGMETER_STORE") or base.store,
        max_cost=float(max_cost) if max_cost else base.max_cost,
        tasks=tuple(t.strip() for t in tasks.split(",") if t.strip()) if tasks else base.tasks,
        timeout_s=_number("RAGMETER_JUDGE_TIMEOUT_S", timeout_s, float, base.timeout_s),
        max_retries=_number("RAGMETER_JUDGE_MAX_RETRIES", max_retries, int, base.max_retries),
    )


def _number(name: str, text: str | None, kind: type[_N], default: _N) -> _N:
    if not text:
        return default
    try:
        return kind(text)
    except ValueError:
        raise JudgeConfigError(f"{name}={text!r} is not a number ({kind.__name__})") from None


def build_judge_check(spec: str) -> None:
    """Raise JudgeConfigError if ``spec`` has none of the accepted forms (nothing is started).
    Credentials in an http:// spec are remembered as secrets here, before anything can show
    them."""
    if spec.startswith(("http://", "https://")):
        split_credentials(spec.rsplit("#", 1)[0])
        if "#" in spec and spec.rsplit("#", 1)[1]:
            return
    prefix, _, rest = spec.partition(":")
    if prefix in ("openai", "anthropic", "local") and rest:
        return
    raise JudgeConfigError(f"judge spec {redact_url(spec)!r} not understood; use {SPEC_FORMS}")


def build_judge(
    spec: str,
    *,
    api_key_env: str | None = None,
    timeout_s: float | None = None,
    max_retries: int | None = None,
) -> Judge:
    """The judge for ``spec`` (see the module docstring). Starts nothing yet: a local server
    starts on the first call and stops in ``aclose``. ``timeout_s`` / ``max_retries`` left
    None come from :func:`current_settings` (defaults 60 s and 1 retry). ``api_key_env``
    overrides the provider's key variable; for an http:// judge a variable named here must be
    set when the judge is called."""
    from ragmeter.judges.anthropic import AnthropicJudge
    from ragmeter.judges.local import LocalLlamaJudge
    from ragmeter.judges.openai_compat import OpenAICompatJudge

    build_judge_check(spec)
    if timeout_s is None or max_retries is None:
        settings = current_settings()
        timeout_s = settings.timeout_s if timeout_s is None else timeout_s
        max_retries = settings.max_retries if max_retries is None else max_retries
    _check_limits(timeout_s, max_retries)
    limits: dict[str, Any] = {"timeout_s": timeout_s, "max_retries": max_retries}
    if spec.startswith(("http://", "https://")):
        url, model = spec.rsplit("#", 1)
        return OpenAICompatJudge(
            url,
            model,
            api_key_env=api_key_env or HTTP_KEY_ENV,
            key_required=api_key_env is not None,
            **limits,
        )
    prefix, _, rest = spec.partition(":")
    if prefix == "openai":
        base = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        return OpenAICompatJudge(
            base,
            rest,
            api_key_env=api_key_env or "OPENAI_API_KEY",
            model_id=f"openai:{rest}",
            **limits,
        )
    if prefix == "anthropic":
        base = os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
        return AnthropicJudge(
            rest, base_url=base, api_key_env=api_key_env or "ANTHROPIC_API_KEY", **limits
        )
    n_ctx = int(os.environ.get("RAGMETER_LOCAL_N_CTX", "2048"))
    # the per-request limits apply once the server is up; its start-up has its own, longer
    # floor (LocalLlamaJudge.start_timeout_s)
    return LocalLlamaJudge(rest, n_ctx=n_ctx, **limits)


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
        else:
            snapshot = _preflight_cloud(prefix, rest, shown, api_key_env)
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
        async with (
            asyncio.timeout(wait_s + 1.0),
            httpx.AsyncClient(timeout=wait_s) as client,
        ):
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

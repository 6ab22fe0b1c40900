"""The built-in judge providers' checks before the first question (``preflight_judge``): a
key's variable is set, a local model file exists and llama-cpp-python is installed, an http://
judge server answers ``GET {base}/models`` within ``min(timeout_s, 5)`` seconds (any HTTP
status but 401/403 means it is up). Cloud judges (openai:, anthropic:) are not contacted: their
key is checked, nothing is sent. Each returns the judge's snapshot for the run."""

from __future__ import annotations

import asyncio
import importlib.util
import os
from pathlib import Path
from typing import Any

import httpx

from ragmeter.errors import JudgeConfigError
from ragmeter.judges.base import split_credentials
from ragmeter.judges.providers import HTTP_KEY_ENV
from ragmeter.redaction import redact_text, redact_url, remember_secret

PROBE_TIMEOUT_S = 5.0


def _key_from(variable: str, shown: str, why: str = "") -> str:
    key = os.environ.get(variable, "")
    if not key:
        raise JudgeConfigError(f"--judge {shown} needs {variable} in the environment{why}")
    remember_secret(key)
    return key


def check_openai(
    model: str, *, shown: str, api_key_env: str | None, timeout_s: float
) -> dict[str, Any]:
    return _check_cloud("openai", model, shown, api_key_env)


def check_anthropic(
    model: str, *, shown: str, api_key_env: str | None, timeout_s: float
) -> dict[str, Any]:
    return _check_cloud("anthropic", model, shown, api_key_env)


def _check_cloud(prefix: str, model: str, shown: str, api_key_env: str | None) -> dict[str, Any]:
    if prefix == "openai":
        variable = api_key_env or "OPENAI_API_KEY"
        base = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    else:
        variable = api_key_env or "ANTHROPIC_API_KEY"
        base = os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
    _key_from(variable, shown)
    clean, _ = split_credentials(base)
    return {
        "provider": prefix,
        "model": model,
        "judge_model": f"{prefix}:{model}",
        "base_url": redact_url(clean.rstrip("/")),
        "api_key_env": variable,
        "sends_key": "bearer" if prefix == "openai" else "x-api-key",
        "contacted": False,
    }


def check_local(
    path_text: str, *, shown: str, api_key_env: str | None, timeout_s: float
) -> dict[str, Any]:
    from ragmeter.judges.local import INSTALL_HINT

    path = Path(path_text).expanduser()
    if not path.is_file():
        raise JudgeConfigError(
            f"--judge {shown}: the model file {path} does not exist; give the path of a .gguf "
            "file (python scripts/setup_llama.py fetches a small test model and prints its path)"
        )
    if importlib.util.find_spec("llama_cpp") is None:
        raise JudgeConfigError(f"--judge {shown}: {INSTALL_HINT}")
    from ragmeter.judges.base import JudgeError
    from ragmeter.judges.local import auto_n_ctx
    from ragmeter.judges.providers import local_setting

    try:
        given = local_setting("RAGMETER_LOCAL_N_CTX", allow_auto=True)
    except JudgeError as exc:
        raise JudgeConfigError(f"--judge {shown}: {exc.message}") from None
    n_ctx, chosen_by = (given, "RAGMETER_LOCAL_N_CTX") if given else auto_n_ctx(path)
    return {
        "provider": "local",
        "model": path.name,
        "path": str(path),
        "contacted": False,
        "n_ctx": n_ctx,
        "n_ctx_from": chosen_by,
    }


async def check_http(
    spec: str, *, shown: str, api_key_env: str | None, timeout_s: float
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
        "provider": "http",
        "model": model,
        "judge_model": f"{base}#{model}",
        "base_url": shown_base,
        "api_key_env": api_key_env or (HTTP_KEY_ENV if key else None),
        "sends_key": sends,
        "contacted": True,
        "models_status": reply.status_code,
    }

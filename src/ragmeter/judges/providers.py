"""The built-in judge providers, one per spec prefix, registered in :mod:`ragmeter.registry`
under ``judges``: each a :class:`JudgeProviderSpec` declaring how its judge is built and how it
is checked before the first question. A plugin adds a provider the same way: an entry point in
the ``ragmeter.judges`` group naming a ``JudgeProviderSpec`` (or a bare factory with the
:class:`JudgeProvider` signature, then only looked up at pre-flight); ``--judge NAME:MODEL``
then calls it with ``MODEL``. Each factory imports its client only when called."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ragmeter.judges.base import Judge

HTTP_KEY_ENV = "RAGMETER_JUDGE_API_KEY"  # an http:// judge's key when api_key_env names none


class JudgeProvider(Protocol):
    def __call__(
        self, model: str, *, api_key_env: str | None, timeout_s: float, max_retries: int
    ) -> Judge: ...


PreflightCheck = Callable[..., "dict[str, Any] | Awaitable[dict[str, Any]]"]


@dataclass(frozen=True)
class JudgeProviderSpec:
    """A judge provider: ``build`` makes its judge for MODEL (the :class:`JudgeProvider`
    signature; calling the spec calls it), ``check(model, *, shown, api_key_env, timeout_s)``
    checks it before the first question and returns its snapshot for the run (a dict, or an
    awaitable of one), raising ``JudgeConfigError`` saying what to fix."""

    build: JudgeProvider
    check: PreflightCheck | None = None

    def __call__(
        self, model: str, *, api_key_env: str | None, timeout_s: float, max_retries: int
    ) -> Judge:
        return self.build(
            model, api_key_env=api_key_env, timeout_s=timeout_s, max_retries=max_retries
        )


def _check(name: str) -> PreflightCheck:
    """``judges.preflight.{name}``, imported when the check runs."""

    def check(model: str, **options: Any) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        from ragmeter.judges import preflight

        found: PreflightCheck = getattr(preflight, name)
        return found(model, **options)

    return check


def http_judge(model: str, *, api_key_env: str | None, timeout_s: float, max_retries: int) -> Judge:
    """``http://HOST:PORT/v1#MODEL``: any OpenAI-compatible server (``model`` is the whole
    spec)."""
    from ragmeter.judges.openai_compat import OpenAICompatJudge

    url, name = model.rsplit("#", 1)
    return OpenAICompatJudge(
        url,
        name,
        api_key_env=api_key_env or HTTP_KEY_ENV,
        key_required=api_key_env is not None,
        timeout_s=timeout_s,
        max_retries=max_retries,
    )


def openai_judge(
    model: str, *, api_key_env: str | None, timeout_s: float, max_retries: int
) -> Judge:
    from ragmeter.judges.openai_compat import OpenAICompatJudge

    base = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    return OpenAICompatJudge(
        base,
        model,
        api_key_env=api_key_env or "OPENAI_API_KEY",
        model_id=f"openai:{model}",
        timeout_s=timeout_s,
        max_retries=max_retries,
    )


def anthropic_judge(
    model: str, *, api_key_env: str | None, timeout_s: float, max_retries: int
) -> Judge:
    from ragmeter.judges.anthropic import AnthropicJudge

    base = os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
    return AnthropicJudge(
        model,
        base_url=base,
        api_key_env=api_key_env or "ANTHROPIC_API_KEY",
        timeout_s=timeout_s,
        max_retries=max_retries,
    )


def local_judge(
    model: str, *, api_key_env: str | None, timeout_s: float, max_retries: int
) -> Judge:
    """``local:PATH.gguf``: a llama.cpp server started on 127.0.0.1 for the run. The
    per-request limits apply once the server is up; its start-up has its own, longer floor
    (``LocalLlamaJudge.start_timeout_s``)."""
    from ragmeter.judges.local import LocalLlamaJudge

    # RAGMETER_LOCAL_N_CTX: the server's context size, or "auto" (the default: chosen from the
    # model's training context and the memory, see ragmeter.judges.local);
    # RAGMETER_LOCAL_THREADS: the server's CPU threads (default 2)
    n_ctx = local_setting("RAGMETER_LOCAL_N_CTX", allow_auto=True)
    threads = local_setting("RAGMETER_LOCAL_THREADS", allow_auto=False) or 2
    return LocalLlamaJudge(
        model, n_ctx=n_ctx, n_threads=threads, timeout_s=timeout_s, max_retries=max_retries
    )


def local_setting(name: str, *, allow_auto: bool) -> int | None:
    from ragmeter.judges.base import JudgeError

    given = os.environ.get(name, "").strip().lower()
    if given in ("", "auto") and (allow_auto or not given):
        return None
    if given.isdigit() and int(given) > 0:
        return int(given)
    wanted = "a whole number > 0" + (' or "auto"' if allow_auto else "")
    raise JudgeError("config", f"{name}={given!r}: expected {wanted}")


OPENAI = JudgeProviderSpec(openai_judge, _check("check_openai"))
ANTHROPIC = JudgeProviderSpec(anthropic_judge, _check("check_anthropic"))
HTTP = JudgeProviderSpec(http_judge, _check("check_http"))
LOCAL = JudgeProviderSpec(local_judge, _check("check_local"))

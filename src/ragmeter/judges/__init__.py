"""LLM judges: providers, versioned prompts, records and cache, cost.

Judges are opt-in and explicit. A judge spec is one of

- ``openai:MODEL`` (key from ``OPENAI_API_KEY``; ``OPENAI_BASE_URL`` overrides the endpoint),
- ``anthropic:MODEL`` (key from ``ANTHROPIC_API_KEY``; ``ANTHROPIC_BASE_URL`` overrides),
- ``http://HOST:PORT/v1#MODEL`` (any OpenAI-compatible server; a key is sent only when the
  variable named by ``api_key_env`` is set),
- ``local:PATH.gguf`` (llama.cpp server started on 127.0.0.1 for the run).

The judged metrics read their judge from :func:`configure` (the CLI's ``--judge``) or else the
``RAGMETER_JUDGE`` environment variable; with neither they are skipped, never defaulted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

from ragmeter.judges.base import Judge, JudgeError, JudgeReply
from ragmeter.judges.cost import Price

__all__ = [
    "Judge",
    "JudgeError",
    "JudgeReply",
    "JudgeSettings",
    "build_judge",
    "configure",
    "current_settings",
]

SPEC_FORMS = "openai:MODEL, anthropic:MODEL, http://HOST:PORT/v1#MODEL or local:PATH.gguf"


@dataclass(frozen=True)
class JudgeSettings:
    spec: str | None = None
    store: str = ".ragmeter/runs.db"  # judge records and cache live in the run store
    use_cache: bool = True
    max_cost: float | None = None  # USD; judging stops cleanly when reached
    prices: dict[str, Price] = field(default_factory=dict)
    concurrency: int = 2
    api_key_env: str | None = None  # for http:// specs: the variable holding the key
    run_id: str | None = None
    max_contexts: int = 10  # retrieved chunks shown to the judge, top first
    max_context_chars: int = 2000  # each chunk is cut to this many characters
    # judged tasks to run (see ragmeter.judges.tasks.TASKS); None = all
    tasks: tuple[str, ...] | None = None


_configured: JudgeSettings | None = None


def configure(spec: str | None = None, **options: Any) -> JudgeSettings:
    """Set the judge of the judged metrics for this process (``configure(None)`` clears it).
    ``options`` are :class:`JudgeSettings` fields (store, use_cache, max_cost, prices, ...)."""
    global _configured
    if spec is not None:
        build_judge_check(spec)
    _configured = replace(JudgeSettings(), spec=spec, **options) if spec or options else None
    return current_settings()


def current_settings() -> JudgeSettings:
    """The configured settings, else the environment (``RAGMETER_JUDGE``,
    ``RAGMETER_JUDGE_MAX_COST``, ``RAGMETER_JUDGE_STORE`` or ``RAGMETER_STORE``,
    ``RAGMETER_JUDGE_TASKS`` as a comma-separated list)."""
    if _configured is not None and _configured.spec is not None:
        return _configured
    base = _configured or JudgeSettings()
    env = os.environ
    max_cost = env.get("RAGMETER_JUDGE_MAX_COST")
    tasks = env.get("RAGMETER_JUDGE_TASKS")
    return replace(
        base,
        spec=env.get("RAGMETER_JUDGE") or None,
        store=env.get("RAGMETER_JUDGE_STORE") or env.get("RAGMETER_STORE") or base.store,
        max_cost=float(max_cost) if max_cost else base.max_cost,
        tasks=tuple(t.strip() for t in tasks.split(",") if t.strip()) if tasks else base.tasks,
    )


def build_judge_check(spec: str) -> None:
    """Raise ValueError if ``spec`` has none of the accepted forms (nothing is started)."""
    prefix, _, rest = spec.partition(":")
    if prefix in ("openai", "anthropic", "local") and rest:
        return
    if spec.startswith(("http://", "https://")) and "#" in spec and spec.rsplit("#", 1)[1]:
        return
    raise ValueError(f"judge spec {spec!r} not understood; use {SPEC_FORMS}")


def build_judge(spec: str, *, api_key_env: str | None = None, timeout_s: float = 120.0) -> Judge:
    """The judge for ``spec`` (see the module docstring). Starts nothing yet: a local server
    starts on the first call and stops in ``aclose``."""
    from ragmeter.judges.anthropic import AnthropicJudge
    from ragmeter.judges.local import LocalLlamaJudge
    from ragmeter.judges.openai_compat import OpenAICompatJudge

    build_judge_check(spec)
    if spec.startswith(("http://", "https://")):
        url, model = spec.rsplit("#", 1)
        return OpenAICompatJudge(
            url, model, api_key_env=api_key_env, key_required=False, timeout_s=timeout_s
        )
    prefix, _, rest = spec.partition(":")
    if prefix == "openai":
        base = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        return OpenAICompatJudge(
            base,
            rest,
            api_key_env=api_key_env or "OPENAI_API_KEY",
            timeout_s=timeout_s,
            model_id=f"openai:{rest}",
        )
    if prefix == "anthropic":
        base = os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
        return AnthropicJudge(
            rest,
            base_url=base,
            api_key_env=api_key_env or "ANTHROPIC_API_KEY",
            timeout_s=timeout_s,
        )
    n_ctx = int(os.environ.get("RAGMETER_LOCAL_N_CTX", "2048"))
    return LocalLlamaJudge(rest, n_ctx=n_ctx, timeout_s=max(timeout_s, 300.0))

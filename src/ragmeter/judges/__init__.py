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

import inspect
from dataclasses import dataclass, field, replace
from typing import Any

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
from ragmeter.judges.providers import JudgeProvider
from ragmeter.redaction import redact, redact_url
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
MAX_CONTEXTS = 10  # retrieved chunks shown to a judge, top first
DEFAULT_CONTEXT_CHARS = 2000  # of each chunk shown to a judge
LOCAL_CONTEXT_CHARS = 24000  # ... to a local: judge, which fits its prompts to its context


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
    max_contexts: int = MAX_CONTEXTS  # retrieved chunks shown to the judge, top first
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
    """Check ``spec`` before the first question with its provider's own check
    (``JudgeProviderSpec.check``; ``judges.preflight`` holds the built-in ones); return a small
    redacted snapshot of the judge (provider, model, base URL without credentials, key variable,
    what authorization is sent).

    Raises :class:`JudgeConfigError` saying what to do when the spec has no known form, or its
    provider's check fails (a key's variable not set, a model file missing, a server not
    answering). A provider without a check is only looked up."""
    try:
        build_judge_check(spec)  # also remembers URL credentials before the spec is shown
    except JudgeConfigError:
        raise JudgeConfigError(f"--judge {redact_url(spec)}: use {SPEC_FORMS}") from None
    shown = redact_url(spec)
    if not timeout_s > 0:
        raise JudgeConfigError(f"judge timeout_s must be a positive number of seconds: {timeout_s}")
    if spec.startswith(("http://", "https://")):
        provider, model = "http", spec
    else:
        provider, _, model = spec.partition(":")
    factory = registry.get("judges", provider)
    check = getattr(factory, "check", None)  # a provider's own pre-flight (JudgeProviderSpec)
    if check is None:  # found, nothing is contacted
        snapshot = {"provider": provider, "model": model, "judge_model": shown, "contacted": False}
    else:
        found = check(model, shown=shown, api_key_env=api_key_env, timeout_s=timeout_s)
        snapshot = dict(await found if inspect.isawaitable(found) else found)
    snapshot["timeout_s"] = timeout_s
    return dict(redact(snapshot))

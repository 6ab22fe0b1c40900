"""Reliable judge calls: render a versioned prompt, answer from the cache or call the judge,
record the call, validate the JSON with the prompt's pydantic model, repair once, and report
truncation, refusals and invalid output as :class:`JudgeFailure` (raw output kept, message
redacted).

A judge that stops answering costs a bounded time: after ``give_up_after`` calls in a row ended
in a timeout or a connection error (each already retried by the client), the session sends no
more requests and every later call fails at once with the last error, until the session ends.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from ragmeter.embedders.base import FloatArray
from ragmeter.errors import RagmeterError
from ragmeter.judges.base import Judge, JudgeError, JudgeReply, Message, parse_json
from ragmeter.judges.cache import CallRecord, JudgeStore, cache_key
from ragmeter.judges.cost import Budget, Price, call_cost
from ragmeter.judges.fitting import MARGIN_TOKENS, estimate_tokens, fit_contexts
from ragmeter.judges.templates import Prompt, load_prompt, render
from ragmeter.redaction import redact_text
from ragmeter.repeat_ids import repeat_number

T = TypeVar("T", bound=BaseModel)

_REFUSAL = re.compile(
    r"^\W*(i'?m sorry|i am sorry|sorry, |i can(?:no|')t|i am unable|i'?m unable|i won'?t|"
    r"as an ai)",
    re.IGNORECASE,
)
RAW_KEEP = 2000  # characters of raw output kept in a failure's details
GIVE_UP_AFTER = 3  # calls in a row lost to timeouts / connection errors before giving up
DOWN_ERROR_TYPES = frozenset({"timeout", "connection_error"})


class JudgeFailure(RagmeterError):
    """A judge verdict that could not be had: ``error_type`` is invalid, truncated, refused,
    error or too_long (the prompt does not fit the judge's context even without evidence; not
    sent).
    The message is redacted; ``raw`` keeps the judge's output as it came (``details`` carries a
    redacted copy of its start, for the store)."""

    def __init__(
        self,
        error_type: str,
        message: str,
        raw: str | None = None,
        calls: list[int] | None = None,
    ) -> None:
        self.message = redact_text(message)
        super().__init__(f"judge {error_type}: {self.message}")
        self.error_type = error_type
        self.raw = raw
        self.calls = calls or []
        self.evidence: str | None = None  # how the evidence was trimmed, when it was

    @property
    def details(self) -> dict[str, Any]:
        out: dict[str, Any] = {"judge_failure": self.error_type, "judge_calls": self.calls}
        if self.evidence:
            out["evidence_trimmed"] = self.evidence
        if self.raw is not None:
            out["judge_raw_output"] = redact_text(self.raw[:RAW_KEEP])
        return out


@dataclass
class Verdict(Generic[T]):
    value: T
    prompt: str
    prompt_version: str
    calls: list[int] = field(default_factory=list)
    repaired: bool = False
    # how the evidence was trimmed to fit the judge's context (None: sent whole)
    evidence: str | None = None


def _errors(exc: ValidationError | ValueError) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}" for e in exc.errors()[:5]
        )
    return str(exc)


class JudgeSession:
    """One judging pass: a judge, its records/cache store, a price table, a budget and the
    embedder of the tasks that need one."""

    def __init__(
        self,
        judge: Judge,
        store: JudgeStore | None = None,
        *,
        use_cache: bool = True,
        prices: dict[str, Price] | None = None,
        budget: Budget | None = None,
        concurrency: int = 2,
        run_id: str | None = None,
        embed: Callable[[list[str]], FloatArray] | None = None,
        give_up_after: int | None = GIVE_UP_AFTER,
        prompts: dict[str, str] | None = None,
    ) -> None:
        self.judge = judge
        # template a task asks -> the template asked instead (another prompt version)
        self.prompts = prompts or {}
        # sentence vectors (L2-normalised) for the tasks that compare texts by embedding;
        # None when no embedder could be built
        self.embed = embed
        self.store = store
        self.use_cache = use_cache and store is not None
        self.prices = prices
        self.budget = budget or Budget()
        self.run_id = run_id
        self.requests = 0  # calls that reached the judge (cache hits excluded)
        self.cache_hits = 0
        self._slots = asyncio.Semaphore(concurrency)
        # None: never give up; else the count of consecutive lost calls that stops the session
        self.give_up_after = give_up_after
        self.lost_in_a_row = 0
        self._last_loss: str | None = None

    def template_for(self, prompt_name: str) -> str:
        """The template asked for ``prompt_name``: itself, or the version the session swaps in."""
        return self.prompts.get(prompt_name, prompt_name)

    async def ask(
        self,
        prompt_name: str,
        values: dict[str, str | list[str]],
        output: type[T],
        *,
        case_id: str | None = None,
        max_tokens: int = 512,
        check: Callable[[T], None] | None = None,
        items: tuple[str, int] | None = None,
    ) -> Verdict[T]:
        """Ask ``prompt_name`` with ``values``; the reply must validate as ``output`` and pass
        ``check``. ``items=(field, n)`` tells the judge's schema that list ``field`` holds
        exactly ``n`` items (a grammar-constrained server then cannot return fewer). A template
        the session swaps (``prompts``) is replaced by its other version."""
        prompt = load_prompt(self.template_for(prompt_name))
        messages, evidence = await self._fit(prompt, values, max_tokens)
        schema = output.model_json_schema()
        if items is not None:
            field_name, count = items
            schema["properties"][field_name] = {
                **schema["properties"][field_name],
                "minItems": count,
                "maxItems": count,
            }
        try:
            verdict = await self._ask(prompt, messages, schema, output, case_id, max_tokens, check)
        except JudgeFailure as exc:  # its details say the evidence was trimmed too
            exc.evidence = evidence
            raise
        verdict.evidence = evidence
        return verdict

    async def _ask(
        self,
        prompt: Prompt,
        messages: list[Message],
        schema: dict[str, Any],
        output: type[T],
        case_id: str | None,
        max_tokens: int,
        check: Callable[[T], None] | None,
    ) -> Verdict[T]:
        calls: list[int] = []
        reply = await self._call(prompt, messages, schema, max_tokens, case_id, "", calls)
        try:
            return Verdict(
                self._accept(reply, output, check, calls),
                prompt.name,
                prompt.version,
                calls,
            )
        except (ValidationError, ValueError) as exc:
            problem = _errors(exc)
        repair = [
            *messages,
            {"role": "assistant", "content": reply.text},
            {
                "role": "user",
                "content": f"Your reply is not valid: {problem}. Reply again with only the "
                "JSON object in the required format.",
            },
        ]
        if not await self._fits(repair, max_tokens):
            raise JudgeFailure(
                "invalid",
                f"output invalid ({problem}) and no room for a repair in the judge's context",
                reply.text,
                calls,
            )
        reply = await self._call(prompt, repair, schema, max_tokens, case_id, ":repair", calls)
        try:
            value = self._accept(reply, output, check, calls)
        except (ValidationError, ValueError) as exc:
            raise JudgeFailure(
                "invalid", f"output invalid after one repair: {_errors(exc)}", reply.text, calls
            ) from exc
        return Verdict(value, prompt.name, prompt.version, calls, repaired=True)

    def _window(self) -> int | None:
        window = getattr(self.judge, "context_window", None)
        return window if isinstance(window, int) and window > 0 else None

    async def _count(self, messages: list[Message]) -> int:
        count = getattr(self.judge, "count_tokens", None)
        if count is None:
            return estimate_tokens(messages)
        try:
            return int(await count(messages))
        except JudgeError as exc:
            raise JudgeFailure("error", str(exc)) from exc

    async def _fits(self, messages: list[Message], max_tokens: int) -> bool:
        window = self._window()
        if window is None:
            return True
        return await self._count(messages) <= window - max_tokens - MARGIN_TOKENS

    async def _fit(
        self, prompt: Prompt, values: dict[str, str | list[str]], max_tokens: int
    ) -> tuple[list[Message], str | None]:
        """The prompt's messages, with the evidence trimmed to its best windows when the judge
        has a context window the whole prompt and ``max_tokens`` do not fit in
        (:mod:`ragmeter.judges.fitting`); and the note saying so (None: nothing trimmed)."""
        window = self._window()
        if window is None:
            return render(prompt, values), None
        contexts = values.get("contexts")
        evidence = list(contexts) if isinstance(contexts, list) and contexts else []
        query = " ".join(
            " ".join(v) if isinstance(v, list) else v for k, v in values.items() if k != "contexts"
        )

        def with_contexts(texts: list[str]) -> list[Message]:
            return render(prompt, {**values, "contexts": texts} if evidence else values)

        limit = window - max_tokens - MARGIN_TOKENS
        try:
            messages, fit, _ = await fit_contexts(
                evidence, query, with_contexts, self._count, limit
            )
        except OverflowError as exc:
            raise JudgeFailure(
                "too_long", f"not sent: {exc} ({window} tokens less max_tokens {max_tokens})"
            ) from None
        if fit is None:
            return messages, None
        return messages, (
            f"evidence trimmed to fit {window} tokens: {fit.kept} of {fit.total} windows kept"
        )

    def _accept(
        self,
        reply: JudgeReply,
        output: type[T],
        check: Callable[[T], None] | None,
        calls: list[int],
    ) -> T:
        if reply.refusal or reply.finish_reason == "refusal":
            raise JudgeFailure("refused", reply.refusal or "the judge refused", reply.text, calls)
        if reply.truncated:
            raise JudgeFailure("truncated", "the reply hit the max_tokens limit", reply.text, calls)
        if reply.parsed is None:
            if _REFUSAL.match(reply.text):
                raise JudgeFailure("refused", "the judge declined to answer", reply.text, calls)
            raise ValueError(f"reply is not JSON: {reply.text[:120]!r}")
        value = output.model_validate(reply.parsed)
        if check is not None:
            check(value)
        return value

    async def _call(
        self,
        prompt: Prompt,
        messages: list[Message],
        schema: dict[str, Any],
        max_tokens: int,
        case_id: str | None,
        suffix: str,
        calls: list[int],
    ) -> JudgeReply:
        model, params = self.judge.model, self.judge.params
        key = cache_key(model, prompt.version, messages, params, schema, max_tokens)
        repeat = repeat_number(case_id) if case_id is not None else 1
        if repeat > 1:  # --repeats: the same question asked again is judged again
            key = hashlib.sha256(f"{key}#repeat{repeat}".encode()).hexdigest()
        record = CallRecord(
            cache_key=key,
            purpose=prompt.name.rsplit(".", 1)[0] + suffix,
            model=model,
            prompt_name=prompt.name,
            prompt_version=prompt.version,
            params={**params, "max_tokens": max_tokens},
            messages=messages,
            status="ok",
            case_id=case_id,
            run_id=self.run_id,
        )
        hit = self.store.lookup(key) if self.use_cache and self.store else None
        if hit is not None:
            self.cache_hits += 1
            record.output_text, record.finish_reason = hit.output_text, hit.finish_reason
            record.prompt_tokens, record.completion_tokens = (
                hit.prompt_tokens,
                hit.completion_tokens,
            )
            record.cost_usd, record.latency_ms, record.cached = 0.0, 0.0, True
            calls.append(self._record(record))
            return JudgeReply(
                text=hit.output_text,
                parsed=parse_json(hit.output_text),
                prompt_tokens=hit.prompt_tokens,
                completion_tokens=hit.completion_tokens,
                latency_ms=0.0,
                finish_reason=hit.finish_reason,
            )
        self.budget.check()
        async with self._slots:
            self.budget.check()
            if self.gave_up:
                message = (
                    f"not sent: the judge lost {self.lost_in_a_row} calls in a row, "
                    f"last: {self._last_loss}"
                )
                record.status, record.error = "error", message
                calls.append(self._record(record))
                raise JudgeFailure("error", message, None, calls)
            self.requests += 1
            try:
                reply = await self.judge.complete(messages, schema, max_tokens)
            except JudgeError as exc:
                if exc.error_type in DOWN_ERROR_TYPES:
                    self.lost_in_a_row += 1
                    self._last_loss = str(exc)
                record.status, record.error = "error", str(exc)
                calls.append(self._record(record))
                raise JudgeFailure("error", str(exc), None, calls) from exc
            self.lost_in_a_row = 0
        cost = call_cost(model, reply.prompt_tokens, reply.completion_tokens, self.prices)
        self.budget.add(cost, reply.prompt_tokens, reply.completion_tokens)
        record.output_text, record.finish_reason = reply.text, reply.finish_reason
        record.prompt_tokens, record.completion_tokens = (
            reply.prompt_tokens,
            reply.completion_tokens,
        )
        record.cost_usd, record.latency_ms = cost, reply.latency_ms
        calls.append(self._record(record))
        return reply

    @property
    def gave_up(self) -> bool:
        """True once ``give_up_after`` calls in a row were lost to timeouts or connection
        errors: later calls are not sent."""
        return self.give_up_after is not None and self.lost_in_a_row >= self.give_up_after

    def _record(self, record: CallRecord) -> int:
        return self.store.record(record) if self.store is not None else 0

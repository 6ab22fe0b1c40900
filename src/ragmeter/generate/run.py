"""The generation loop: plan, ask, check, deduplicate, validate, keep.

For each category the loop asks for as many cases as it still needs, in rounds, until the category
has its share, its attempts run out (:data:`ATTEMPTS_PER_CASE` per case asked) or its
candidate chunks do. One attempt is:

1. the generation call (``generate_KIND.v1``) over the attempt's chunks; the judge session
   validates the JSON with the category's pydantic model and :func:`~ragmeter.generate.categories.
   check_reply`, asks for one repair of a malformed reply, and a second malformed reply skips
   the attempt with its reason;
2. the near-duplicate rule (:mod:`ragmeter.generate.dedup`) against the questions kept so far;
3. the validation call (``validate_case.v1``): an answerable case is kept only when the judge,
   shown only its gold passages and the reference answer, says they answer the question; an
   unanswerable case only when the judge, shown the chunks the reference pipeline
   retrieves for it (and the chunk it was written from), says they do not answer it.

Attempts of one round are asked concurrently (the session's ``concurrency``), then
deduplicated and kept in the seeded plan order, so a run is reproducible.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ragmeter.generate.categories import (
    PROMPTS,
    VALIDATE_PROMPT,
    CaseCheck,
    Unanswerable,
    _Out,
    allocate,
    build_case,
    check_reply,
)
from ragmeter.generate.dedup import Deduper
from ragmeter.generate.plan import Corpus, candidates
from ragmeter.judges.cost import BudgetReachedError
from ragmeter.judges.session import JudgeFailure, JudgeSession, Verdict
from ragmeter.models import Case
from ragmeter.targets.reference.chunking import Chunk

ATTEMPTS_PER_CASE = 2  # generation attempts per case asked, at most
NEAREST_K = 3  # chunks shown when validating an unanswerable case
MAX_CONTEXT_CHARS = 1500  # each passage shown to the judge is cut to this many characters

# rejection reasons (the summary counts them per category)
MALFORMED = "malformed reply"
DUPLICATE = "near-duplicate question"
NOT_CONFIRMED = "not confirmed by validation"
VALIDATION_MALFORMED = "malformed validation reply"
JUDGE_ERROR = "judge error"


@dataclass(frozen=True)
class Options:
    n: int
    categories: tuple[str, ...]
    seed: int = 0
    dataset: str = "generated"
    attempts_per_case: int = ATTEMPTS_PER_CASE
    nearest_k: int = NEAREST_K
    max_context_chars: int = MAX_CONTEXT_CHARS


@dataclass
class Rejection:
    category: str
    reason: str  # one of the reasons above
    detail: str
    chunks: list[str]
    question: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "reason": self.reason,
            "detail": self.detail,
            "chunks": self.chunks,
            "question": self.question,
        }


@dataclass
class CategoryCount:
    asked: int
    attempts: int = 0
    kept: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    exhausted: bool = False  # no candidate chunk left

    def as_dict(self) -> dict[str, Any]:
        return {
            "asked": self.asked,
            "attempts": self.attempts,
            "kept": self.kept,
            "rejected": dict(self.rejected),
            "out_of_chunks": self.exhausted,
        }


@dataclass
class Summary:
    asked: int
    categories: dict[str, CategoryCount]
    judge_model: str
    rejections: list[Rejection] = field(default_factory=list)
    stopped: str | None = None  # why the loop stopped early (budget, judge down)
    requests: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None  # None: the judge's price is unknown
    output: str | None = None

    @property
    def kept(self) -> int:
        return sum(count.kept for count in self.categories.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "asked": self.asked,
            "kept": self.kept,
            "categories": {
                category: count.as_dict() for category, count in self.categories.items()
            },
            "rejections": [r.as_dict() for r in self.rejections],
            "stopped": self.stopped,
            "judge": {
                "model": self.judge_model,
                "requests": self.requests,
                "cache_hits": self.cache_hits,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "cost_usd": self.cost_usd,
            },
            "output": self.output,
        }


@dataclass
class _Attempt:
    category: str
    seq: int
    chunks: tuple[Chunk, ...]

    @property
    def key(self) -> str:
        return f"generate:{self.category}:{self.seq}"

    @property
    def chunk_ids(self) -> list[str]:
        return [chunk.chunk_id for chunk in self.chunks]


class Generator:
    """One generation run over ``corpus`` with ``session``'s judge."""

    def __init__(self, corpus: Corpus, session: JudgeSession, options: Options) -> None:
        self.corpus = corpus
        self.session = session
        self.options = options
        quotas = allocate(options.n, options.categories)
        self.summary = Summary(
            asked=options.n,
            categories={
                category: CategoryCount(asked=quotas[category]) for category in options.categories
            },
            judge_model=session.judge.model,
        )
        self.pools: dict[str, Iterator[tuple[Chunk, ...]]] = {
            category: candidates(corpus, category, options.seed) for category in options.categories
        }
        self.dedup = Deduper()
        self.kept: dict[str, list[Case]] = {category: [] for category in options.categories}
        self._seq = 0

    def _text(self, chunk: Chunk) -> str:
        heading = f"{chunk.heading_path}\n\n" if chunk.heading_path else ""
        return f"{heading}{chunk.text}"[: self.options.max_context_chars]

    def _reject(self, attempt: _Attempt, reason: str, detail: str, question: str | None) -> None:
        self.summary.categories[attempt.category].rejected[reason] += 1
        self.summary.rejections.append(
            Rejection(attempt.category, reason, detail, attempt.chunk_ids, question)
        )

    def _next_round(self) -> list[_Attempt]:
        batch: list[_Attempt] = []
        for category, count in self.summary.categories.items():
            limit = count.asked * self.options.attempts_per_case
            need = min(count.asked - count.kept, limit - count.attempts)
            for _ in range(max(need, 0) if count.asked else 0):
                chunks = next(self.pools[category], None)
                if chunks is None:
                    count.exhausted = True
                    break
                self._seq += 1
                count.attempts += 1
                batch.append(_Attempt(category, self._seq, chunks))
        return batch

    async def run(self) -> list[Case]:
        """Generate; the kept cases in category order (every category's cases in plan order)."""
        try:
            while not self.summary.stopped:
                batch = self._next_round()
                if not batch:
                    break
                await self._round(batch)
        finally:
            budget = self.session.budget
            self.summary.requests = self.session.requests
            self.summary.cache_hits = self.session.cache_hits
            self.summary.prompt_tokens = budget.prompt_tokens
            self.summary.completion_tokens = budget.completion_tokens
            self.summary.cost_usd = budget.spent if self._priced() else None
        return [case for category in self.options.categories for case in self.kept[category]]

    def _priced(self) -> bool:
        from ragmeter.judges.cost import price_for

        return price_for(self.session.judge.model, self.session.prices) is not None

    async def _round(self, batch: list[_Attempt]) -> None:
        drafts = await asyncio.gather(*(self._draft(attempt) for attempt in batch))
        fresh: list[tuple[_Attempt, Verdict[_Out]]] = []
        for attempt, draft in zip(batch, drafts, strict=True):
            if draft is None:
                continue
            question: str = getattr(draft.value, "question", "")
            duplicate = self.dedup.duplicate_of(question)
            if duplicate is not None:
                other, score = duplicate
                self._reject(
                    attempt, DUPLICATE, f"Jaccard {score:.2f} with {other!r}", question.strip()
                )
                continue
            self.dedup.add(attempt.key, question)
            fresh.append((attempt, draft))
        checks = await asyncio.gather(*(self._validate(a, d) for a, d in fresh))
        for (attempt, draft), check in zip(fresh, checks, strict=True):
            if check is None:
                self.dedup.forget(attempt.key)
                continue
            self._keep(attempt, draft, *check)

    def _stop_on(self, exc: BaseException) -> None:
        if isinstance(exc, BudgetReachedError):
            self.summary.stopped = f"judge budget reached: {exc}"
        elif self.session.gave_up:
            self.summary.stopped = f"the judge stopped answering: {exc}"

    async def _draft(self, attempt: _Attempt) -> Verdict[_Out] | None:
        texts = [self._text(chunk) for chunk in attempt.chunks]
        output = _output_of(attempt.category)
        if self.summary.stopped:
            self._reject(attempt, JUDGE_ERROR, f"not asked: {self.summary.stopped}", None)
            return None
        try:
            return await self.session.ask(
                PROMPTS[attempt.category],
                {"contexts": texts},
                output,
                case_id=attempt.key,
                max_tokens=320,
                check=lambda value: check_reply(attempt.category, value, texts),
            )
        except JudgeFailure as exc:
            reason = (
                MALFORMED if exc.error_type in ("invalid", "truncated", "refused") else JUDGE_ERROR
            )
            self._stop_on(exc)
            self._reject(attempt, reason, f"generation {exc.error_type}: {exc.message}", None)
        except BudgetReachedError as exc:
            self._stop_on(exc)
            self._reject(attempt, JUDGE_ERROR, str(exc), None)
        return None

    def _contexts(self, attempt: _Attempt, question: str) -> list[Chunk]:
        if attempt.category != "unanswerable":
            return list(attempt.chunks)
        shown = self.corpus.nearest(question, self.options.nearest_k)
        ids = {chunk.chunk_id for chunk in shown}
        return shown + [chunk for chunk in attempt.chunks if chunk.chunk_id not in ids]

    async def _validate(
        self, attempt: _Attempt, draft: Verdict[_Out]
    ) -> tuple[Verdict[CaseCheck], list[Chunk]] | None:
        value = draft.value
        question = " ".join(getattr(value, "question", "").split())
        contexts = self._contexts(attempt, question)
        reference = "" if isinstance(value, Unanswerable) else str(getattr(value, "answer", ""))
        try:
            check = await self.session.ask(
                VALIDATE_PROMPT,
                {
                    "question": question,
                    "reference": reference or "(no reference answer)",
                    "contexts": [self._text(chunk) for chunk in contexts],
                },
                CaseCheck,
                case_id=attempt.key,
                max_tokens=200,
            )
        except JudgeFailure as exc:
            reason = (
                VALIDATION_MALFORMED
                if exc.error_type in ("invalid", "truncated", "refused")
                else JUDGE_ERROR
            )
            self._stop_on(exc)
            self._reject(attempt, reason, f"validation {exc.error_type}: {exc.message}", question)
            return None
        except BudgetReachedError as exc:
            self._stop_on(exc)
            self._reject(attempt, JUDGE_ERROR, str(exc), question)
            return None
        verdict = check.value
        if attempt.category == "unanswerable":
            problem = "the nearest chunks answer it" if verdict.answerable else None
        else:
            problem = None if verdict.answerable else "its gold passages do not answer it"
        if problem is not None:
            why = f": {verdict.reasoning.strip()}" if verdict.reasoning.strip() else ""
            self._reject(attempt, NOT_CONFIRMED, f"{problem}{why}", question)
            return None
        return check, contexts

    def _keep(
        self,
        attempt: _Attempt,
        draft: Verdict[_Out],
        check: Verdict[CaseCheck],
        contexts: list[Chunk],
    ) -> None:
        category = attempt.category
        count = self.summary.categories[category]
        count.kept += 1
        value = draft.value
        metadata: dict[str, Any] = {
            "category": category,
            "source_chunks": attempt.chunk_ids,
            "seed": self.options.seed,
            "judge_model": self.session.judge.model,
            "prompts": {draft.prompt: draft.prompt_version, check.prompt: check.prompt_version},
            "generation_calls": draft.calls,
            "repaired": draft.repaired or check.repaired,
            "validation": {
                "answerable": check.value.answerable,
                "reasoning": check.value.reasoning,
                "contexts": [chunk.chunk_id for chunk in contexts],
                "calls": check.calls,
            },
        }
        if isinstance(value, Unanswerable):
            metadata["why_unanswerable"] = value.reason
        case_id = f"{self.options.dataset}-{category.replace('_', '-')}-{count.kept:03d}"
        self.kept[category].append(
            build_case(
                case_id,
                category,
                value,
                list(attempt.chunks),
                dataset=self.options.dataset,
                corpus=self.corpus.argument,
                metadata=metadata,
            )
        )


def _output_of(category: str) -> type[_Out]:
    from ragmeter.generate.categories import OUTPUTS

    return OUTPUTS[category]


async def generate(corpus: Corpus, session: JudgeSession, options: Options) -> tuple[
    list[Case], Summary
]:  # fmt: skip
    """The cases a run keeps and its summary (the caller closes the judge)."""
    generator = Generator(corpus, session, options)
    cases = await generator.run()
    return cases, generator.summary

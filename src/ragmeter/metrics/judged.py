"""LLM-judged metrics (seeds 001 and 004), computed by the judge named with ``--judge``.

- ``faithfulness``: share of the answer's claims the retrieved contexts support (claims
  extracted in one call, all verified in one more call); 1.0 when the answer states no claim.
- ``answer_relevancy``: the judge's direct 0..1 score of how well the answer addresses the
  question (seed 001's direct-assessment variant).
- ``context_precision``: share of the retrieved contexts (top ``max_contexts``) judged useful;
  ``context_precision_ranked``: RAGAS's rank-weighted form, the mean of precision@k over the
  ranks holding a relevant context (0 when none is). One call judges all contexts.
- ``context_recall``: share of the reference answer's statements attributable to the contexts
  (statements split and attributed in one call); 0.0 with no retrieved context, without a call.
- ``groundedness`` (0-5, with ``supported_claims`` / ``unsupported_claims`` in details) and
  ``correctness`` (0-5) on seed 004's scales.
- ``judged_correct_rate`` / ``judged_wrong_rate`` / ``judged_dont_know_rate``: 1/0 per case
  from one CORRECT / WRONG / DONT_KNOW classification against the reference answer, and beside
  each its count (``judged_correct_count``, ...: the same 1/0 summed over the judged cases).

The judge is the one the run passes in ``MetricSettings.judge`` (settings made by
``ragmeter.judges.judge_settings`` from the config); without one every judged score is
``skipped`` ("no judge configured (use --judge ...)"). Nothing is read from module state, so
runs in one process keep their own judges. All judge calls happen
in the shared ``prepare`` hook (in a worker thread with its own event loop), concurrently up to
the configured limit; every score's details name the judge model, the prompt versions and the
ids of its ``judge_calls`` records. A case whose judge output stays invalid after one repair,
is truncated or refused is ``failed`` with the reason; once ``max_cost`` is spent the
remaining judged scores are ``skipped`` ("budget reached").
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ragmeter.embedders.base import EmbedderError, FloatArray, build_embedder
from ragmeter.judges import MAX_CONTEXTS, JudgeSettings
from ragmeter.judges.cache import JudgeStore
from ragmeter.judges.cost import Budget, BudgetReachedError, price_for
from ragmeter.judges.session import JudgeFailure, JudgeSession
from ragmeter.judges.tasks import TASKS, Item, Task
from ragmeter.metrics.abstention import ABSTAINED, refusal_rule
from ragmeter.metrics.base import (
    INPUTS,
    Metric,
    MetricDeclarationError,
    MetricOutput,
    MetricSettings,
    SkipScore,
)
from ragmeter.metrics.family import MetricFamily, MetricParam, setting
from ragmeter.models import Case, Response, RetrievedChunk

NO_JUDGE = "no judge configured (use --judge ...)"
BUDGET = "budget reached"
EMPTY_ANSWER = "empty answer (nothing to judge)"
NO_CONTEXTS = "target retrieved no chunks"
EMBEDDING_TASKS = frozenset({"answer_relevancy", "answer_correctness"})
# the tasks that grade the claims of the answer: a refusal (the abstention family's rules, or
# the abstention judge's verdict when it judged the case) is skipped, never judged
CLAIM_TASKS = frozenset({"faithfulness", "groundedness"})
NOT_GIVEN = "the judge's prompt does not give this metric (a prompt version without quotes)"


class JudgedScoreError(Exception):
    """A judged score that failed; ``details`` keeps the judge's raw output and call ids."""

    def __init__(self, message: str, details: dict[str, Any]) -> None:
        super().__init__(message)
        self.details = details


Outcome = tuple[float, dict[str, Any]] | SkipScore | JudgedScoreError


def applies(task: Task, case: Case, response: Response) -> bool:
    return all(INPUTS[name][0](case, response) for name in task.requires)


def make_item(case: Case, response: Response, settings: JudgeSettings) -> Item:
    chunks = response.retrieved[: settings.max_contexts]
    return Item(
        case_id=case.case_id,
        question=case.question,
        answer=response.answer,
        reference=case.reference_answer,
        contexts=[chunk.text[: settings.context_chars] for chunk in chunks],
        answerable=case.answerable,
        abstained=response.abstained,
        citations=cited_sources(response, chunks) if response.has("citations") else None,
    )


def cited_sources(response: Response, shown: list[RetrievedChunk]) -> list[str]:
    """The response's citations as the judge reads them: ``context N`` when the cited chunk is
    the N-th context shown, else the cited document (or chunk) id."""
    position = {chunk.id: index for index, chunk in enumerate(shown, 1) if chunk.id}
    named: list[str] = []
    for citation in response.citations:
        if citation.chunk_id and citation.chunk_id in position:
            named.append(f"context {position[citation.chunk_id]}")
        else:
            named.append(citation.doc_id or citation.chunk_id or citation.rel_path or "?")
    return list(dict.fromkeys(named))


def _failure(exc: Exception) -> JudgedScoreError:
    if isinstance(exc, JudgeFailure):
        raw = f"; raw output: {exc.raw[:200]!r}" if exc.raw is not None else ""
        return JudgedScoreError(f"{exc}{raw} (judge calls {exc.calls})", exc.details)
    return JudgedScoreError(f"{type(exc).__name__}: {exc}", {})


class JudgedState:
    """Per-run outcomes of the judged metrics, filled by one shared ``prepare`` hook with the
    judge of the run's settings (None: every judged score is skipped)."""

    def __init__(
        self,
        tasks: list[Task],
        embedder: str = "minilm",
        judge: JudgeSettings | None = None,
        phrases: tuple[str, ...] = (),
    ) -> None:
        self.tasks = tasks
        self.phrases = phrases  # MetricSettings.abstention_phrases: refusals by phrase
        self.embedder = embedder
        self.embedder_problem: str | None = None  # why embedding tasks fell back, if they did
        self.settings = judge
        self.outcomes: dict[tuple[str, str], Outcome] = {}  # (metric, case id) -> outcome
        self.session: JudgeSession | None = None  # the last session (tests read its counters)
        # the run's spending against max_cost: one budget for all of the run's batches
        self.budget = Budget(judge.max_cost if judge is not None else None)

    def _set(self, task: Task, case_id: str, outcome: Outcome) -> None:
        for metric in task.metric_names:
            self.outcomes[(metric, case_id)] = outcome

    def prepare(self, pairs: list[tuple[Case, Response]]) -> None:
        """Judge a batch of the run (the outcomes of earlier batches are dropped: they have
        been scored and stored)."""
        self.outcomes.clear()
        self._judge(pairs)

    def _judge(self, pairs: list[tuple[Case, Response]]) -> None:
        settings = self.settings
        if settings is None or settings.spec is None:
            return
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragmeter-judge") as pool:
            pool.submit(lambda: asyncio.run(self._judge_all(pairs, settings))).result()

    async def _judge_all(self, pairs: list[tuple[Case, Response]], settings: JudgeSettings) -> None:
        judge = settings.build()
        if settings.max_cost is not None and price_for(judge.model, settings.prices) is None:
            raise ValueError(
                f"max_cost is set but judge {judge.model} has no price; add it to the prices"
            )
        store = JudgeStore(settings.store)
        embed = (
            self._embed_function() if any(t.name in EMBEDDING_TASKS for t in self.tasks) else None
        )
        session = JudgeSession(
            judge,
            store,
            use_cache=settings.use_cache,
            prices=settings.prices,
            budget=self.budget,
            concurrency=settings.concurrency,
            run_id=settings.run_id,
            embed=embed,
            prompts=dict(settings.prompts),
        )
        self.session = session
        try:
            await asyncio.gather(
                *(self._run_case(session, case, response, settings) for case, response in pairs)
            )
        finally:
            await judge.aclose()
            store.close()

    def _embed_function(self) -> Callable[[list[str]], FloatArray] | None:
        """A thread-safe embed function, or None (and the reason kept) when the embedder
        cannot be built: answer relevancy then uses the direct score, answer correctness the
        statement F1 alone."""
        try:
            embedder = build_embedder(self.embedder)
        except EmbedderError as exc:
            self.embedder_problem = str(exc)
            return None
        lock = threading.Lock()

        def embed(texts: list[str]) -> FloatArray:
            with lock:
                return embedder.embed(texts)

        return embed

    async def _run_case(
        self, session: JudgeSession, case: Case, response: Response, settings: JudgeSettings
    ) -> None:
        """Every applicable task of one case, concurrently, except that the claim tasks wait
        for the abstention task when both run: a refusal the judge finds is not graded."""
        tasks = [task for task in self.tasks if applies(task, case, response)]
        first = [t for t in tasks if t.name == "abstention"]
        after = [t for t in tasks if t.name in CLAIM_TASKS] if first else []

        async def ordered() -> None:
            for task in first:
                await self._run(session, task, case, response, settings)
            await asyncio.gather(*(self._run(session, t, case, response, settings) for t in after))

        rest = [t for t in tasks if t not in first and t not in after]
        await asyncio.gather(
            ordered(), *(self._run(session, t, case, response, settings) for t in rest)
        )

    def refusal(self, case: Case, response: Response) -> str | None:
        """The rule that makes the response a refusal: the abstention family's (field, empty
        answer, phrase, short non-answer), else ``judge`` when the abstention judge of this
        pass judged it abstained; None when it answered."""
        how = refusal_rule(response, self.phrases)
        if how is not None:
            return how
        verdict = self.outcomes.get(("judged_abstention_accuracy", case.case_id))
        if isinstance(verdict, tuple) and verdict[1].get("detected_by") == "judge" and verdict[0]:
            return "judge"
        return None

    async def _run(
        self,
        session: JudgeSession,
        task: Task,
        case: Case,
        response: Response,
        settings: JudgeSettings,
    ) -> None:
        item = make_item(case, response, settings)
        if task.needs_answer and not item.answer.strip():
            self._set(task, case.case_id, SkipScore(EMPTY_ANSWER))
            return
        if task.name in CLAIM_TASKS:
            how = self.refusal(case, response)
            if how is not None:  # no claims to grade: skipped without a call
                self._set(task, case.case_id, SkipScore(f"{ABSTAINED} ({how})"))
                return
        if "retrieved" in task.requires and not item.contexts:
            if task.name == "context_recall":
                self._set(task, case.case_id, (0.0, {"no_contexts": True}))
            else:
                self._set(task, case.case_id, SkipScore(NO_CONTEXTS))
            return
        try:
            values = await task.fn(session, item)
        except BudgetReachedError:
            self._set(task, case.case_id, SkipScore(BUDGET))
            return
        except Exception as exc:  # recorded per case; one bad verdict must not stop the pass
            self._set(task, case.case_id, _failure(exc))
            return
        for metric, (value, details) in values.items():
            if task.name in EMBEDDING_TASKS and self.embedder_problem:
                details = {**details, "embedder_problem": self.embedder_problem}
            self.outcomes[(metric, case.case_id)] = (value, details)
        for metric in set(task.metric_names) - set(values):  # e.g. no quotes asked for
            self.outcomes[(metric, case.case_id)] = SkipScore(NOT_GIVEN)

    def compute_fn(self, metric: str) -> Callable[[Case, Response], MetricOutput]:
        def compute(case: Case, response: Response) -> MetricOutput:
            if self.settings is None or self.settings.spec is None:
                raise SkipScore(NO_JUDGE)
            outcome = self.outcomes.get((metric, case.case_id))
            if outcome is None:  # scored without the prepare hook (the batch's are kept)
                self._judge([(case, response)])
                outcome = self.outcomes.get((metric, case.case_id))
            if outcome is None:
                raise RuntimeError(f"no judged outcome for case {case.case_id!r}")
            if isinstance(outcome, Exception):
                raise outcome
            return outcome

        return compute


def selected_tasks(judge: JudgeSettings | None) -> list[Task]:
    """The tasks the judge settings name (``tasks``), else all."""
    names = judge.tasks if judge is not None else None
    if names is None:
        return list(TASKS.values())
    unknown = sorted(set(names) - set(TASKS))
    if unknown:
        raise MetricDeclarationError(f"unknown judged tasks {unknown}; known: {sorted(TASKS)}")
    return [TASKS[name] for name in names]


# seed 001's RAGAS composite weights
RAGAS_WEIGHTS: dict[str, float] = {
    "faithfulness": 0.30,
    "context_precision": 0.20,
    "context_recall": 0.20,
    "answer_relevancy": 0.30,
}


def merge_audit(audit: dict[str, Any], details: dict[str, Any]) -> None:
    """Collect the judge model, prompt versions and call ids of the parts of a composite."""
    if "judge_model" in details:
        audit["judge_model"] = details["judge_model"]
    audit.setdefault("prompt_versions", {}).update(details.get("prompt_versions", {}))
    audit.setdefault("judge_calls", []).extend(details.get("judge_calls", []))
    audit["repaired"] = bool(audit.get("repaired")) or bool(details.get("repaired"))


def ragas_composite(
    state: JudgedState, chosen: set[str]
) -> Callable[[Case, Response], MetricOutput]:
    """Seed 001's composite: the weighted mean of the four RAGAS-style scores of a case, with
    the weights renormalised over those that were measured (skipped or failed ones left out)."""
    # the four metric names are also their judge tasks' names
    parts = {name: state.compute_fn(name) for name in RAGAS_WEIGHTS if name in chosen}

    def compute(case: Case, response: Response) -> MetricOutput:
        measured: dict[str, float] = {}
        left_out: dict[str, str] = {}
        failed: dict[str, str] = {}
        audit: dict[str, Any] = {}  # the judge model and call ids, as every judged score has
        for name, part in parts.items():
            try:
                output = part(case, response)
            except SkipScore as exc:  # this part does not apply: it does not count
                left_out[name] = str(exc)
                continue
            except Exception as exc:  # this part was not measured: it does not count
                left_out[name] = failed[name] = str(exc)
                continue
            measured[name] = output[0] if isinstance(output, tuple) else output
            if isinstance(output, tuple):
                merge_audit(audit, output[1])
        if not measured and failed:  # not measured because a part failed: a failure too
            raise RuntimeError(
                "none of its parts was measured: "
                + "; ".join(f"{name}: {reason}" for name, reason in failed.items())
            )
        if not measured and len(set(left_out.values())) == 1:
            raise SkipScore(next(iter(left_out.values())))  # e.g. no judge configured
        if not measured:
            raise SkipScore(
                "none of faithfulness, context precision/recall, answer relevancy applies"
            )
        total = sum(RAGAS_WEIGHTS[name] for name in measured)
        value = sum(RAGAS_WEIGHTS[name] / total * v for name, v in measured.items())
        return value, {
            **audit,
            "measured": measured,
            "left_out": left_out,
            "weights": {n: RAGAS_WEIGHTS[n] / total for n in measured},
        }

    return compute


def judged_metrics(settings: MetricSettings) -> list[Metric]:
    """Every judged metric, declared by its task (``ragmeter.judges.tasks.TASKS``)."""
    judge = settings.judge
    if judge is not None:
        judge = dataclasses.replace(
            judge,
            max_contexts=settings.option("max_contexts", MAX_CONTEXTS),
            max_context_chars=settings.option("max_context_chars", judge.max_context_chars),
        )
    tasks = selected_tasks(judge)
    state = JudgedState(tasks, settings.embedder, judge, settings.abstention_phrases)
    prepare = state.prepare  # one object, so the engine prepares the family once
    chosen = {task.name for task in tasks}
    composite = [
        Metric(
            name="ragas_score",
            group="generation",
            kind="score",
            compute=ragas_composite(state, chosen),
            description="LLM judge: seed 001's RAGAS composite (0.3 faithfulness, 0.2 context "
            "precision, 0.2 context recall, 0.3 answer relevancy), renormalised over measured",
            prepare=prepare,
        )
    ]
    return composite + [
        Metric(
            name=declared.name,
            group=declared.group,
            kind=declared.kind,
            scale=declared.scale,
            compute=state.compute_fn(declared.name),
            requires=task.requires + declared.requires,
            higher_is_better=declared.higher_is_better,
            aggregation=declared.aggregation,
            unit="0-5" if declared.scale == (0.0, 5.0) else None,
            description=f"LLM judge: {declared.description}",
            prepare=prepare,
        )
        for task in tasks
        for declared in task.metrics
    ]


judged_family = MetricFamily(
    judged_metrics,
    params=(
        MetricParam(
            "max_contexts", "retrieved chunks shown to the judge, top first", default=MAX_CONTEXTS
        ),
        MetricParam(
            "max_context_chars",
            "characters of each chunk shown to the judge (None: 2,000; 24,000 for local:)",
            default=None,
        ),
        setting("embedder", "the embedder of answer relevancy's question similarity"),
        setting("abstention_phrases", "phrases that mark a refusal (not judged as a claim)"),
    ),
    description="an LLM judge's verdicts (skipped without --judge)",
)

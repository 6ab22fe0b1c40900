"""The judge work behind each judged metric, one case at a time.

A task makes a fixed number of judge calls per case whatever the number of chunks (a repair
adds at most one call per call): faithfulness 2 (extract claims, then verify all claims in one
call), answer relevancy 1, context precision 1 (all contexts in one call), context recall 1
(split the reference into statements and attribute them in one call), groundedness 1,
correctness 1, answer classification 1. Each returns ``{metric name: (value, details)}``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ragmeter.judges import schemas as s
from ragmeter.judges.session import JudgeSession, Verdict

Values = dict[str, tuple[float, dict[str, Any]]]


@dataclass(frozen=True)
class Item:
    case_id: str
    question: str
    answer: str
    reference: str | None
    contexts: list[str]


def judge_details(session: JudgeSession, *verdicts: Verdict[Any]) -> dict[str, Any]:
    return {
        "judge_model": session.judge.model,
        "prompt_versions": {v.prompt: v.prompt_version for v in verdicts},
        "judge_calls": [call for v in verdicts for call in v.calls],
        "repaired": any(v.repaired for v in verdicts),
    }


async def faithfulness(session: JudgeSession, item: Item) -> Values:
    claims = await session.ask(
        "faithfulness_claims.v1",
        {"question": item.question, "answer": item.answer},
        s.Claims,
        case_id=item.case_id,
    )
    texts = [c.strip() for c in claims.value.claims if c.strip()]
    if not texts:
        details = {"claims": [], "no_claims": True, **judge_details(session, claims)}
        return {"faithfulness": (1.0, details)}
    verdicts = await session.ask(
        "faithfulness_verify.v1",
        {"contexts": item.contexts, "claims": texts},
        s.ClaimVerdicts,
        case_id=item.case_id,
        max_tokens=64 + 48 * len(texts),
        check=lambda v: s.indexed(v.verdicts, len(texts), "claim"),
    )
    by_index = {v.index: v for v in verdicts.value.verdicts}
    rows = [
        {"claim": text, "supported": by_index[i].verdict == 1, "reason": by_index[i].reason}
        for i, text in enumerate(texts, 1)
    ]
    supported = sum(by_index[i].verdict for i in range(1, len(texts) + 1))
    details = {"claims": rows, **judge_details(session, claims, verdicts)}
    return {"faithfulness": (supported / len(rows), details)}


async def answer_relevancy(session: JudgeSession, item: Item) -> Values:
    verdict = await session.ask(
        "answer_relevancy.v1",
        {"question": item.question, "answer": item.answer},
        s.Relevancy,
        case_id=item.case_id,
        max_tokens=160,
    )
    details = {"reasoning": verdict.value.reasoning, **judge_details(session, verdict)}
    return {"answer_relevancy": (verdict.value.score, details)}


def average_precision(relevant: list[bool]) -> float:
    """RAGAS context precision: mean of precision@k over the ranks k holding a relevant chunk
    (0.0 when none is relevant)."""
    hits, total = 0, 0.0
    for k, rel in enumerate(relevant, 1):
        if rel:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


async def context_precision(session: JudgeSession, item: Item) -> Values:
    n = len(item.contexts)
    verdict = await session.ask(
        "context_precision.v1",
        {
            "question": item.question,
            "reference": item.reference or "(no reference answer given)",
            "contexts": item.contexts,
        },
        s.ContextVerdicts,
        case_id=item.case_id,
        max_tokens=64 + 48 * n,
        check=lambda v: s.indexed(v.verdicts, n, "context"),
    )
    ordered = sorted(verdict.value.verdicts, key=lambda v: v.index)
    relevant = [v.relevant for v in ordered]
    details = {
        "k": n,
        "verdicts": [
            {"index": v.index, "relevant": v.relevant, "reason": v.reason} for v in ordered
        ],
        **judge_details(session, verdict),
    }
    return {
        "context_precision": (sum(relevant) / n, details),
        "context_precision_ranked": (average_precision(relevant), details),
    }


async def context_recall(session: JudgeSession, item: Item) -> Values:
    verdict = await session.ask(
        "context_recall.v1",
        {
            "question": item.question,
            "reference": item.reference or "",
            "contexts": item.contexts,
        },
        s.Statements,
        case_id=item.case_id,
        max_tokens=400,
    )
    rows = [st.model_dump() for st in verdict.value.statements if st.statement.strip()]
    if not rows:
        raise ValueError("the judge found no statement in the reference answer")
    attributed = sum(bool(row["attributed"]) for row in rows)
    details = {"statements": rows, **judge_details(session, verdict)}
    return {"context_recall": (attributed / len(rows), details)}


async def groundedness(session: JudgeSession, item: Item) -> Values:
    verdict = await session.ask(
        "groundedness.v1",
        {"answer": item.answer, "contexts": item.contexts},
        s.Groundedness,
        case_id=item.case_id,
        max_tokens=400,
    )
    value = verdict.value
    details = {
        "supported_claims": value.supported_claims,
        "unsupported_claims": value.unsupported_claims,
        **judge_details(session, verdict),
    }
    return {"groundedness": (float(value.score), details)}


async def correctness(session: JudgeSession, item: Item) -> Values:
    verdict = await session.ask(
        "correctness.v1",
        {
            "question": item.question,
            "reference": item.reference or "(no reference answer given)",
            "contexts": item.contexts,
            "answer": item.answer,
        },
        s.Correctness,
        case_id=item.case_id,
        max_tokens=200,
    )
    details = {"reasoning": verdict.value.reasoning, **judge_details(session, verdict)}
    return {"correctness": (float(verdict.value.score), details)}


CLASS_METRICS = {
    "CORRECT": "judged_correct_rate",
    "WRONG": "judged_wrong_rate",
    "DONT_KNOW": "judged_dont_know_rate",
}


async def classification(session: JudgeSession, item: Item) -> Values:
    verdict = await session.ask(
        "answer_classification.v1",
        {"question": item.question, "reference": item.reference or "", "answer": item.answer},
        s.Classification,
        case_id=item.case_id,
        max_tokens=160,
    )
    label = verdict.value.label
    details = {
        "label": label,
        "reasoning": verdict.value.reasoning,
        **judge_details(session, verdict),
    }
    return {name: (float(label == key), details) for key, name in CLASS_METRICS.items()}


TaskFn = Callable[[JudgeSession, Item], Awaitable[Values]]


@dataclass(frozen=True)
class Task:
    name: str
    fn: TaskFn
    metrics: tuple[str, ...]
    requires: tuple[str, ...]  # metric input names (see ragmeter.metrics.base.INPUTS)
    needs_answer: bool
    prompts: tuple[str, ...]
    output_tokens: int  # typical completion tokens per case, for the dry-run estimate


TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        Task(
            "faithfulness",
            faithfulness,
            ("faithfulness",),
            ("retrieved",),
            True,
            ("faithfulness_claims.v1", "faithfulness_verify.v1"),
            250,
        ),
        Task(
            "answer_relevancy",
            answer_relevancy,
            ("answer_relevancy",),
            (),
            True,
            ("answer_relevancy.v1",),
            60,
        ),
        Task(
            "context_precision",
            context_precision,
            ("context_precision", "context_precision_ranked"),
            ("retrieved",),
            False,
            ("context_precision.v1",),
            200,
        ),
        Task(
            "context_recall",
            context_recall,
            ("context_recall",),
            ("reference_answer", "retrieved"),
            False,
            ("context_recall.v1",),
            150,
        ),
        Task(
            "groundedness",
            groundedness,
            ("groundedness",),
            ("retrieved",),
            True,
            ("groundedness.v1",),
            150,
        ),
        Task("correctness", correctness, ("correctness",), (), True, ("correctness.v1",), 80),
        Task(
            "classification",
            classification,
            tuple(CLASS_METRICS.values()),
            ("reference_answer",),
            True,
            ("answer_classification.v1",),
            60,
        ),
    )
}

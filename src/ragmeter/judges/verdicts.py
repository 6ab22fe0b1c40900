"""The judge work behind each judged metric, one case at a time (the task functions that
:mod:`ragmeter.judges.tasks` declares)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.judges import schemas as s
from ragmeter.judges.quotes import QUOTE_NOT_FOUND, quote_found
from ragmeter.judges.session import JudgeSession, Verdict
from ragmeter.judges.templates import load_prompt

Values = dict[str, tuple[float, dict[str, Any]]]


@dataclass(frozen=True)
class Item:
    case_id: str
    question: str
    answer: str
    reference: str | None
    contexts: list[str]
    answerable: bool = True
    abstained: bool | None = None  # the target's own report, when it gave one
    # the response's own citations, as the judge reads them ("context 2", a doc id, ...);
    # None when the target did not report citations
    citations: list[str] | None = None


def judge_details(session: JudgeSession, *verdicts: Verdict[Any]) -> dict[str, Any]:
    details = {
        "judge_model": session.judge.model,
        "prompt_versions": {v.prompt: v.prompt_version for v in verdicts},
        "judge_calls": [call for v in verdicts for call in v.calls],
        "repaired": any(v.repaired for v in verdicts),
    }
    trimmed = [v.evidence for v in verdicts if v.evidence]
    if trimmed:  # the evidence was cut to fit the judge's context
        details["evidence_trimmed"] = "; ".join(dict.fromkeys(trimmed))
    return details


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
        "faithfulness_verify.v2",
        {"contexts": item.contexts, "claims": texts},
        s.ClaimVerdicts,
        case_id=item.case_id,
        max_tokens=64 + 96 * len(texts),
        check=lambda v: s.indexed(v.verdicts, len(texts), "claim"),
        items=("verdicts", len(texts)),
    )
    by_index = {v.index: v for v in verdicts.value.verdicts}
    checked = asks_for_quotes(verdicts.prompt)
    rows = [claim_row(text, by_index[i], item.contexts, checked) for i, text in enumerate(texts, 1)]
    supported = sum(row["supported"] for row in rows)
    overturned = sum(row["reason"] == QUOTE_NOT_FOUND for row in rows)
    details = {
        "claims": rows,
        "quotes_checked": checked,
        "overturned": overturned,
        **judge_details(session, claims, verdicts),
    }
    values: Values = {"faithfulness": (supported / len(rows), details)}
    if checked:
        counted = {"overturned": overturned, **judge_details(session, claims, verdicts)}
        values["faithfulness_overturned"] = (float(overturned), counted)
    return values


def asks_for_quotes(template: str) -> bool:
    """Whether the template asked (a spot check may ask an older version) wants quotes: its
    reply format names a ``"quote"``."""
    return '"quote"' in load_prompt(template).user


def claim_row(
    text: str, verdict: s.ClaimVerdict, contexts: list[str], checked: bool
) -> dict[str, Any]:
    """One claim's verdict; a supported verdict whose quote is not in the passages is
    overturned (``judges.quotes``), the judge's own verdict and quote kept beside it."""
    row: dict[str, Any] = {"claim": text, "supported": verdict.verdict == 1}
    if checked and verdict.verdict == 1:
        row["quote"] = verdict.quote
        if not quote_found(verdict.quote, contexts):
            row.update(supported=False, reason=QUOTE_NOT_FOUND, judge_verdict=1)
            row["judge_reason"] = verdict.reason
            return row
    row["reason"] = verdict.reason
    return row


async def answer_relevancy(session: JudgeSession, item: Item) -> Values:
    """RAGAS answer relevancy: the judge writes 3 questions the answer responds to; the score is
    the mean cosine of the question's vector with theirs (clipped at 0), and 0 for a
    noncommittal answer. Without an embedder, the judge's direct 0..1 score (seed 001's
    fallback)."""
    if session.embed is None:
        return await direct_relevancy(session, item)
    verdict = await session.ask(
        "answer_questions.v1",
        {"answer": item.answer},
        s.GeneratedQuestions,
        case_id=item.case_id,
        max_tokens=200,
        check=lambda v: _no_blank(v.questions, "question"),
    )
    questions = [q.strip() for q in verdict.value.questions]
    vectors = await asyncio.to_thread(session.embed, [item.question, *questions])
    cosines = [max(0.0, float(np.dot(vectors[0], row))) for row in vectors[1:]]
    noncommittal = verdict.value.noncommittal
    value = 0.0 if noncommittal else sum(cosines) / len(cosines)
    details = {
        "method": "question_generation",
        "generated_questions": questions,
        "cosines": cosines,
        "noncommittal": noncommittal,
        **judge_details(session, verdict),
    }
    return {"answer_relevancy": (min(value, 1.0), details)}


async def direct_relevancy(session: JudgeSession, item: Item) -> Values:
    verdict = await session.ask(
        "answer_relevancy.v1",
        {"question": item.question, "answer": item.answer},
        s.Relevancy,
        case_id=item.case_id,
        max_tokens=160,
    )
    details = {
        "method": "direct",
        "reasoning": verdict.value.reasoning,
        **judge_details(session, verdict),
    }
    return {"answer_relevancy": (verdict.value.score, details)}


def _no_blank(texts: list[str], what: str) -> None:
    if any(not text.strip() for text in texts):
        raise ValueError(f"every {what} must be non-empty")


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
        max_tokens=64 + 64 * n,
        check=lambda v: s.indexed(v.verdicts, n, "context"),
        items=("verdicts", n),
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
    """Seed 004's 0-5 groundedness. The judge quotes the passages for each claim it calls
    supported; a claim whose quote is not found is moved to the unsupported ones and the score
    is held to what the rubric gives then: at most 3 (some claims unsupported), at most 2 when
    no supported claim is left (major claims unsupported)."""
    cited = "none reported" if item.citations is None else ", ".join(item.citations) or "none"
    checked = asks_for_quotes(session.template_for("groundedness.v3"))
    output: type[s.QuotedGroundedness | s.Groundedness] = (
        s.QuotedGroundedness if checked else s.Groundedness
    )
    verdict = await session.ask(
        "groundedness.v3",
        {"answer": item.answer, "contexts": item.contexts, "citations": cited},
        output,
        case_id=item.case_id,
        max_tokens=400,
    )
    value = verdict.value
    details: dict[str, Any] = {"quotes_checked": checked}
    score = float(value.score)
    if isinstance(value, s.QuotedGroundedness):
        kept = [c for c in value.supported_claims if quote_found(c.quote, item.contexts)]
        moved = [c for c in value.supported_claims if c not in kept]
        details["supported_claims"] = [{"claim": c.claim, "quote": c.quote} for c in kept]
        details["unsupported_claims"] = value.unsupported_claims + [c.claim for c in moved]
        details["overturned"] = [
            {"claim": c.claim, "quote": c.quote, "reason": QUOTE_NOT_FOUND} for c in moved
        ]
        if moved:
            details["judge_score"] = value.score
            score = min(score, 3.0 if kept else 2.0)
    else:
        details["supported_claims"] = value.supported_claims
        details["unsupported_claims"] = value.unsupported_claims
    details.update(judge_details(session, verdict))
    values: Values = {"groundedness": (score, details)}
    if checked:
        moved_count = len(details["overturned"])
        counted = {"overturned": moved_count, **judge_details(session, verdict)}
        values["groundedness_overturned"] = (float(moved_count), counted)
    return values


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
    values: Values = {}
    for key, name in CLASS_METRICS.items():
        values[name] = values[name.replace("_rate", "_count")] = (float(label == key), details)
    return values


GEVAL_WEIGHTS = {"correctness": 0.5, "completeness": 0.3, "consistency": 0.2}
GRADES = (("A", 80.0), ("B", 60.0), ("C", 40.0), ("D", 20.0), ("E", 0.0))


def letter_grade(percent: float) -> str:
    """Seed 001's grades: A >= 80, B >= 60, C >= 40, D >= 20, else E."""
    return next(grade for grade, floor in GRADES if percent >= floor)


async def factual_accuracy(session: JudgeSession, item: Item) -> Values:
    """Seed 001's GEval factual accuracy: three criteria scored 0-100 by the judge, weighted
    50/30/20 here (the judge's own arithmetic is not trusted), reported in 0..1 with a grade."""
    verdict = await session.ask(
        "factual_accuracy.v1",
        {"question": item.question, "reference": item.reference or "", "answer": item.answer},
        s.FactualAccuracy,
        case_id=item.case_id,
        max_tokens=300,
    )
    criteria = {name: getattr(verdict.value, name) for name in GEVAL_WEIGHTS}
    percent = sum(GEVAL_WEIGHTS[name] * c.score for name, c in criteria.items())
    grade = letter_grade(percent)
    details = {
        "grade": grade,
        "criteria": {name: c.model_dump() for name, c in criteria.items()},
        "weights": GEVAL_WEIGHTS,
        **judge_details(session, verdict),
    }
    values: Values = {"factual_accuracy": (percent / 100.0, details)}
    for letter, _ in GRADES:
        stem = f"factual_grade_{letter.lower()}"
        values[f"{stem}_rate"] = values[f"{stem}_count"] = (float(grade == letter), details)
    return values


CORRECTNESS_WEIGHTS = (0.75, 0.25)  # RAGAS: statement F1, answer-reference similarity


async def answer_correctness(session: JudgeSession, item: Item) -> Values:
    """RAGAS answer correctness: statement-level F1 of the answer against the reference
    (TP / (TP + (FP + FN) / 2), statements sorted in one call), mixed 0.75 / 0.25 with the
    answer-reference embedding cosine; the F1 alone when no embedder is available."""
    verdict = await session.ask(
        "answer_correctness.v1",
        {"question": item.question, "answer": item.answer, "reference": item.reference or ""},
        s.StatementSets,
        case_id=item.case_id,
        max_tokens=400,
        check=_has_statements,
    )
    tp, fp, fn = (len(verdict.value.tp), len(verdict.value.fp), len(verdict.value.fn))
    f1 = tp / (tp + 0.5 * (fp + fn))
    details: dict[str, Any] = {
        **verdict.value.model_dump(),
        "statement_f1": f1,
        **judge_details(session, verdict),
    }
    if session.embed is None:
        details["similarity"] = None
        return {"answer_correctness": (f1, details)}
    vectors = await asyncio.to_thread(session.embed, [item.answer, item.reference or ""])
    similarity = max(0.0, float(np.dot(vectors[0], vectors[1])))
    details["similarity"] = similarity
    f1_weight, similarity_weight = CORRECTNESS_WEIGHTS
    return {"answer_correctness": (f1_weight * f1 + similarity_weight * similarity, details)}


def _has_statements(sets: s.StatementSets) -> None:
    if not (sets.tp or sets.fp or sets.fn):
        raise ValueError("tp, fp and fn are all empty: no statement was sorted")


async def abstention(session: JudgeSession, item: Item) -> Values:
    """Seed 004's abstention detection: the response's ``abstained`` field when it has one (no
    call), else a small judge prompt. The four metrics apply to the answerable and unanswerable
    cases as their ``requires`` say; each value here is from the case's own point of view."""
    if item.abstained is not None or not item.answer.strip():
        abstained = item.abstained if item.abstained is not None else True
        how = "field" if item.abstained is not None else "empty answer"
        details: dict[str, Any] = {"abstained": abstained, "detected_by": how}
    else:
        verdict = await session.ask(
            "abstention.v1",
            {"question": item.question, "answer": item.answer},
            s.Abstention,
            case_id=item.case_id,
            max_tokens=120,
        )
        abstained = verdict.value.abstained
        details = {
            "abstained": abstained,
            "detected_by": "judge",
            "reasoning": verdict.value.reasoning,
            **judge_details(session, verdict),
        }
    return {
        "judged_unanswerable_accuracy": (float(abstained != item.answerable), details),
        "judged_abstention_accuracy": (float(abstained), details),
        "judged_abstention_false_positive_rate": (float(abstained), details),
        "judged_hallucination_rate": (float(not abstained), details),
    }

"""Abstention metrics: does the system refuse exactly when the question is unanswerable?

A response abstained when its ``abstained`` field says so; when the target does not report the
field, the answer text is matched against abstention phrases (configurable).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ragmeter.metrics.assertions import number_within
from ragmeter.metrics.base import Metric, MetricOutput, MetricSettings, SkipScore
from ragmeter.metrics.lexical import normalize_answer, token_f1
from ragmeter.metrics.textmatch import fact_stated, fold, index_text, numbers
from ragmeter.models import Case, Response

CORRECT_F1 = 0.5

DEFAULT_PHRASES = (
    "i don't know",
    "i do not know",
    "i don't have enough information",
    "i do not have enough information",
    "not enough information",
    "cannot answer",
    "can't answer",
    "unable to answer",
    "no information",
    "not mentioned in the",
    "not in the documents",
    "not in the provided",
    "cannot find",
    "can't find",
    "could not find",
    "no relevant",
    "insufficient information",
)


def detect_abstention(response: Response, phrases: tuple[str, ...] = ()) -> tuple[bool, str]:
    """(abstained, how it was decided)."""
    if response.abstained is not None:
        return response.abstained, "field"
    answer = fold(response.answer)
    if not answer:
        return True, "empty answer"
    for phrase in phrases or DEFAULT_PHRASES:
        if re.search(rf"\b{re.escape(fold(phrase))}", answer):
            return True, f"phrase: {phrase}"
    return False, "no abstention phrase"


def classify_answer(case: Case, response: Response, phrases: tuple[str, ...] = ()) -> str:
    """Seed 001's classes by a documented heuristic (no judge):

    - ``DON'T KNOW``: the response abstained;
    - ``WRONG``: it answered an unanswerable question;
    - ``CORRECT``: on an answerable question, the normalised reference occurs in the answer, or
      token F1 >= 0.5, or every gold fact (or alias) is stated, or the expected number is there;
    - ``WRONG`` otherwise.
    """
    if detect_abstention(response, phrases)[0]:
        return "DON'T KNOW"
    if not case.answerable:
        return "WRONG"
    reference = case.reference_answer or ""
    if not (reference.strip() or case.gold_facts or case.expected_number):
        raise SkipScore("case has no reference answer, gold facts or expected number")
    answer = index_text(response.answer)
    if reference.strip() and (
        normalize_answer(reference) in normalize_answer(response.answer)
        or token_f1(response.answer, reference) >= CORRECT_F1
    ):
        return "CORRECT"
    if case.gold_facts and all(fact_stated(f, answer) for f in case.gold_facts):
        return "CORRECT"
    expected = case.expected_number
    if expected is not None and any(number_within(n, expected) for n in numbers(response.answer)):
        return "CORRECT"
    return "WRONG"


def abstention_metrics(settings: MetricSettings) -> list[Metric]:
    phrases = settings.abstention_phrases

    def share_of(label: str) -> Callable[[Case, Response], MetricOutput]:
        def compute(case: Case, response: Response) -> MetricOutput:
            found = classify_answer(case, response, phrases)
            return float(found == label), {"class": found}

        return compute

    def behaved(case: Case, response: Response) -> MetricOutput:
        abstained, how = detect_abstention(response, phrases)
        return float(abstained != case.answerable), {"abstained": abstained, "detected_by": how}

    def abstained_value(case: Case, response: Response) -> MetricOutput:
        abstained, how = detect_abstention(response, phrases)
        return float(abstained), {"detected_by": how}

    def answered_value(case: Case, response: Response) -> MetricOutput:
        abstained, how = detect_abstention(response, phrases)
        return float(not abstained), {"detected_by": how}

    return [
        Metric(
            "unanswerable_accuracy",
            "abstention",
            behaved,
            description="abstains on unanswerable and answers answerable questions",
            kind="binary",
        ),
        Metric(
            "abstention_accuracy",
            "abstention",
            abstained_value,
            ("unanswerable",),
            description="on unanswerable questions: 1 if the system abstained",
            kind="binary",
        ),
        Metric(
            "abstention_false_positive_rate",
            "abstention",
            abstained_value,
            ("answerable",),
            higher_is_better=False,
            description="on answerable questions: 1 if the system wrongly abstained",
            kind="binary",
        ),
        Metric(
            "abstention_false_negative_rate",
            "abstention",
            answered_value,
            ("unanswerable",),
            higher_is_better=False,
            description="on unanswerable questions: 1 if the system answered (hallucination rate)",
            kind="binary",
        ),
        Metric(
            "correct_answer_rate",
            "abstention",
            share_of("CORRECT"),
            description="share of answers classified CORRECT (heuristic; count = rate x n)",
            kind="binary",
        ),
        Metric(
            "wrong_answer_rate",
            "abstention",
            share_of("WRONG"),
            higher_is_better=False,
            description="share of answers classified WRONG",
            kind="binary",
        ),
        Metric(
            "dont_know_rate",
            "abstention",
            share_of("DON'T KNOW"),
            higher_is_better=False,
            description="share of answers classified DON'T KNOW (abstained)",
            kind="binary",
        ),
    ]

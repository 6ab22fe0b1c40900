"""Abstention metrics: does the system refuse exactly when the question is unanswerable?

A response abstained when its ``abstained`` field says so; when the target does not report the
field, the answer text is matched against abstention phrases (configurable).
"""

from __future__ import annotations

import re

from ragmeter.metrics.base import Metric, MetricOutput, MetricSettings
from ragmeter.models import Case, Response

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


def _fold(text: str) -> str:
    return " ".join(text.lower().replace("\u2019", "'").split())


def detect_abstention(response: Response, phrases: tuple[str, ...] = ()) -> tuple[bool, str]:
    """(abstained, how it was decided)."""
    if response.abstained is not None:
        return response.abstained, "field"
    answer = _fold(response.answer)
    if not answer:
        return True, "empty answer"
    for phrase in phrases or DEFAULT_PHRASES:
        if re.search(rf"\b{re.escape(_fold(phrase))}", answer):
            return True, f"phrase: {phrase}"
    return False, "no abstention phrase"


def abstention_metrics(settings: MetricSettings) -> list[Metric]:
    phrases = settings.abstention_phrases

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
        ),
        Metric(
            "abstention_accuracy",
            "abstention",
            abstained_value,
            ("unanswerable",),
            description="on unanswerable questions: 1 if the system abstained",
        ),
        Metric(
            "abstention_false_positive_rate",
            "abstention",
            abstained_value,
            ("answerable",),
            higher_is_better=False,
            description="on answerable questions: 1 if the system wrongly abstained",
        ),
        Metric(
            "abstention_false_negative_rate",
            "abstention",
            answered_value,
            ("unanswerable",),
            higher_is_better=False,
            description="on unanswerable questions: 1 if the system answered (hallucination rate)",
        ),
    ]

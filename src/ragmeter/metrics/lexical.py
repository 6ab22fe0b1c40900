"""Lexical answer metrics against the reference answer (SQuAD normalisation)."""

from __future__ import annotations

import re
import string
from collections import Counter

from ragmeter.metrics.base import Metric, MetricOutput, MetricSettings
from ragmeter.models import Case, Response

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lowercase, drop punctuation and articles, fold white space (the SQuAD rule)."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, reference: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(reference))


def token_f1(prediction: str, reference: str) -> float:
    predicted = normalize_answer(prediction).split()
    expected = normalize_answer(reference).split()
    if not predicted or not expected:
        return float(predicted == expected)
    common = sum((Counter(predicted) & Counter(expected)).values())
    if common == 0:
        return 0.0
    precision = common / len(predicted)
    recall = common / len(expected)
    return 2 * precision * recall / (precision + recall)


def _exact_match(case: Case, response: Response) -> MetricOutput:
    return exact_match(response.answer, case.reference_answer or "")


def _token_f1(case: Case, response: Response) -> MetricOutput:
    return token_f1(response.answer, case.reference_answer or "")


def lexical_metrics(_: MetricSettings) -> list[Metric]:
    needs = ("reference_answer", "answerable")
    return [
        Metric(
            "exact_match",
            "lexical",
            _exact_match,
            needs,
            description="normalised answer equals the normalised reference",
        ),
        Metric(
            "token_f1",
            "lexical",
            _token_f1,
            needs,
            description="SQuAD token F1 between answer and reference",
        ),
    ]

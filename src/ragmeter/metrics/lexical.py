"""Lexical answer metrics against the reference answer (SQuAD normalisation; seed 000's strict
exact match only lowercases and folds white space)."""

from __future__ import annotations

import re
import string
import unicodedata
from functools import lru_cache
from typing import Any

from ragmeter.metrics.base import Metric, MetricOutput, MetricSettings, SkipScore
from ragmeter.metrics.textmatch import index_text, numbers, phrase_present, words
from ragmeter.models import Case, Response
from ragmeter.text import STOP_WORDS

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = str.maketrans("", "", string.punctuation)
# a number's sign and decimal point are not punctuation: "-0.133%" is not "0.133%", "1.33" is
# not "13.3" (SQuAD's rule drops both; a thousands comma still goes: "1,000" is "1000")
_SIGN = re.compile(r"(?<![\w.])[-\u2212](?=\d)")
_DECIMAL_POINT = re.compile(r"(?<=\d)\.(?=\d)")


@lru_cache(maxsize=4096)  # a case's answer and reference are normalised by several metrics
def normalize_answer(text: str) -> str:
    """Lowercase, drop punctuation and articles, fold white space (the SQuAD rule), after
    composing accents (NFC): "Café" typed as "e" + U+0301 is the same text as with "é". A
    number keeps its sign and decimal point (as the words ``minus`` and ``point``)."""
    text = unicodedata.normalize("NFC", text).lower()
    text = _DECIMAL_POINT.sub(" point ", _SIGN.sub(" minus ", text)).translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, reference: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(reference))


def exact_match_strict(prediction: str, reference: str) -> float:
    """Seed 000's exact match: equal after lowercasing and folding white space only (punctuation
    and articles count, unlike :func:`exact_match`); accents composed (NFC) on both sides."""
    return float(_strict(prediction) == _strict(reference))


def _strict(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).lower().split())


@lru_cache(maxsize=1024)  # read by token_f1 and by the abstention classes of each case
def token_f1(prediction: str, reference: str) -> float:
    predicted = normalize_answer(prediction).split()
    expected = normalize_answer(reference).split()
    if not predicted or not expected:
        return float(predicted == expected)
    common = _common_tokens(predicted, expected)
    if common == 0:
        return 0.0
    precision = common / len(predicted)
    recall = common / len(expected)
    return 2 * precision * recall / (precision + recall)


def _common_tokens(predicted: list[str], expected: list[str]) -> int:
    """The size of the multiset intersection (``Counter(predicted) & Counter(expected)``)."""
    left: dict[str, int] = {}
    for token in expected:
        left[token] = left.get(token, 0) + 1
    common = 0
    for token in predicted:
        count = left.get(token)
        if count:
            left[token] = count - 1
            common += 1
    return common


_CAPITALISED = re.compile(r"\b[A-Z][\w-]*(?:\s+(?:[A-Z][\w-]*|\d[\d.,%]*))*")
# a number standing alone: not the "1" of "C-1" or "v1", and its minus sign only before a digit
_NUMBER_TOKEN = re.compile(r"(?<![\w.-])[-$€£]?\d[\d,]*(?:\.\d+)?%?")
SOURCE_INDICATORS = (
    "source:",
    "table:",
    "page",
    "document",
    "pdf",
    "according to",
    "based on",
    "from",
)


def keywords(text: str) -> list[str]:
    """Seed 000's keywords: capitalised phrases, numbers/percentages/currency, and words of 4+
    characters that are not stop words (lowercased, de-duplicated, in order)."""
    return list(_keywords(text))


@lru_cache(maxsize=4096)  # a reference's keywords are read by two metrics of each case
def _keywords(text: str) -> tuple[str, ...]:
    found = [_without_leading_stop_words(m.group(0)) for m in _CAPITALISED.finditer(text)]
    found += [m.group(0).rstrip(",") for m in _NUMBER_TOKEN.finditer(text)]
    found += [w for w in words(text) if len(w) >= 4 and w not in STOP_WORDS]
    return tuple(dict.fromkeys(k.lower() for k in found if k))


def _without_leading_stop_words(phrase: str) -> str:
    """A capitalised phrase without the stop words that open it: a sentence's first "The" is
    no keyword ("The Premium Plan" -> "Premium Plan")."""
    parts = phrase.split()
    while parts and parts[0].lower() in STOP_WORDS:
        parts.pop(0)
    return " ".join(parts)


def keyword_coverage(prediction: str, reference: str) -> tuple[float, list[str]] | None:
    """(matched share, missing keywords); None when the reference has no keywords."""
    found = _keyword_coverage_of(prediction, reference)
    return None if found is None else (found[0], list(found[1]))


@lru_cache(maxsize=1024)  # read by keyword_coverage and answer_completeness of each case
def _keyword_coverage_of(prediction: str, reference: str) -> tuple[float, tuple[str, ...]] | None:
    expected = _keywords(reference)
    if not expected:
        return None
    answer = index_text(prediction)
    missing = tuple(k for k in expected if not phrase_present(k, answer))
    return 1.0 - len(missing) / len(expected), missing


def number_match(prediction: str, reference: str) -> tuple[float, list[float]] | None:
    expected = list(dict.fromkeys(numbers(reference)))
    if not expected:
        return None
    found = set(numbers(prediction))
    missing = [n for n in expected if n not in found]
    return 1.0 - len(missing) / len(expected), missing


def _exact_match(case: Case, response: Response) -> MetricOutput:
    return exact_match(response.answer, case.reference_answer or "")


def _exact_match_strict(case: Case, response: Response) -> MetricOutput:
    return exact_match_strict(response.answer, case.reference_answer or "")


def _token_f1(case: Case, response: Response) -> MetricOutput:
    return token_f1(response.answer, case.reference_answer or "")


# the details most cases get, one dict each for every score that has them (never changed once
# made: the run store writes a shared dict's JSON once)
_NOTHING_MISSING: dict[str, Any] = {"missing": []}
_NO_INDICATORS: dict[str, Any] = {"indicators": []}
_COMPLETE: dict[str, Any] = {"length_score": 1.0, "keyword_score": 1.0}


def _missing(missing: list[Any]) -> dict[str, Any]:
    return {"missing": missing} if missing else _NOTHING_MISSING


def _keyword_coverage(case: Case, response: Response) -> MetricOutput:
    result = keyword_coverage(response.answer, case.reference_answer or "")
    if result is None:
        raise SkipScore("reference answer has no keywords")
    return result[0], _missing(result[1])


def _number_match(case: Case, response: Response) -> MetricOutput:
    result = number_match(response.answer, case.reference_answer or "")
    if result is None:
        raise SkipScore("reference answer has no numbers")
    return result[0], _missing(result[1])


def _completeness(case: Case, response: Response) -> MetricOutput:
    reference = case.reference_answer or ""
    expected_words = len(reference.split())
    length_score = (
        min(len(response.answer.split()) / expected_words, 1.0) if expected_words else 1.0
    )
    coverage = _keyword_coverage_of(response.answer, reference)
    keyword_score = coverage[0] if coverage is not None else 1.0
    if length_score == 1.0 and keyword_score == 1.0:
        return 1.0, _COMPLETE
    return (length_score + keyword_score) / 2, {
        "length_score": length_score,
        "keyword_score": keyword_score,
    }


_INDICATOR_PATTERNS = [(i, re.compile(rf"(?<!\w){re.escape(i)}")) for i in SOURCE_INDICATORS]


@lru_cache(maxsize=4096)
def _source_indicators(answer: str) -> tuple[str, ...]:
    """The source indicators in a lowercased answer, in SOURCE_INDICATORS' order."""
    return tuple(i for i, pattern in _INDICATOR_PATTERNS if pattern.search(answer))


def _source_citation(case: Case, response: Response) -> MetricOutput:
    found = list(_source_indicators(response.answer.lower()))
    return min(len(found) / 3.0, 1.0), {"indicators": found} if found else _NO_INDICATORS


def lexical_metrics(_: MetricSettings) -> list[Metric]:
    needs = ("reference_answer", "answerable")
    return [
        Metric(
            "exact_match",
            "lexical",
            _exact_match,
            needs,
            description="normalised answer equals the normalised reference",
            kind="binary",
        ),
        Metric(
            "token_f1",
            "lexical",
            _token_f1,
            needs,
            description="SQuAD token F1 between answer and reference",
            kind="proportion",
        ),
        Metric(
            "exact_match_strict",
            "lexical",
            _exact_match_strict,
            needs,
            description="answer equals the reference after lowercasing and folding white space "
            "(seed 000)",
            kind="binary",
        ),
        Metric(
            "keyword_coverage",
            "lexical",
            _keyword_coverage,
            needs,
            description="share of the reference's keywords (capitalised phrases, numbers, "
            "4+ letter words) found in the answer",
            kind="proportion",
        ),
        Metric(
            "number_match",
            "lexical",
            _number_match,
            needs,
            description="share of the reference's numbers found in the answer (1,000 = 1000)",
            kind="proportion",
        ),
        Metric(
            "answer_completeness",
            "lexical",
            _completeness,
            needs,
            description="mean of min(answer words / reference words, 1) and keyword coverage",
            kind="proportion",
        ),
        Metric(
            "source_citation_quality",
            "lexical",
            _source_citation,
            ("answerable",),
            description="source phrases in the answer text ('according to', 'page', ...), "
            "min(found / 3, 1)",
            kind="proportion",
        ),
    ]

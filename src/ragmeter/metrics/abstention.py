"""Abstention metrics: does the system refuse exactly when the question is unanswerable?

A response abstained when its ``abstained`` field says so; when the target does not report the
field, the answer text is matched against abstention phrases (seed 001's uncertainty phrases and
ragmeter's; configurable) and seed 001's rule for short non-answers ("N/A", "None", "null").

Seed 001 reports its classes as counts (``correct_answers_count``, ...): here each class has a
rate (the mean of 0/1 over the classified cases) and a count (``aggregation="sum"``: the true
number of cases in the class, summed over the classified cases; skipped cases are not counted).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ragmeter.metrics.assertions import number_within
from ragmeter.metrics.base import Metric, MetricOutput, MetricSettings, SkipScore
from ragmeter.metrics.family import MetricFamily, setting
from ragmeter.metrics.lexical import normalize_answer, token_f1
from ragmeter.metrics.shared import SharedDetails
from ragmeter.metrics.textmatch import fact_stated, fold, index_text, numbers
from ragmeter.models import Case, Response

CORRECT_F1 = 0.5

# seed 001's UNCERTAINTY_PHRASES, in its order (001, "Don't Know Answers Count", pseudo code)
SEED_PHRASES = (
    "i don't know",
    "i do not know",
    "unknown",
    "not sure",
    "cannot determine",
    "no information",
    "insufficient data",
    "unable to answer",
    "cannot answer",
    "don't have enough information",
    "not available",
    "no data",
)
# ragmeter's additions: refusals RAG systems give that the seed's list misses
EXTRA_PHRASES = (
    "i do not have enough information",
    "not enough information",
    "can't answer",
    "not mentioned in the",
    "not in the documents",
    "not in the provided",
    "cannot find",
    "can't find",
    "could not find",
    "no relevant",
    "insufficient information",
)
DEFAULT_PHRASES = SEED_PHRASES + EXTRA_PHRASES
# seed 001's "very short non-answers": an answer of fewer than 10 characters (trimmed) holding
# one of these words is a DON'T KNOW whatever the phrase list
SHORT_ANSWER_CHARS = 10
SHORT_NON_ANSWERS = ("unknown", "n/a", "none", "null")
# a refusal phrase counts anywhere in an answer of this many words at most, else only in its
# first sentence (cut at this many words)
LONG_ANSWER_WORDS = 40
_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n")


def phrase_found(phrase: str, folded_answer: str) -> bool:
    """The phrase occurs in the folded answer, starting at a word start (so "no data" is not
    found in "piano data")."""
    return _phrase_pattern(phrase).search(folded_answer) is not None


@lru_cache(maxsize=1024)
def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(fold(phrase))}")


@lru_cache(maxsize=64)
def _any_phrase(phrases: tuple[str, ...]) -> re.Pattern[str]:
    """Matches where any of ``phrases`` starts a match of :func:`phrase_found`."""
    return re.compile(rf"(?<!\w)(?:{'|'.join(re.escape(fold(p)) for p in phrases)})")


def short_non_answer(folded_answer: str) -> str | None:
    """The word that makes a short answer a non-answer ("N/A", "None.", "null"), else None."""
    if len(folded_answer) >= SHORT_ANSWER_CHARS:
        return None
    return next(
        (
            word
            for word in SHORT_NON_ANSWERS
            if re.search(rf"(?<!\w){re.escape(word)}(?!\w)", folded_answer)
        ),
        None,
    )


def detect_abstention(response: Response, phrases: tuple[str, ...] = ()) -> tuple[bool, str]:
    """(abstained, how it was decided): the ``abstained`` field when the target reports it; else
    an empty answer, a phrase of the list (``phrases``, default :data:`DEFAULT_PHRASES`), or
    seed 001's short non-answer rule."""
    if response.abstained is not None:
        return response.abstained, "field"
    answer = fold(response.answer)
    if not answer:
        return True, "empty answer"
    phrases = phrases or DEFAULT_PHRASES
    opening = refusal_region(answer)
    if _any_phrase(phrases).search(answer):  # then the first phrase of the list that occurs
        for phrase in phrases:
            if phrase_found(phrase, opening):
                return True, f"phrase: {phrase}"
        later = next(phrase for phrase in phrases if phrase_found(phrase, answer))
        return (
            False,
            f"no abstention phrase in the first sentence of a long answer ({later!r} later)",
        )
    word = short_non_answer(answer)
    if word is not None:
        return True, f"short non-answer: {word}"
    return False, "no abstention phrase"


def refusal_region(folded_answer: str) -> str:
    """Where a refusal phrase counts: the whole of a short answer (:data:`LONG_ANSWER_WORDS`
    words at most), else the first sentence of a long one. A long answer that quotes a document
    saying "cannot answer" or "not available" further on is an answer, not a refusal."""
    words = folded_answer.split()
    if len(words) <= LONG_ANSWER_WORDS:
        return folded_answer
    end = _SENTENCE_END.search(folded_answer)
    first = folded_answer[: end.start() + 1] if end else folded_answer
    return " ".join(first.split()[:LONG_ANSWER_WORDS])


ABSTAINED = "the response abstained"  # the skip reason of the claim metrics, before the rule


def refusal_rule(response: Response, phrases: tuple[str, ...] = ()) -> str | None:
    """The rule by which :func:`detect_abstention` reads the response as a refusal (``field``,
    ``empty answer``, ``phrase: could not find``, ``short non-answer: n/a``), or None when it
    answered. The one notion of refusal: the claim metrics of every family skip what this
    names, with the same phrases (``MetricSettings.abstention_phrases``) as the abstention
    family."""
    abstained, how = detect_abstention(response, phrases)
    return how if abstained else None


def skip_refusal(response: Response, phrases: tuple[str, ...] = ()) -> None:
    """Raise :class:`SkipScore` ("the response abstained (phrase: could not find)") when the
    response is a refusal by :func:`refusal_rule`: a refusal has no claims to grade."""
    how = refusal_rule(response, phrases)
    if how is not None:
        raise SkipScore(f"{ABSTAINED} ({how})")


def classify_answer(case: Case, response: Response, phrases: tuple[str, ...] = ()) -> str:
    """Seed 001's classes by a documented heuristic (no judge):

    - ``DON'T KNOW``: the response abstained (:func:`detect_abstention`);
    - ``WRONG``: it answered an unanswerable question;
    - ``CORRECT``: on an answerable question, the normalised reference occurs in the answer, or
      token F1 >= 0.5, or every gold fact (or alias) is stated, or the expected number is there;
    - ``WRONG`` otherwise.
    """
    if detect_abstention(response, phrases)[0]:
        return "DON'T KNOW"
    return _answered_class(case, response)


def _answered_class(case: Case, response: Response) -> str:
    """``classify_answer`` of a response that did not abstain."""
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

    # the last response's abstention, read by the class metrics and three others
    last_detected: list[tuple[Response, tuple[bool, str]]] = []

    def detected(response: Response) -> tuple[bool, str]:
        memo = last_detected[0] if last_detected else None
        if memo is None or memo[0] is not response:
            memo = (response, detect_abstention(response, phrases))
            last_detected[:] = [memo]
        return memo[1]

    # the six class metrics read one classification per case: scoring goes case by case, so
    # the last case's class (or why it has none) is kept, keyed by the objects themselves
    last: list[tuple[Case, Response, str | SkipScore]] = []

    def classified(case: Case, response: Response) -> str:
        memo = last[0] if last else None
        if memo is None or memo[0] is not case or memo[1] is not response:
            try:
                found: str | SkipScore = (
                    "DON'T KNOW" if detected(response)[0] else _answered_class(case, response)
                )
            except SkipScore as skip:
                found = skip
            memo = (case, response, found)
            last[:] = [memo]
        if isinstance(memo[2], SkipScore):
            raise SkipScore(str(memo[2]))
        return memo[2]

    # a class and an abstention's detection have few values: their details are shared
    shared = SharedDetails()

    def share_of(label: str) -> Callable[[Case, Response], MetricOutput]:
        def compute(case: Case, response: Response) -> MetricOutput:
            found = classified(case, response)
            return float(found == label), shared.get(("class", found), lambda: {"class": found})

        return compute

    def behaved(case: Case, response: Response) -> MetricOutput:
        abstained, how = detected(response)
        return float(abstained != case.answerable), shared.get(
            ("abstained", abstained, how), lambda: {"abstained": abstained, "detected_by": how}
        )

    def detected_by(how: str) -> dict[str, Any]:
        return shared.get(("detected_by", how), lambda: {"detected_by": how})

    def abstained_value(case: Case, response: Response) -> MetricOutput:
        abstained, how = detected(response)
        return float(abstained), detected_by(how)

    def answered_value(case: Case, response: Response) -> MetricOutput:
        abstained, how = detected(response)
        return float(not abstained), detected_by(how)

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
        *class_metrics("CORRECT", "correct_answer", share_of("CORRECT"), True),
        *class_metrics("WRONG", "wrong_answer", share_of("WRONG"), False),
        *class_metrics("DON'T KNOW", "dont_know", share_of("DON'T KNOW"), False, " (abstained)"),
    ]


def class_metrics(
    label: str,
    stem: str,
    compute: Callable[[Case, Response], MetricOutput],
    higher_is_better: bool,
    note: str = "",
) -> list[Metric]:
    """Seed 001's class ``label`` as a rate (``STEM_rate``) and, beside it, a count
    (``STEM_count``: the number of classified cases in the class, a sum over the cases)."""
    return [
        Metric(
            f"{stem}_rate",
            "abstention",
            compute,
            higher_is_better=higher_is_better,
            description=f"share of answers classified {label}{note}",
            kind="binary",
        ),
        Metric(
            f"{stem}_count",
            "abstention",
            compute,
            higher_is_better=higher_is_better,
            aggregation="sum",
            description=f"number of answers classified {label} (seed 001's count)",
            kind="count",
        ),
    ]


abstention_family = MetricFamily(
    abstention_metrics,
    params=(setting("abstention_phrases", "phrases that mark an answer as a refusal"),),
    description="refusing the unanswerable and answering the answerable",
)

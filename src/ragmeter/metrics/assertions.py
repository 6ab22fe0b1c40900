"""Case assertions: checks a dataset declares per case (instead of code keyed on question ids).

A case opts in through its labels: ``expected_list_items``, ``gold_facts`` (with aliases),
``expected_number`` (value, tolerance), ``expected_yes_no``, ``expected_claims`` and
``forbidden_claims``. A case without the label is skipped by that metric.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ragmeter.metrics.base import Metric, MetricOutput, MetricSettings, SkipScore
from ragmeter.metrics.textmatch import fact_stated, fold, index_text, numbers, phrase_present
from ragmeter.models import Case, NumericExpectation, Response

CANNOT_CALCULATE = (
    "cannot calculate",
    "can't calculate",
    "cannot be calculated",
    "unable to calculate",
    "cannot compute",
    "can't compute",
    "cannot determine",
    "can't determine",
    "not enough information to calculate",
    "insufficient data",
)
# seed 000 EF_3 ``has_calculation``: the answer shows calculation steps (the times sign U+00D7,
# "*", "multiply"); a "*" counts only as an operator between numbers, not as markdown emphasis
# or a bullet
TIMES = "\u00d7"
CALCULATION_MARKERS = {
    TIMES: re.compile(TIMES),
    "*": re.compile(r"[\d)%]\s*(?<!\*)\*(?!\*)\s*[-$€£(]?\d"),
    "multiply": re.compile(r"\bmultipl(?:y|ies|ied|ying|ication)\b"),
}
_YES = re.compile(r"^\W*(yes|yep|correct|true|indeed)\b")
_NO = re.compile(r"^\W*(no|nope|not|false|incorrect)\b")
# a claim or list item counts as present when most of its content words are in the answer
CLAIM_TOKEN_SHARE = 0.8


def _require(value: object, reason: str) -> None:
    if not value:
        raise SkipScore(reason)


def _list_items(case: Case, response: Response) -> MetricOutput:
    _require(case.expected_list_items, "case declares no expected_list_items")
    answer = index_text(response.answer)
    missing = [
        i for i in case.expected_list_items if not phrase_present(i, answer, CLAIM_TOKEN_SHARE)
    ]
    total = len(case.expected_list_items)
    return (total - len(missing)) / total, {
        "found": total - len(missing),
        "total": total,
        "missing": missing,
    }


def _facts(case: Case, response: Response) -> MetricOutput:
    _require(case.gold_facts, "case declares no gold_facts")
    answer = index_text(response.answer)
    missing = [f.fact for f in case.gold_facts if not fact_stated(f, answer)]
    total = len(case.gold_facts)
    return (total - len(missing)) / total, {"missing": missing}


def says_cannot_calculate(answer: str) -> bool:
    folded = fold(answer)
    return any(phrase in folded for phrase in CANNOT_CALCULATE)


def number_within(value: float, expected: NumericExpectation) -> bool:
    tolerance = (
        expected.tolerance * abs(expected.value) if expected.relative else expected.tolerance
    )
    return abs(value - expected.value) <= tolerance + 1e-12


def _numeric(case: Case, response: Response) -> MetricOutput:
    expected = case.expected_number
    if expected is None:
        raise SkipScore("case declares no expected_number")
    found = numbers(response.answer)
    hit = next((n for n in found if number_within(n, expected)), None)
    refused = says_cannot_calculate(response.answer)
    correct = hit is not None and not refused
    return float(correct), {
        "expected": expected.value,
        "matched": hit,
        "cannot_calculate": refused,
        "numbers": found[:20],
    }


def _cannot_calculate(case: Case, response: Response) -> MetricOutput:
    if case.expected_number is None:
        raise SkipScore("case declares no expected_number")
    return float(says_cannot_calculate(response.answer))


def calculation_markers(answer: str) -> list[str]:
    """Seed 000's calculation markers the answer holds, in the order times sign, ``*``,
    ``multiply``."""
    folded = fold(answer)
    return [marker for marker, pattern in CALCULATION_MARKERS.items() if pattern.search(folded)]


def _has_calculation(case: Case, response: Response) -> MetricOutput:
    if case.expected_number is None:
        raise SkipScore("case declares no expected_number")
    found = calculation_markers(response.answer)
    return float(bool(found)), {"markers": found}


def yes_no_of(answer: str) -> bool | None:
    """The answer's yes/no verdict from its opening words, or None if it gives none."""
    folded = fold(answer)
    if _YES.match(folded):
        return True
    if _NO.match(folded):
        return False
    return None


def _yes_no(case: Case, response: Response) -> MetricOutput:
    if case.expected_yes_no is None:
        raise SkipScore("case declares no expected_yes_no")
    verdict = yes_no_of(response.answer)
    return float(verdict is case.expected_yes_no), {"verdict": verdict}


def _claims(field: str) -> Callable[[Case, Response], MetricOutput]:
    def compute(case: Case, response: Response) -> MetricOutput:
        claims: list[str] = getattr(case, field)
        _require(claims, f"case declares no {field}")
        answer = index_text(response.answer)
        present = [c for c in claims if phrase_present(c, answer, CLAIM_TOKEN_SHARE)]
        if field == "forbidden_claims":
            return float(not present), {"present": present}
        return len(present) / len(claims), {"missing": [c for c in claims if c not in present]}

    return compute


def assertion_metrics(_: MetricSettings) -> list[Metric]:
    return [
        Metric(
            "list_item_coverage",
            "generation",
            _list_items,
            description="share of expected_list_items named in the answer",
            kind="proportion",
        ),
        Metric(
            "fact_coverage",
            "generation",
            _facts,
            description="share of gold_facts (or an alias) stated in the answer",
            kind="proportion",
        ),
        Metric(
            "numeric_answer_correct",
            "generation",
            _numeric,
            description="1 if a number in the answer is within the expected_number tolerance "
            "and the answer does not say it cannot calculate",
            kind="binary",
        ),
        Metric(
            "cannot_calculate_rate",
            "generation",
            _cannot_calculate,
            higher_is_better=False,
            description="on numeric cases: 1 if the answer says it cannot calculate",
            kind="binary",
        ),
        Metric(
            "has_calculation",
            "generation",
            _has_calculation,
            description="on numeric cases: 1 if the answer shows calculation steps "
            "(a times sign, a * between numbers, multiply) (seed 000 EF_3)",
            kind="binary",
        ),
        Metric(
            "yes_no_correct",
            "generation",
            _yes_no,
            description="1 if the answer opens with the expected yes/no",
            kind="binary",
        ),
        Metric(
            "expected_claim_coverage",
            "generation",
            _claims("expected_claims"),
            description="share of expected_claims stated in the answer",
            kind="proportion",
        ),
        Metric(
            "forbidden_claims_absent",
            "generation",
            _claims("forbidden_claims"),
            description="1 if none of the forbidden_claims is stated in the answer",
            kind="binary",
        ),
    ]

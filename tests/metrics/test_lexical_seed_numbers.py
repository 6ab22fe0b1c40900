"""Seed 000's lexical metrics on the cases where the audit found a wrong number
(../shared/audit/seeds-000-001.md, rows 2, 3 and 5): each value computed by hand from the seed's
own rules. A keyword is a whole word or number of the answer, never part of a longer one; a
sentence's first "The" is no keyword; "C-1" holds no number -1; SQuAD's exact match keeps a
number's sign and decimal point."""

from __future__ import annotations

import pytest

from ragmeter.metrics.lexical import exact_match, exact_match_strict, keyword_coverage, keywords


@pytest.mark.parametrize(
    "text,expected",
    [
        # capitalised phrases, numbers, words of 4+ letters that are not stop words
        ("The premium is $604", ["$604", "premium"]),
        ("Rule C-1 applies", ["rule c-1", "rule", "applies"]),
        ("The Premium Plan costs $60", ["premium plan", "$60", "premium", "plan", "costs"]),
        ("Territory 117 is -0.133%", ["territory 117", "117", "-0.133%", "territory"]),
    ],
)
def test_keywords_follow_the_seed(text: str, expected: list[str]) -> None:
    assert keywords(text) == expected


@pytest.mark.parametrize(
    "answer,reference,value,missing",
    [
        # $60 is not in $604: 1 of {deductible, $60}
        ("The deductible is $604", "The deductible is $60", 1 / 2, ["$60"]),
        # Rule C-1 is not in Rule C-10: 2 of {rule c-1, rule, applies}
        ("Rule C-10 applies", "Rule C-1 applies", 2 / 3, ["rule c-1"]),
        # "the" is no keyword: {$604, premium} both found
        ("Premium: 604 dollars", "The premium is $604", 1.0, []),
        # 15 is not in 15.5
        ("The rate is 15.5%", "The rate is 15%", 1 / 2, ["15%"]),
    ],
)
def test_a_keyword_is_found_whole(
    answer: str, reference: str, value: float, missing: list[str]
) -> None:
    found = keyword_coverage(answer, reference)
    assert found is not None
    assert found[0] == pytest.approx(value) and found[1] == missing


@pytest.mark.parametrize(
    "answer,reference,same",
    [
        ("Territory 117 is 0.133%", "Territory 117 is -0.133%", False),  # the sign
        ("The rate is 1.33", "The rate is 13.3", False),  # the decimal point
        ("1,000 people", "1000 people", True),  # a thousands comma is not a decimal point
        ("The Paris!", "paris", True),  # SQuAD's rule otherwise: articles and punctuation go
        ("\u22125 degrees", "-5 degrees", True),  # a minus sign typed either way
    ],
)
def test_exact_match_keeps_a_numbers_sign_and_point(
    answer: str, reference: str, same: bool
) -> None:
    assert exact_match(answer, reference) == float(same)
    assert exact_match_strict("Territory 117 is 0.133%", "Territory 117 is -0.133%") == 0.0

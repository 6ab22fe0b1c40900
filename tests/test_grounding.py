"""Heuristic grounding: claims, numbers, and the four grounding metrics (hand-computed cases)."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.metrics.base import MetricSettings, score_case
from ragmeter.metrics.claims import analyse_sentence, classify_claim, extract_claims
from ragmeter.metrics.claims import split_sentences as split_answer
from ragmeter.metrics.grounding import assess, grounding_metrics
from ragmeter.metrics.numbers import extract_numbers, same_value
from ragmeter.models import Case, CaseResult, Response, RetrievedChunk, Score

CONTEXT = (
    "Employees receive 15 days of paid vacation per year. Vacation accrues monthly. "
    "The company employs 1,000 people and spent $604 on training per employee."
)


def run(answer: str, contexts: list[str] | None = None, retrieved: bool = True) -> dict[str, Score]:
    metrics = grounding_metrics(MetricSettings())
    case = Case(case_id="c1", question="How much vacation do I get?")
    if retrieved:
        chunks = [RetrievedChunk(id=f"k{i}", text=t) for i, t in enumerate(contexts or [])]
        response = Response(answer=answer, retrieved=chunks)
    else:
        response = Response(answer=answer)
    result = CaseResult(case_id="c1", status="ok", response=response)
    return {m.name: score_case(m, case, result) for m in metrics}


# --- claims -------------------------------------------------------------------------------


def test_split_sentences_keeps_abbreviations_and_initials() -> None:
    text = "He was born j. r. cash. He lived in the U.S. until 2003! Dr. Smith agreed; it rained."
    assert split_answer(text) == [
        "He was born j. r. cash.",
        "He lived in the U.S. until 2003!",
        "Dr. Smith agreed",
        "it rained.",
    ]


def test_split_sentences_lowercase_and_bullets() -> None:
    assert split_answer("it is red . it is big .\n- item one\n* item two") == [
        "it is red .",
        "it is big .",
        "item one",
        "item two",
    ]


@pytest.mark.parametrize(
    ("sentence", "kind", "indicator"),
    [
        ("Vacation is 15 days.", "assertion", "is"),
        ("Employees must file a form.", "assertion", "must"),
        ("The policy will change.", "assertion", "will"),
        ("Vacation may roll over.", "inference", "may"),
        ("It might be paid.", "inference", "might"),
        ("Staff could ask HR.", "inference", "could"),
        ("Vacation is generally approved.", "general", "generally"),
        ("Requests are typically answered in a day.", "general", "typically"),
        ("Paris hosts the museum.", "assertion", None),
    ],
)
def test_classify_claim(sentence: str, kind: str, indicator: str | None) -> None:
    assert classify_claim(sentence) == (kind, indicator)


def test_non_claims_questions_refusals_and_fillers() -> None:
    claims, non_claims = extract_claims("Yes! Do you like it? I don't know. Vacation is 15 days.")
    assert [c.text for c in claims] == ["Vacation is 15 days."]
    assert [(n.text, n.reason) for n in non_claims] == [
        ("Yes!", "no content"),
        ("Do you like it?", "question"),
        ("I don't know.", "refusal"),
    ]


def test_leading_hedge_is_cut_off() -> None:
    claims, non_claims = extract_claims("I'm not sure, but it aired in 1994.")
    assert [c.text for c in claims] == ["it aired in 1994."]
    assert [n.reason for n in non_claims] == ["refusal"]
    assert analyse_sentence("I am not sure.").reason == "refusal"  # type: ignore[union-attr]


# --- numbers ------------------------------------------------------------------------------


def values(text: str) -> list[str]:
    return [n.normalized for n in extract_numbers(text)]


def test_number_normalisation() -> None:
    assert values("1,000") == values("1000") == ["1000"]
    assert values("15%") == values("15 percent") == values("15 per cent") == ["15 percent"]
    assert values("$604") == values("604") == ["604"]
    assert extract_numbers("$604")[0].unit == "currency"
    assert values("1.5 million") == values("1,500,000") == ["1500000"]
    assert values("3k") == ["3000"]
    assert values("the 21st century") == ["21"]
    assert values("in 1\u20132% of people") == ["1", "2 percent"]
    assert values("three categories") == ["3"]
    assert values("the one I like") == []
    assert values("June 29, 2007") == ["29", "2007"]
    assert values("3 m tall") == ["3"]  # a lone letter is not a scale after a space


@given(st.integers(min_value=0, max_value=10**12))
def test_number_parser_round_trips_integers(n: int) -> None:
    with_commas = f"{n:,}"
    (plain,) = extract_numbers(f"about {n} units")
    (grouped,) = extract_numbers(f"about {with_commas} units")
    assert same_value(plain.value, float(n))
    assert same_value(grouped.value, float(n))
    assert plain.normalized == grouped.normalized == str(n)


@given(st.decimals(min_value=0, max_value=10**6, places=2, allow_nan=False))
def test_number_parser_percent_and_decimals(d: object) -> None:
    text = f"{d}"
    (percent,) = extract_numbers(f"rose {text}% today")
    (words,) = extract_numbers(f"rose {text} percent today")
    assert percent.unit == words.unit == "percent"
    assert same_value(percent.value, float(text)) and percent.normalized == words.normalized


@given(st.text(max_size=200))
def test_number_parser_never_crashes(text: str) -> None:
    for mention in extract_numbers(text):
        assert mention.value == mention.value  # not NaN


# --- metrics ------------------------------------------------------------------------------


def test_supported_answer() -> None:
    scores = run("Employees receive 15 days of paid vacation per year.", [CONTEXT])
    assert scores["claim_support_rate"].value == 1.0
    assert scores["unsupported_claim_count"].value == 0.0
    assert scores["numeric_fabrication_count"].value == 0.0
    assert scores["grounding_score"].value == 1.0
    claim = scores["grounding_score"].details["claims"][0]
    assert claim["verdict"] == "supported"
    assert claim["best_sentence"] == "Employees receive 15 days of paid vacation per year."


def test_supported_and_unsupported_claims() -> None:
    answer = "Vacation accrues monthly. Employees get a free helicopter ride on Fridays."
    scores = run(answer, [CONTEXT])
    assert scores["claim_support_rate"].value == 0.5
    assert scores["unsupported_claim_count"].value == 1.0
    details = scores["unsupported_claim_count"].details
    assert details["unsupported_claims"] == ["Employees get a free helicopter ride on Fridays."]
    # first claim: 3 terms all found (support 1); second: 6 terms, 1 found ("employee");
    # the term-weighted mean is (3 * 1 + 6 * 1/6) / 9
    assert scores["grounding_score"].value == pytest.approx(4 / 9)


def test_numeric_fabrication_with_normalisation() -> None:
    answer = "The company employs 1000 people, spent 604 dollars, gives 15 days and 30 days off."
    scores = run(answer, [CONTEXT])
    assert scores["numeric_fabrication_count"].value == 1.0
    assert scores["numeric_fabrication_count"].details["fabricated_numbers"] == ["30"]
    percent = run("Turnover was 15 percent.", ["Turnover was 15%."])
    assert percent["numeric_fabrication_count"].value == 0.0


def test_negation_mismatch_lowers_support() -> None:
    same = run("Vacation accrues monthly.", [CONTEXT])["grounding_score"].value
    negated = run("Vacation does not accrue monthly.", [CONTEXT])["grounding_score"]
    assert negated.details["claims"][0]["negation_mismatch"] is True
    assert same is not None and negated.value is not None and negated.value < same


def test_general_claims_are_not_checked() -> None:
    scores = run("Managers generally approve requests quickly.", [CONTEXT])
    assert scores["claim_support_rate"].status == "skipped"
    assert scores["claim_support_rate"].reason is not None
    assert scores["claim_support_rate"].reason.startswith("no checked claims")
    assert scores["grounding_score"].status == "ok"  # still scored, not checked


def test_refusal_only_answer_is_skipped() -> None:
    scores = run("I don't know. Can you rephrase the question?", [CONTEXT])
    for name in ("claim_support_rate", "unsupported_claim_count", "grounding_score"):
        assert scores[name].status == "skipped"
        assert scores[name].reason is not None
        assert scores[name].reason.startswith(("no checkable claims", "no checked claims"))
    assert scores["numeric_fabrication_count"].value == 0.0


def test_empty_answer_is_skipped() -> None:
    scores = run("", [CONTEXT])
    assert scores["grounding_score"].status == "skipped"
    assert scores["numeric_fabrication_count"].value == 0.0


def test_empty_context_gives_zero_support() -> None:
    scores = run("Vacation is 15 days per year.", [])
    assert scores["claim_support_rate"].value == 0.0
    assert scores["unsupported_claim_count"].value == 1.0
    assert scores["grounding_score"].value == 0.0
    assert scores["numeric_fabrication_count"].value == 1.0


def test_retrieved_not_reported_is_skipped() -> None:
    scores = run("Vacation is 15 days.", retrieved=False)
    assert scores["grounding_score"].status == "skipped"
    assert scores["grounding_score"].reason == "target did not report retrieved chunks"


def test_unicode() -> None:
    context = "Der Urlaub beträgt 30 Tage. 東京は日本の首都です。 Café prices rose 5%."
    assert run("Der Urlaub beträgt 30 Tage.", [context])["grounding_score"].value == 1.0
    assert run("東京は日本の首都です。", [context])["grounding_score"].value == 1.0
    ligature = run("Cafe\u0301 prices rose 5 percent.", [context])["grounding_score"]
    assert ligature.value == 1.0  # NFKC folds the combining accent; 5% = 5 percent
    # CJK is matched by character bigrams: only "です" of 9 bigrams is shared
    assert run("大阪は大きい都市です。", [context])["grounding_score"].value == pytest.approx(1 / 9)


def test_very_long_inputs_are_fast() -> None:
    sentence = "Section {i} says employees in region {i} receive {i} days of leave. "
    context = "".join(sentence.format(i=i) for i in range(800))
    assert len(context) > 50_000
    answer = " ".join(f"Region {i} staff receive {i} days of leave." for i in range(0, 800, 8))
    started = time.perf_counter()
    scores = run(answer, [context])
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0
    assert scores["claim_support_rate"].value == 1.0
    assert scores["numeric_fabrication_count"].value == 0.0


def test_huge_answer_is_capped() -> None:
    answer = "Vacation accrues monthly. " * 500
    result = assess(answer, [CONTEXT])
    assert len(result.claims) == 200
    assert any("only the first 200 claims" in note for note in result.notes)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300), st.lists(st.text(max_size=300), max_size=3))
def test_scores_stay_in_unit_interval(answer: str, contexts: list[str]) -> None:
    result = assess(answer, contexts)
    assert all(0.0 <= c.support <= 1.0 for c in result.claims)
    score = result.score
    assert score is None or 0.0 <= score <= 1.0
    assert len(result.fabricated_numbers) <= len(result.answer_numbers)

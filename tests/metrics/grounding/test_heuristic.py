"""Heuristic grounding: claims, numbers, and the four grounding metrics (hand-computed cases)."""

from __future__ import annotations

import math
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.metrics.base import MetricSettings, score_case
from ragmeter.metrics.claims import analyse_sentence, classify_claim, extract_claims
from ragmeter.metrics.claims import split_sentences as split_answer
from ragmeter.metrics.grounding import (
    DEFAULT_SCORE_WEIGHTS,
    STANCE_WORDS,
    AnswerSignals,
    assess,
    grounding_metrics,
)
from ragmeter.metrics.numbers import extract_numbers, same_value
from ragmeter.models import Case, CaseResult, Response, RetrievedChunk, Score

CONTEXT = (
    "Employees receive 15 days of paid vacation per year. Vacation accrues monthly. "
    "The company employs 1,000 people and spent $604 on training per employee."
)


def expected_score(
    coverage: float,
    bigram: float,
    missing_numbers: int,
    novel_terms: int,
    personal: bool,
    word_recall: float,
    opener: bool,
    *,
    words: int = 0,
    abstains: float = 0.0,
    relation_violations: int = 0,
    anchored: float = 1.0,
) -> float:
    """``grounding_score`` by hand from the shipped weights (sigmoid of the weighted sum); an
    answer of more than 20 words (``words``) is partly or fully long: long = (words - 20) / 10,
    at most 1."""
    w = DEFAULT_SCORE_WEIGHTS
    long = min(max((words - 20) / 10, 0.0), 1.0)
    z = (
        w.intercept
        + w.coverage * coverage
        + w.bigram * bigram
        + w.missing_numbers * missing_numbers
        + w.novel_terms * math.log(1 + novel_terms)
        + w.personal * personal
        + w.word_recall * word_recall
        + w.opener * opener
        + w.abstains * abstains
        + w.long * long
        + w.long_personal * long * personal
        + w.long_opener * long * opener
        + w.long_coverage * long * coverage
        + w.long_word_recall * long * word_recall
        + w.long_relation_violations * long * relation_violations
        + w.long_anchored * long * anchored
    )
    return 1 / (1 + math.exp(-z))


GROUNDING_NAMES = (
    "claim_support_rate",
    "unsupported_claim_count",
    "numeric_fabrication_count",
    "grounding_score",
)


def run(
    answer: str,
    contexts: list[str] | None = None,
    retrieved: bool = True,
    model: Literal["auto", "lexical"] = "lexical",
) -> dict[str, Score]:
    """The four metrics on one case; the lexical model unless ``model="auto"``."""
    metrics = grounding_metrics(MetricSettings(grounding_model=model))
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


@settings(deadline=None)
@given(st.integers(min_value=0, max_value=10**12))
def test_number_parser_round_trips_integers(n: int) -> None:
    with_commas = f"{n:,}"
    (plain,) = extract_numbers(f"about {n} units")
    (grouped,) = extract_numbers(f"about {with_commas} units")
    assert same_value(plain.value, float(n))
    assert same_value(grouped.value, float(n))
    assert plain.normalized == grouped.normalized == str(n)


@settings(deadline=None)
@given(st.decimals(min_value=0, max_value=10**6, places=2, allow_nan=False))
def test_number_parser_percent_and_decimals(d: object) -> None:
    text = f"{d}"
    (percent,) = extract_numbers(f"rose {text}% today")
    (words,) = extract_numbers(f"rose {text} percent today")
    assert percent.unit == words.unit == "percent"
    assert same_value(percent.value, float(text)) and percent.normalized == words.normalized


@settings(deadline=None)
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
    # every fact term and term bigram found, every word found, nothing personal
    assert scores["grounding_score"].value == pytest.approx(
        expected_score(1.0, 1.0, 0, 0, False, 1.0, False)
    )
    assert scores["grounding_score"].details["mean_support"] == 1.0
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
    # the term-weighted mean support is (3 * 1 + 6 * 1/6) / 9
    details = scores["grounding_score"].details
    assert details["mean_support"] == pytest.approx(4 / 9, abs=1e-4)
    # fact coverage 4/9; term bigrams: 2 of claim 1 found, 0 of the 5 of claim 2; 5 novel
    # terms (get, free, helicopter, ride, friday); words found: vacation, accrues, monthly,
    # employees, on = 5 of 11
    assert scores["grounding_score"].value == pytest.approx(
        expected_score(4 / 9, 2 / 7, 0, 5, False, 5 / 11, False)
    )


def test_numeric_fabrication_with_normalisation() -> None:
    answer = "The company employs 1000 people, spent 604 dollars, gives 15 days and 30 days off."
    scores = run(answer, [CONTEXT])
    assert scores["numeric_fabrication_count"].value == 1.0
    assert scores["numeric_fabrication_count"].details["fabricated_numbers"] == ["30"]
    percent = run("Turnover was 15 percent.", ["Turnover was 15%."])
    assert percent["numeric_fabrication_count"].value == 0.0


def test_negation_mismatch_lowers_support() -> None:
    same = run("Vacation accrues monthly.", [CONTEXT])["grounding_score"]
    negated = run("Vacation does not accrue monthly.", [CONTEXT])["grounding_score"]
    assert negated.details["claims"][0]["negation_mismatch"] is True
    # claim support: coverage 1 minus the negation weight 0.2
    assert same.details["claims"][0]["support"] == 1.0
    assert negated.details["claims"][0]["support"] == pytest.approx(0.8)
    assert same.value is not None and negated.value is not None and negated.value < same.value


def test_general_claims_are_not_checked() -> None:
    scores = run("Managers generally approve requests quickly.", [CONTEXT])
    assert scores["claim_support_rate"].status == "skipped"
    assert scores["claim_support_rate"].reason is not None
    assert scores["claim_support_rate"].reason.startswith("no checked claims")
    assert scores["grounding_score"].status == "ok"  # still scored, not checked


def test_refusal_only_answer_is_skipped() -> None:
    # a refusal by the abstention family's phrase rule: every grounding metric skips it and
    # says which rule decided (issue 29: one notion of refusal)
    scores = run("I don't know. Can you rephrase the question?", [CONTEXT])
    for name in GROUNDING_NAMES:
        assert scores[name].status == "skipped"
        assert scores[name].reason == "the response abstained (phrase: i don't know)"


def test_empty_answer_is_skipped() -> None:
    scores = run("", [CONTEXT])
    for name in GROUNDING_NAMES:
        assert scores[name].status == "skipped"
        assert scores[name].reason == "the response abstained (empty answer)"


def test_empty_context_gives_zero_support() -> None:
    scores = run("Vacation is 15 days per year.", [])
    assert scores["claim_support_rate"].value == 0.0
    assert scores["unsupported_claim_count"].value == 1.0
    assert scores["grounding_score"].details["mean_support"] == 0.0
    # nothing found: coverage 0, 1 missing number, 5 novel terms (vacation, #15, day, per,
    # year), no word found
    assert scores["grounding_score"].value == pytest.approx(
        expected_score(0.0, 0.0, 1, 5, False, 0.0, False)
    )
    assert scores["numeric_fabrication_count"].value == 1.0


def test_retrieved_not_reported_is_skipped() -> None:
    scores = run("Vacation is 15 days.", retrieved=False)
    assert scores["grounding_score"].status == "skipped"
    assert scores["grounding_score"].reason == "target did not report retrieved chunks"


def test_unicode() -> None:
    context = "Der Urlaub beträgt 30 Tage. 東京は日本の首都です。 Café prices rose 5%."

    def support(answer: str) -> float:
        return float(run(answer, [context])["grounding_score"].details["mean_support"])

    assert support("Der Urlaub beträgt 30 Tage.") == 1.0
    assert support("東京は日本の首都です。") == 1.0
    assert support("Cafe\u0301 prices rose 5 percent.") == 1.0  # NFKC; 5% = 5 percent
    # CJK is matched by character bigrams: only "です" of 9 bigrams is shared
    assert support("大阪は大きい都市です。") == pytest.approx(1 / 9, abs=1e-4)
    german = run("Der Urlaub beträgt 30 Tage.", [context])["grounding_score"].value
    assert german == pytest.approx(expected_score(1.0, 1.0, 0, 0, False, 1.0, False))


def test_very_long_inputs_are_scored_whole() -> None:
    # their speed is measured by bench/grounding_speed.py, not here (no timed tests)
    sentence = "Section {i} says employees in region {i} receive {i} days of leave. "
    context = "".join(sentence.format(i=i) for i in range(800))
    assert len(context) > 50_000
    answer = " ".join(f"Region {i} staff receive {i} days of leave." for i in range(0, 800, 8))
    scores = run(answer, [context])
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


# --- answer-level signals of grounding_score -------------------------------------------------


def test_stance_words_are_not_fact_terms() -> None:
    # "love" and "really" are stance words: left out of the fact terms, so the fact coverage
    # of "I really love that vacation accrues monthly." is 3/3 (vacation, accrue, monthly)
    assert {"love", "really", "think", "yes"} <= STANCE_WORDS
    signals = assess("I really love that vacation accrues monthly.", [CONTEXT]).signals
    assert signals is not None
    assert signals.fact_coverage == 1.0
    assert signals.novel_terms == 0


def test_personal_opener_and_word_recall() -> None:
    result = assess("Yes, I love that vacation accrues monthly.", [CONTEXT])
    assert result.signals == AnswerSignals(
        fact_coverage=1.0,
        fact_bigram_coverage=1.0,  # (vacation, accrue), (accrue, monthly) both in the context
        missing_numbers=0,
        novel_terms=0,
        personal=True,  # "I"
        word_recall=3 / 7,  # yes i love that vacation accrues monthly: 3 of 7 words found
        opener=True,  # opens with "Yes"
        words=7,  # short: ``long`` 0
        # terms yes, love, vacation, accrue, monthly: 3 of 5 in "Vacation accrues monthly."
        sentence_coverage=3 / 5,
    )
    assert result.score == pytest.approx(expected_score(1.0, 1.0, 0, 0, True, 3 / 7, True))
    plain = assess("Vacation accrues monthly.", [CONTEXT]).score
    assert plain is not None and result.score is not None and result.score < plain


def test_novel_terms_and_missing_numbers_lower_the_score() -> None:
    result = assess("Vacation accrues weekly for 40 days.", [CONTEXT])
    assert result.signals is not None
    # fact terms vacation, accrue, weekly, day, #40: weekly and #40 are novel
    assert result.signals.novel_terms == 2
    assert result.signals.missing_numbers == 1
    assert result.signals.fact_coverage == pytest.approx(3 / 5)
    supported = assess("Vacation accrues monthly.", [CONTEXT]).score
    assert supported is not None and result.score is not None and result.score < supported


def test_long_answer_regime() -> None:
    # the context copied twice: 50 words (25 each: "1,000" is two), so fully long (from 30)
    result = assess(CONTEXT + " " + CONTEXT, [CONTEXT])
    assert result.signals is not None
    assert (result.signals.words, result.signals.long) == (50, 1.0)
    assert (result.signals.fact_coverage, result.signals.word_recall) == (1.0, 1.0)
    assert result.score == pytest.approx(
        expected_score(1.0, 1.0, 0, 0, False, 1.0, False, words=50)
    )
    # the context with "You" for "Employees": 25 words, 5 of them past 20: long = 5 / 10; "you"
    # counts only for the short share
    answer = CONTEXT.replace("Employees", "You")
    result = assess(answer, [CONTEXT])
    assert result.signals is not None
    assert (result.signals.words, result.signals.personal) == (25, True)
    assert result.signals.long == pytest.approx(5 / 10)
    assert result.signals.word_recall == pytest.approx(24 / 25)  # all but "you"
    assert result.score == pytest.approx(
        expected_score(1.0, 1.0, 0, 0, True, 24 / 25, False, words=25)
    )
    # in a fully long answer the personal and opener cues weigh nothing
    w = DEFAULT_SCORE_WEIGHTS
    assert w.personal + w.long_personal == 0 and w.opener + w.long_opener == 0


def test_anchored_claims() -> None:
    # "Paid training accrues for people monthly.": every term is in the context, but no
    # sentence holds half of them (paid | accrue, monthly | training, people: at most 2 of 5)
    scattered = "Paid training accrues for people monthly."
    signals = assess(scattered, [CONTEXT]).signals
    assert signals is not None and (signals.fact_coverage, signals.anchored) == (1.0, 0.0)
    # the share is weighted by the claims' terms: 3 anchored of 3 + 5
    signals = assess("Vacation accrues monthly. " + scattered, [CONTEXT]).signals
    assert signals is not None and signals.anchored == pytest.approx(3 / 8)
    # it counts in long answers only: 27 words, long 0.7; 18 of the claims' 23 terms anchored
    answer = (
        "Employees receive 15 days of paid vacation per year. Vacation accrues monthly. "
        f"The company employs 1,000 people. {scattered} Vacation accrues monthly."
    )
    result = assess(answer, [CONTEXT])
    assert result.signals is not None
    assert result.signals.words == 27
    assert result.signals.long == pytest.approx(0.7)
    assert result.signals.anchored == pytest.approx(18 / 23)
    assert result.score == pytest.approx(
        expected_score(1.0, 13 / 18, 0, 0, False, 26 / 27, False, words=27, anchored=18 / 23)
    )
    short = assess(scattered, [CONTEXT])
    # a short answer scores as before: no term pair of it is in the context
    assert short.score == pytest.approx(expected_score(1.0, 0.0, 0, 0, False, 5 / 6, False))


def test_abstention_is_not_an_unsupported_claim() -> None:
    # a sentence saying the context lacks something asserts nothing it would have to support
    result = assess("The context does not mention parental leave.", [CONTEXT])
    assert result.signals is not None and result.signals.abstains == 1.0
    # fact terms context, mention, parental, leave: none found; "the" is 1 of 7 words
    assert (result.signals.fact_coverage, result.signals.novel_terms) == (0.0, 4)
    assert result.score == pytest.approx(
        expected_score(0.0, 0.0, 0, 4, False, 1 / 7, False, words=7, abstains=1.0)
    )
    claimed = assess("Parental leave lasts twelve weeks.", [CONTEXT]).score
    assert claimed is not None and result.score is not None and result.score > 0.9 > claimed
    # only sentences about the context count, as a share of the answer's sentences
    mixed = assess("The passage does not say. Parental leave lasts twelve weeks.", [CONTEXT])
    assert mixed.signals is not None and mixed.signals.abstains == 0.5
    factual = assess("The policy does not include dental care.", [CONTEXT]).signals
    assert factual is not None and factual.abstains == 0.0


def test_answer_without_claims_has_no_signals() -> None:
    result = assess("Do you like it?", [CONTEXT])
    assert result.signals is None and result.score is None

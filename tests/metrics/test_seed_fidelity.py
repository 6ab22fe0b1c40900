"""Seed fidelity (issue 13): seed 001's don't-know phrases and short-answer rule, seed 000's strict
exact match and EF_3 ``has_calculation``, heading anchors matched by whole segments, and the
``expected_chunks`` label scored. Every expected value is worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from ragmeter.metrics import MetricSettings, resolve_metrics, score_case
from ragmeter.metrics.abstention import (
    DEFAULT_PHRASES,
    SEED_PHRASES,
    classify_answer,
    detect_abstention,
)
from ragmeter.metrics.assertions import TIMES, calculation_markers
from ragmeter.metrics.lexical import exact_match, exact_match_strict
from ragmeter.metrics.retrieval import heading_within, judge_case
from ragmeter.models import Case, CaseResult, Response

FAMILIES = ["retrieval", "lexical", "assertions", "context", "citation", "abstention"]
METRICS = {m.name: m for m in resolve_metrics(FAMILIES, MetricSettings())}


def run(name: str, case: Case, response: Response) -> tuple[str, float | None, dict[str, Any]]:
    result = CaseResult(case_id=case.case_id, status="ok", response=response)
    score = score_case(METRICS[name], case, result)
    details = score.details if score.status == "ok" else {"reason": score.reason}
    return score.status, score.value, details


def case(**fields: Any) -> Case:
    return Case(case_id="c", question="q", **fields)


# --- 1. seed 001's don't-know list and short-answer rule ----------------------------------------

ANSWERABLE = case(reference_answer="Fifteen days of paid vacation.")
UNANSWERABLE = case(answerable=False)


def test_the_default_list_starts_with_seed_001s_twelve_phrases() -> None:
    assert SEED_PHRASES == (
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
    assert DEFAULT_PHRASES[:12] == SEED_PHRASES


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        ("I don't know.", "i don't know"),
        ("Honestly, I do not know the answer.", "i do not know"),
        ("Unknown", "unknown"),
        ("The start date is unknown.", "unknown"),
        ("I'm not sure.", "not sure"),
        ("I cannot determine that from the handbook.", "cannot determine"),
        ("There is no information about parking.", "no information"),
        ("Insufficient data.", "insufficient data"),
        ("I am unable to answer this question.", "unable to answer"),
        ("I cannot answer that.", "cannot answer"),
        ("We don't have enough information to say.", "don't have enough information"),
        ("That figure is not available.", "not available"),
        ("No data.", "no data"),
    ],
)
def test_each_seed_phrase_is_dont_know(answer: str, phrase: str) -> None:
    response = Response(answer=answer)
    assert detect_abstention(response) == (True, f"phrase: {phrase}")
    assert classify_answer(ANSWERABLE, response) == "DON'T KNOW"
    assert run("dont_know_rate", ANSWERABLE, response)[:2] == ("ok", 1.0)
    assert run("wrong_answer_rate", ANSWERABLE, response)[:2] == ("ok", 0.0)
    assert run("correct_answer_rate", ANSWERABLE, response)[:2] == ("ok", 0.0)
    # and it is an abstention: right on an unanswerable question
    assert run("abstention_accuracy", UNANSWERABLE, response)[:2] == ("ok", 1.0)


def test_folded_answers_still_match() -> None:
    # typographic apostrophe, capitals and a line break inside the phrase
    assert detect_abstention(Response(answer="I\u2019m NOT\n sure"))[0] is True
    assert detect_abstention(Response(answer="We don\u2019t have enough information."))[0]


@pytest.mark.parametrize(
    ("answer", "word"),
    [
        ("N/A", "n/a"),
        ("n/a.", "n/a"),
        ("None.", "none"),
        ("none", "none"),
        ("null", "null"),
        ("NULL", "null"),
        ("(none)", "none"),
    ],
)
def test_short_non_answers_are_dont_know(answer: str, word: str) -> None:
    response = Response(answer=answer)
    assert detect_abstention(response) == (True, f"short non-answer: {word}")
    assert classify_answer(ANSWERABLE, response) == "DON'T KNOW"


def test_short_rule_counts_characters_and_whole_words() -> None:
    # "Result: none" has 12 characters: not short, and "none" is no phrase of the list
    assert detect_abstention(Response(answer="Result: none")) == (False, "no abstention phrase")
    # the answer is trimmed first: "  n/a, n/a  " is "n/a, n/a", 8 characters
    assert detect_abstention(Response(answer="  n/a, n/a  "))[0] is True
    assert detect_abstention(Response(answer="It's none"))[0] is True  # 9 characters
    # a word that merely contains "none" or "null" is an answer
    assert detect_abstention(Response(answer="Nonexempt")) == (False, "no abstention phrase")
    assert detect_abstention(Response(answer="Nullified")) == (False, "no abstention phrase")
    # the rule holds with a configured phrase list too; "Unknown" then comes from it
    assert detect_abstention(Response(answer="Unknown"), ("nope",)) == (
        True,
        "short non-answer: unknown",
    )


def test_phrases_start_at_a_word() -> None:
    assert detect_abstention(Response(answer="The piano data sheet says 3 kg.")) == (
        False,
        "no abstention phrase",
    )
    assert classify_answer(case(reference_answer="3 kg"), Response(answer="It is 3 kg.")) == (
        "CORRECT"
    )


def test_a_reported_field_wins_over_the_phrases() -> None:
    assert detect_abstention(Response(answer="N/A", abstained=False)) == (False, "field")


# --- 2. seed 001's counts: rate x n_scored -----------------------------------------------------


def test_class_counts_are_rate_times_n() -> None:
    """Four cases: 2 CORRECT, 1 WRONG, 1 DON'T KNOW (by the short rule), so the rates are 2/4,
    1/4, 1/4 and each count is the rate x 4."""
    pairs = [
        (ANSWERABLE, Response(answer="Fifteen days of paid vacation.")),
        (case(reference_answer="Paris"), Response(answer="paris")),
        (case(reference_answer="Paris"), Response(answer="Lyon")),
        (case(reference_answer="Paris"), Response(answer="None.")),
    ]
    counts = {}
    for label in ("correct_answer_rate", "wrong_answer_rate", "dont_know_rate"):
        values = [run(label, c, r)[1] for c, r in pairs]
        counts[label] = sum(v for v in values if v is not None)
    assert counts == {"correct_answer_rate": 2.0, "wrong_answer_rate": 1.0, "dont_know_rate": 1.0}
    assert [run("correct_answer_rate", c, r)[2]["class"] for c, r in pairs] == [
        "CORRECT",
        "CORRECT",
        "WRONG",
        "DON'T KNOW",
    ]


# --- 3. seed 000's strict exact match and has_calculation --------------------------------------


@pytest.mark.parametrize(
    ("answer", "reference", "strict", "squad"),
    [
        ("Paris", "paris", 1.0, 1.0),
        ("  Paris \n", "paris", 1.0, 1.0),
        ("New   York\tCity", "new york city", 1.0, 1.0),
        ("Paris.", "Paris", 0.0, 1.0),  # punctuation counts
        ("The Eiffel Tower", "Eiffel Tower", 0.0, 1.0),  # articles count
        ("$604", "604", 0.0, 1.0),
        ("Lyon", "Paris", 0.0, 0.0),
        ("Cafe\u0301 Zu\u0308rich", "Caf\u00e9 Z\u00fcrich", 1.0, 1.0),  # NFD against NFC
        ("Caf\u00e9", "Cafe", 0.0, 0.0),  # an accent is not dropped
    ],
)
def test_exact_match_strict(answer: str, reference: str, strict: float, squad: float) -> None:
    assert exact_match_strict(answer, reference) == strict
    assert exact_match(answer, reference) == squad
    assert run("exact_match_strict", case(reference_answer=reference), Response(answer=answer))[
        :2
    ] == ("ok", strict)


def test_exact_match_strict_skips_unanswerable_and_unreferenced_cases() -> None:
    assert run("exact_match_strict", case(), Response(answer="x"))[0] == "skipped"
    assert run("exact_match_strict", UNANSWERABLE, Response(answer="x"))[0] == "skipped"


NUMERIC = case(expected_number={"value": 604})


@pytest.mark.parametrize(
    ("answer", "markers"),
    [
        ("293 \u00d7 2.061 = $604", [TIMES]),
        ("The premium is 293 * 2.061 = 604.", ["*"]),
        ("(293)*(2.061) = 604", ["*"]),
        ("Multiply the base rate by the factor: $604.", ["multiply"]),
        ("293 multiplied by 2.061 gives $604.", ["multiply"]),
        ("By multiplication, 293 \u00d7 2.061 = 604.", [TIMES, "multiply"]),
        ("The premium is **$604**.", []),  # markdown emphasis
        ("* Base rate: 293\n* Premium: $604", []),  # markdown bullets
        ("The multiplier is 2.061.", []),
        ("The premium is $604.", []),
    ],
)
def test_has_calculation(answer: str, markers: list[str]) -> None:
    assert calculation_markers(answer) == markers
    status, value, details = run("has_calculation", NUMERIC, Response(answer=answer))
    assert (status, value, details["markers"]) == ("ok", float(bool(markers)), markers)


def test_has_calculation_is_for_numeric_cases() -> None:
    status, _, details = run("has_calculation", case(), Response(answer="2 \u00d7 3"))
    assert (status, details["reason"]) == ("skipped", "case declares no expected_number")


# --- 4. heading anchors by whole segments -------------------------------------------------------


@pytest.mark.parametrize(
    ("anchor", "heading", "inside"),
    [
        ("Handbook > Annual", "Handbook > Annual", True),
        ("Handbook > Annual", "Handbook > Annual > Carry-over", True),
        ("Handbook > Annual", "Handbook > Annual Vacation", False),
        ("Handbook > Annual", "Handbook > Annual Vacation > Carry-over", False),
        ("Handbook > Annual", "Handbook", False),
        ("Handbook", "Handbooks > Annual", False),
        ("Handbook > Annual", "Handbook >  Annual>Carry-over", True),  # normalised
        (None, "Anything > At all", True),
        ("Handbook", None, False),
    ],
)
def test_heading_within(anchor: str | None, heading: str | None, inside: bool) -> None:
    assert heading_within(anchor, heading) is inside


ANCHORED = case(gold_passages=[{"rel_path": "hr.md", "heading_path": "Handbook > Annual"}])


def test_retrieval_anchor_does_not_match_a_longer_segment() -> None:
    response = Response(
        retrieved=[
            {
                "id": "1",
                "rank": 1,
                "rel_path": "hr.md",
                "heading_path": "Handbook > Annual Vacation",
            },
            {"id": "2", "rank": 2, "rel_path": "hr.md", "heading_path": "Handbook > Annual > Pay"},
        ]
    )
    judged = judge_case(ANCHORED, response)
    assert judged.ranked == ["~unjudged~0", "hr.md#Handbook > Annual"]
    assert run("mrr", ANCHORED, response)[:2] == ("ok", 0.5)
    assert run("hit_rate_at_1", ANCHORED, response)[:2] == ("ok", 0.0)
    only_prefix = Response(
        retrieved=[
            {"id": "1", "rank": 1, "rel_path": "hr.md", "heading_path": "Handbook > Annuals"}
        ]
    )
    assert run("recall_at_10", ANCHORED, only_prefix)[:2] == ("ok", 0.0)


def test_section_accuracy_matches_whole_segments() -> None:
    response = Response(
        answer="x",
        citations=[
            {"rel_path": "hr.md", "heading_path": "Handbook > Annual > Pay"},
            {"rel_path": "hr.md", "heading_path": "Handbook > Annual Vacation"},
            {"rel_path": "hr.md", "heading_path": "Handbook > Annually"},
            {"rel_path": "it.md", "heading_path": "Handbook > Annual"},
        ],
    )
    # only the first of four points inside the gold section
    assert run("section_accuracy", ANCHORED, response)[:2] == ("ok", 0.25)
    assert run("citation_precision", ANCHORED, response)[:2] == ("ok", 0.25)


# --- 5. expected_chunks -------------------------------------------------------------------------


def chunk(chunk_id: str | None, rank: int) -> dict[str, Any]:
    return {"id": chunk_id, "rank": rank, "text": "some text"}


def test_expected_chunk_recall() -> None:
    labelled = case(expected_chunks=["a", "b", "c", "b"])  # "b" twice counts once: 3 expected
    response = Response(retrieved=[chunk("x", 1), chunk("c", 2), chunk("a", 3), chunk("a", 4)])
    status, value, details = run("expected_chunk_recall", labelled, response)
    assert (status, value, details["missing"]) == ("ok", pytest.approx(2 / 3), ["b"])
    everything = Response(retrieved=[chunk("b", 1), chunk("c", 2), chunk("a", 3)])
    assert run("expected_chunk_recall", labelled, everything)[:2] == ("ok", 1.0)
    nothing = Response(retrieved=[chunk(None, 1), chunk("z", 2)])
    assert run("expected_chunk_recall", labelled, nothing)[:2] == ("ok", 0.0)
    assert run("expected_chunk_recall", labelled, Response(retrieved=[]))[:2] == ("ok", 0.0)


def test_expected_chunk_recall_is_skipped_without_the_label_or_retrieval() -> None:
    status, _, details = run("expected_chunk_recall", case(), Response(retrieved=[chunk("a", 1)]))
    assert (status, details["reason"]) == ("skipped", "case declares no expected_chunks")
    labelled = case(expected_chunks=["a"])
    status, _, details = run("expected_chunk_recall", labelled, Response(answer="x"))
    assert (status, details["reason"]) == ("skipped", "target did not report retrieved chunks")
    assert METRICS["expected_chunk_recall"].group == "context_quality"
    assert METRICS["expected_chunk_recall"].kind == "proportion"

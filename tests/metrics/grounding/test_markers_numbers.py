"""Grounding on real RAG answers: citation markers removed before claims and numbers are read,
tokenised numbers, dates, percentages, unit conversions, the per-claim number cap, and verdicts
that do not depend on the hash seed (hand-computed cases)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.metrics.base import MetricSettings, score_case
from ragmeter.metrics.claims import extract_claims
from ragmeter.metrics.grounding import (
    DEFAULT_WEIGHTS,
    MAX_MISSING_NUMBERS_PER_CLAIM,
    alignment_texts,
    assess,
    build_context,
    grounding_metrics,
)
from ragmeter.metrics.markers import Marked, strip_markers
from ragmeter.metrics.numbers import TakenSpans, extract_numbers
from ragmeter.metrics.textmatch import index_text, numbers, phrase_present
from ragmeter.models import Case, CaseResult, Response, RetrievedChunk, Score

VACATION = "Employees get 15 days of paid vacation per year."
CLEAN = "Employees get 15 days paid vacation."


def run(answer: str, contexts: list[str]) -> dict[str, Score]:
    """The four grounding metrics on one case, lexical model."""
    metrics = grounding_metrics(MetricSettings(grounding_model="lexical"))
    case = Case(case_id="c1", question="How much vacation do I get?")
    chunks = [RetrievedChunk(id=f"k{i}", text=t) for i, t in enumerate(contexts)]
    result = CaseResult(
        case_id="c1", status="ok", response=Response(answer=answer, retrieved=chunks)
    )
    return {m.name: score_case(m, case, result) for m in metrics}


def comparable(scores: dict[str, Score]) -> dict[str, Any]:
    """Values and details of the four metrics, without the marker ids."""
    out: dict[str, Any] = {}
    for name, score in scores.items():
        details = {k: v for k, v in (score.details or {}).items() if k != "citation_markers"}
        out[name] = (score.status, score.value, details)
    return out


# --- markers ------------------------------------------------------------------------------

MARKERS = [
    (" [1]", ("1",)),
    (" [2][3]", ("2", "3")),
    (" [1, 2]", ("1", "2")),
    (" [1-3]", ("1-3",)),
    (" [doc-id]", ("doc-id",)),
    (" [internal-001]", ("internal-001",)),
    (" [handbook/leave#annual]", ("handbook/leave#annual",)),
    (" [^1]", ("1",)),
    (" [Source: handbook.md]", ("handbook.md",)),
    ("^1", ("1",)),
    (" ^2", ("2",)),
    (" (Source: Employee Handbook)", ("Employee Handbook",)),
    (" (source: leave.md)", ("leave.md",)),
    (" (Sources: a.md, b.md)", ("a.md", "b.md")),
    ("【1】", ("1",)),
    ("【4:0†source】", ("4:0†source",)),
    ("¹", ("1",)),
    ("²³", ("23",)),
    ("¹,²", ("1", "2")),
]


@pytest.mark.parametrize(("marker", "ids"), MARKERS)
def test_marker_is_removed_with_its_ids(marker: str, ids: tuple[str, ...]) -> None:
    assert strip_markers(f"Employees get 15 days paid vacation{marker}.") == Marked(CLEAN, ids)


@pytest.mark.parametrize(("marker", "ids"), MARKERS)
def test_marked_answer_scores_as_the_clean_one(marker: str, ids: tuple[str, ...]) -> None:
    marked = run(f"Employees get 15 days paid vacation{marker}.", [VACATION])
    clean = run(CLEAN, [VACATION])
    assert comparable(marked) == comparable(clean)
    assert marked["grounding_score"].details["citation_markers"] == list(ids)
    # every term (employee, get, day, paid, vacation, #15) is in the context: support 1
    assert marked["claim_support_rate"].value == 1.0
    assert marked["grounding_score"].details["claims"][0]["support"] == 1.0
    assert marked["numeric_fabrication_count"].value == 0.0


def test_marker_before_the_period_used_to_cost_support() -> None:
    # without the marker removal, "[1]" added the term #1: 6 of 7 terms found, minus 0.3 for
    # the fabricated "1" = 0.557; now the claim is read without it
    claim = assess("Employees get 15 days paid vacation [1].", [VACATION]).claims[0]
    assert claim.text == CLEAN
    assert claim.support == 1.0
    assert claim.signals.missing_numbers == []


@pytest.mark.parametrize(
    "text",
    [
        "The court said [he] was late.",  # editorial brackets
        "It is spelled this way [sic].",
        "See [the handbook](https://example.com/doc-1).",  # a markdown link
        "The area is x^2 plus 10^6 or mc^2.",  # exponents: a digit or a short word before
        "The flat has 50 m² and 10⁶ tiles.",
    ],
)
def test_non_markers_are_kept(text: str) -> None:
    assert strip_markers(text) == Marked(text)


def test_source_lines_are_not_claims() -> None:
    answer = "Vacation is 15 days [1]. Sick leave is 10 days [2].\nSources: [1], [2]"
    claims, non_claims = extract_claims(answer)
    assert [c.text for c in claims] == ["Vacation is 15 days.", "Sick leave is 10 days."]
    assert non_claims == []
    listed = strip_markers("Vacation is 15 days.\nSources: handbook.md, leave policy")
    assert listed == Marked("Vacation is 15 days.", ("handbook.md", "leave policy"))
    bulleted = (
        "Vacation is 15 days [1].\n\n**Sources:**\n- [1] leave.md\n- Leave Policy 2024\n\nOk?"
    )
    assert strip_markers(bulleted) == Marked(
        "Vacation is 15 days.\n\n\nOk?", ("1", "leave.md", "Leave Policy 2024")
    )
    claims, non_claims = extract_claims(bulleted)
    assert [c.text for c in claims] == ["Vacation is 15 days."]
    assert [(n.text, n.reason) for n in non_claims] == [("Ok?", "question")]
    prose = "Source: the handbook says that vacation is fifteen days for every employee here."
    assert strip_markers(prose) == Marked(prose)  # a sentence, not a list of sources
    sentence = "Reference: Vacation is 15 days."  # ends a sentence: not a source name
    assert strip_markers(sentence) == Marked(sentence)


PIECES = [
    "a",
    "word",
    "1",
    " ",
    "[",
    "]",
    "^",
    "(",
    ")",
    ",",
    ":",
    ".",
    "¹",
    "【",
    "】",
    "\n",
    "Source",
    "Sources:",
    "x.md",
]


@settings(deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_strip_markers_never_crashes(text: str) -> None:
    marked = strip_markers(text)
    assert len(marked.text) <= len(text)
    assert all(i and i == i.strip() for i in marked.ids)


def test_markers_out_of_numbers_phrases_and_alignment() -> None:
    assert numbers("Vacation is 15 days [1] and sick leave 10 days [2].") == [15.0, 10.0]
    indexed = index_text("Vacation is 15 days [1] per year.")
    assert phrase_present("15 days per year", indexed)  # the folded text has no "[1]"
    assert 1.0 not in indexed.numbers
    context = build_context(["Vacation accrues monthly [3]."])
    assert context.sentences == ["Vacation accrues monthly."]
    assert "#3" not in context.terms
    texts = alignment_texts(["Vacation accrues monthly (Source: leave.md)."], context)
    assert texts[0] == "Vacation accrues monthly."


def test_a_marker_is_not_the_expected_number() -> None:
    # numeric_answer_correct reads the answer's numbers through textmatch: the "[2]" of a
    # citation is not an answer of 2 (it was, before markers were removed)
    from ragmeter.metrics.assertions import assertion_metrics
    from ragmeter.models import NumericExpectation

    metrics = assertion_metrics(MetricSettings())
    (metric,) = [m for m in metrics if m.name == "numeric_answer_correct"]
    expected = NumericExpectation(value=2)
    case = Case(case_id="c1", question="How many offices?", expected_number=expected)
    answers = {"There are three offices [2].": 0.0, "There are 2 offices [1].": 1.0}
    for answer, value in answers.items():
        result = CaseResult(case_id="c1", status="ok", response=Response(answer=answer))
        assert score_case(metric, case, result).value == value, answer


# --- deterministic verdicts -----------------------------------------------------------------


def test_tied_best_sentence_is_the_earliest() -> None:
    # "alpha" and "beta" each occur in one context sentence: a tie of 1 term each. The earliest
    # sentence wins, so there is no negation mismatch and the support is 1 (the later sentence,
    # negated, would give 1 - 0.2 = 0.8). Lower case, so that neither word reads as a name
    # (two names never found together would be a relation violation: test_relations.py)
    result = assess("alpha beta.", ["alpha gamma. beta is not delta."])
    claim = result.details()["claims"][0]
    assert claim["best_sentence"] == "alpha gamma."
    assert claim["best_sentence_coverage"] == 0.5
    assert claim["negation_mismatch"] is False
    assert claim["support"] == 1.0


SEED_SCRIPT = """
import json
from ragmeter.metrics.base import MetricSettings, score_case
from ragmeter.metrics.grounding import grounding_metrics
from ragmeter.models import Case, CaseResult, Response, RetrievedChunk

CASES = [
    ("Alpha beta.", ["Alpha gamma. Beta is not delta."]),
    ("Red green blue. Green is not blue.", ["Red apples. Green pears. Blue is never green."]),
    ("Employees get 15 days paid vacation [1]. It opened on April 2, 1998.",
     ["Employees get 15 days of paid vacation per year.", "Opened 1998-04-03."]),
    ("There are 12, 500 members and 2. 4 million fans.", ["It has 12,500 members."]),
    ("I think alpha delta gamma beta are all here, maybe.",
     ["Beta alpha.", "Gamma delta.", "Delta beta.", "Alpha gamma."]),
]
metrics = grounding_metrics(MetricSettings(grounding_model="lexical"))
out = []
for number, (answer, contexts) in enumerate(CASES):
    case = Case(case_id=str(number), question="q")
    chunks = [RetrievedChunk(id=str(i), text=t) for i, t in enumerate(contexts)]
    response = Response(answer=answer, retrieved=chunks)
    result = CaseResult(case_id=case.case_id, status="ok", response=response)
    for metric in metrics:
        score = score_case(metric, case, result)
        out.append([metric.name, score.status, score.value, score.details])
print(json.dumps(out, sort_keys=True))
"""


def test_scores_do_not_depend_on_the_hash_seed() -> None:
    outputs = []
    for seed in ("1", "2", "random"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", SEED_SCRIPT],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] == outputs[2]
    first = json.loads(outputs[0])
    assert len(first) == 5 * 4
    tie = {name: details for name, _, _, details in first[:4] if name == "grounding_score"}
    assert tie["grounding_score"]["claims"][0]["best_sentence"] == "Alpha gamma."


# --- numbers: tokenised forms ---------------------------------------------------------------


def readings(text: str, dates: bool = False) -> list[tuple[str, tuple[tuple[str, ...], ...]]]:
    return [(n.normalized, n.alternatives) for n in extract_numbers(text, dates)]


def test_tokenised_thousands_have_two_readings() -> None:
    assert readings("12, 500") == [("12500", (("12500",), ("12", "500")))]
    assert readings("a population of 947 , 890 .") == [("947890", (("947890",), ("947", "890")))]
    assert readings("1, 2 and 3") == [("1", (("1",),)), ("2", (("2",),)), ("3", (("3",),))]
    assert readings("12,500") == [("12500", (("12500",),))]  # no space: one reading
    assert numbers("about 12, 500 people") == [12500.0]


def test_tokenised_decimals_have_two_readings() -> None:
    assert readings("2. 4 million") == [("2400000", (("2400000",), ("2", "4000000")))]
    assert readings("5 . 7 percent")[0][0] == "5.7 percent"
    # a year before a sentence end is not a decimal: more than three digits
    assert [n.normalized for n in extract_numbers("in 1998. 4 people")] == ["1998", "4"]
    claims, _ = extract_claims("Revenue was 5 . 7 million dollars . It grew .")
    assert [c.text for c in claims] == ["Revenue was 5 . 7 million dollars .", "It grew ."]


@pytest.mark.parametrize(
    ("answer", "context", "fabricated"),
    [
        ("There are 12, 500 members.", "There are 12,500 members.", 0),  # joined
        ("There are 12,500 members.", "There are 12 , 500 members.", 0),
        ("Sizes are 12, 500 and 900.", "Sizes are 12 and 500 and 900.", 0),  # the list
        ("Sizes are 12 and 500.", "Sizes are 12, 500 and 900.", 0),
        ("There are 12, 500 members.", "There are 12,600 members.", 1),
        ("Sales were 2 . 4 million.", "Sales were 2.4 million.", 0),
        ("Sales were 2.4 million.", "Sales were 2. 4 million.", 0),
        ("Sales were 2 . 5 million.", "Sales were 2.4 million.", 1),
    ],
)
def test_tokenised_numbers_in_grounding(answer: str, context: str, fabricated: int) -> None:
    assert run(answer, [context])["numeric_fabrication_count"].value == fabricated


def test_supported_tokenised_number_is_found_as_terms() -> None:
    # "23 , 768" is written as #23 and #768; the context's 23,768 supports it, so both terms
    # count as found: fact terms have, 23, 768, location, worldwide -> coverage 1
    result = assess(
        "They have 23 , 768 locations worldwide.", ["It has 23,768 locations worldwide."]
    )
    assert result.signals is not None
    assert result.signals.fact_coverage == 1.0
    assert result.signals.missing_numbers == 0


# --- numbers: dates -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["1998.04.02", "1998-04-02", "1998/04/02", "2 April 1998", "2nd of April, 1998",
     "April 2, 1998", "Apr. 2 1998", "april 2 , 1998"],
)  # fmt: skip
def test_date_formats(text: str) -> None:
    (mention,) = extract_numbers(f"It opened on {text} here.", dates=True)
    assert (mention.unit, mention.normalized) == ("date", "1998-04-02")


def test_ambiguous_and_impossible_day_month() -> None:
    assert readings("02/04/1998", dates=True) == [
        ("1998-04-02 or 1998-02-04", (("date:1998-04-02",), ("date:1998-02-04",)))
    ]
    assert readings("13/04/1998", dates=True)[0][0] == "1998-04-13"  # no 13th month
    assert readings("04/13/1998", dates=True)[0][0] == "1998-04-13"
    # not a calendar day: read as numbers
    assert [n.normalized for n in extract_numbers("31/02/1998", dates=True)] == [
        "31",
        "2",
        "1998",
    ]
    # without ``dates`` a date is its numbers, as before
    assert [n.normalized for n in extract_numbers("April 2, 1998")] == ["2", "1998"]


@pytest.mark.parametrize(
    ("answer", "context", "fabricated"),
    [
        ("It opened on April 2, 1998.", "Opened 1998-04-02.", 0),
        ("It opened on 1998.04.02.", "It opened on 2 April 1998.", 0),
        ("It opened on April 3, 1998.", "Opened 1998-04-02.", 1),
        ("It opened on 02/04/1998.", "It opened on February 4, 1998.", 0),
        ("It opened on 02/04/1998.", "It opened on April 2, 1998.", 0),
        ("It opened on 02/04/1998.", "It opened on March 2, 1998.", 1),
        ("It opened in 1998.", "It opened on April 2, 1998.", 0),  # the year alone
        ("He was born on February 8th 1935.", "Born January 8, 1935.", 1),  # month differs
    ],
)
def test_dates_compare_as_dates(answer: str, context: str, fabricated: int) -> None:
    assert run(answer, [context])["numeric_fabrication_count"].value == fabricated


def test_wrong_date_counts_its_missing_written_numbers() -> None:
    # one fabricated date; neither 30 nor 2002 is in the context, so the score's
    # missing-number signal counts 2 (as the two numbers did before dates were read)
    result = assess("The show aired on march 30 , 2002 .", ["It first aired on 17 August 2010."])
    assert [n.text for n in result.fabricated_numbers] == ["march 30 , 2002"]
    assert result.signals is not None and result.signals.missing_numbers == 2
    # only the month is wrong: 8 and 1935 are in the context, so it counts 1
    month = assess("He was born on February 8th 1935.", ["Born January 8, 1935."])
    assert month.signals is not None and month.signals.missing_numbers == 1


# --- numbers: percentages, words, conversions -----------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["5%", "5 %", "5 percent", "5 per cent", "five percent", "5 percentage points", "5 pct"],
)
def test_percent_forms(text: str) -> None:
    (mention,) = extract_numbers(f"Turnover rose {text} last year.")
    assert mention.normalized == "5 percent"


def test_number_words() -> None:
    assert [n.normalized for n in extract_numbers("twenty-five percent")] == ["25 percent"]
    assert [n.normalized for n in extract_numbers("one million people")] == ["1000000"]
    assert [n.normalized for n in extract_numbers("two billion people")] == ["2000000000"]
    assert [n.normalized for n in extract_numbers("the one I like")] == []
    assert (
        run("Turnover was five percent.", ["Turnover was 5%."])["numeric_fabrication_count"].value
        == 0.0
    )


def test_unit_conversions() -> None:
    conversions = {
        "The trail is 5 km (3.1 mi) long.": True,
        "It was 20 °C (68 °F) outside.": True,
        "It costs €5 ($5.50) a day.": True,
        "Leave is 2 weeks (about 14 days).": True,
        "It opened in 1990 (32 years ago).": False,  # the year has no unit
        "We hired 20 staff (15 managers).": False,  # "managers" is not a unit
    }
    for text, converted in conversions.items():
        mentions = extract_numbers(text)
        assert [m.conversion for m in mentions] == [False, converted], text


@pytest.mark.parametrize(
    ("context", "fabricated", "support"),
    [
        # terms trail, km, mi, long, #5 (the conversion adds no term): 4 of 5 found
        ("The trail is 5 km long.", [], 0.8),
        # 5 is supported by its conversion; trail, long, #5 found: 3 of 5
        ("The trail is 3.1 miles long.", [], 0.6),
        # neither: one fabricated number (not two); 3 of 5 found, minus 0.3
        ("The trail is 8 km long.", ["5"], 0.3),
    ],
)
def test_conversion_in_grounding(context: str, fabricated: list[str], support: float) -> None:
    result = assess("The trail is 5 km (3.1 mi) long.", [context])
    assert [n.text for n in result.fabricated_numbers] == fabricated
    assert result.claims[0].support == pytest.approx(support)


# --- the per-claim number penalty cap -------------------------------------------------------


def test_number_penalty_is_capped_per_claim() -> None:
    assert MAX_MISSING_NUMBERS_PER_CLAIM == 2
    context = "Annual vacation for full time staff in the Berlin office is 15 days."
    answer = "Annual vacation for full time staff in the Berlin office is 16, 17 or 18 days."
    result = assess(answer, [context])
    # terms annual, vacation, full, time, staff, berlin, office, day, #16, #17, #18: 8 of 11
    # found; three numbers missing but at most 2 x 0.3 is taken off: 8/11 - 0.6
    claim = result.claims[0]
    assert claim.signals.coverage == pytest.approx(8 / 11)
    assert claim.support == pytest.approx(8 / 11 - 2 * DEFAULT_WEIGHTS.missing_number)
    assert result.signals is not None and result.signals.missing_numbers == 2  # capped
    assert len(result.fabricated_numbers) == 3  # numeric_fabrication_count counts them all
    assert run(answer, [context])["numeric_fabrication_count"].value == 3.0


span_lists = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 12)).map(lambda p: (p[0], p[0] + p[1])),
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(spans=span_lists, queries=span_lists)
def test_taken_spans_answer_as_the_list_of_spans_does(
    spans: list[tuple[int, int]], queries: list[tuple[int, int]]
) -> None:
    """The sorted union numbers are read against answers what the plain list of spans would:
    does a span overlap one taken, is a position inside one (empty spans take nothing)."""
    taken = TakenSpans()
    for start, end in spans:
        taken.add(start, end)
    kept = [(a, b) for a, b in spans if b > a]
    for start, end in queries:
        assert taken.overlaps(start, end) == any(a < end and start < b for a, b in kept)
        assert taken.covers(start) == any(a <= start < b for a, b in kept)
    assert taken.starts == sorted(taken.starts) and taken.ends == sorted(taken.ends)


def test_a_reply_of_many_numbers_reads_every_one() -> None:
    """5,000 numbers and 5,000 number words, each read once (was quadratic in their count)."""
    text = "7 and seven, " * 5000
    found = extract_numbers(text)
    assert len(found) == 10_000
    assert {n.normalized for n in found} == {"7"}

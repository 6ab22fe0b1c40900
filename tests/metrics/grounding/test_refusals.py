"""One notion of refusal (issue 29, scope 5): a response the abstention family reads as a
refusal (flag, empty answer, phrase, short non-answer) is skipped by every metric that grades
the claims of an answer, the reason naming the rule that decided it.

The run below is the issue's: 26 cases, five answered "I could not find this in the
documentation." (a refusal in words, no ``abstained`` flag), the rest grounded answers. Before
the fix the five were graded as claims ("this in the documentation." unsupported: 0.000 each),
so claim_support_rate read 20/26 = 0.769 and failed its seed-003 target ``> 0.85``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter.config import EvalConfig, TargetConfig
from ragmeter.metrics.abstention import (
    DEFAULT_PHRASES,
    detect_abstention,
    phrase_found,
    refusal_rule,
    skip_refusal,
)
from ragmeter.metrics.base import MetricSettings, SkipScore, score_case
from ragmeter.metrics.grounding import grounding_metrics
from ragmeter.metrics.textmatch import fold
from ragmeter.models import Case, CaseResult, Response, RetrievedChunk, Score
from ragmeter.runner.run import evaluate
from ragmeter.targets.python import PythonTarget

REFUSAL = "I could not find this in the documentation."
GROUNDING = (
    "claim_support_rate",
    "unsupported_claim_count",
    "numeric_fabrication_count",
    "grounding_score",
)
# 21 facts, one a grounded answer each (copied from its chunk: every claim supported)
FACTS = [
    f"The {thing} setting defaults to {value}."
    for thing, value in [
        ("concurrency", "eight workers"),
        ("case timeout", "sixty seconds"),
        ("retry", "three attempts"),
        ("store", "the runs database"),
        ("output directory", "the reports folder"),
        ("embedder", "the minilm model"),
        ("relevance level", "grade one"),
        ("coverage floor", "one half"),
        ("sample size", "every case"),
        ("seed", "zero"),
        ("judge concurrency", "four requests"),
        ("judge budget", "no limit"),
        ("grounding model", "automatic alignment"),
        ("ndcg gain", "linear gain"),
        ("progress bar", "shown on a terminal"),
        ("health check", "switched on"),
        ("request template", "the question field"),
        ("response mapping", "the answer field"),
        ("report format", "markdown and html"),
        ("perspective", "the default perspective"),
        ("dataset format", "json lines"),
    ]
]
# two grounded answers add a claim the chunk does not hold: 1 of 2 claims supported (0.5)
FABRICATION = "The moon orbits a purple teapot near Jupiter."
HALF_SUPPORTED = (3, 11)


def dataset() -> list[Case]:
    """26 cases: 21 grounded answers (facts 0-20), 4 unanswerable questions and 1 answerable
    question that the system refused (the five refusals)."""
    cases = [
        Case(case_id=f"fact-{i:02d}", question=f"What does the {i}th setting default to?")
        for i in range(len(FACTS))
    ]
    cases += [
        Case(case_id=f"none-{i}", question=f"Does ragmeter run on platform {i}?", answerable=False)
        for i in range(4)
    ]
    cases.append(Case(case_id="missed", question="What does the fallback setting default to?"))
    return cases


def system(case: Case) -> Response:
    """The RAG system under test: BM25-like top-2 chunks; the five refusals in words only."""
    if not case.case_id.startswith("fact-"):
        chunks = [RetrievedChunk(id=f"k{j}", text=FACTS[j]) for j in (0, 1)]
        return Response(answer=REFUSAL, retrieved=chunks)
    i = int(case.case_id.removeprefix("fact-"))
    chunks = [RetrievedChunk(id=f"k{i}", text=FACTS[i]), RetrievedChunk(id="k-x", text=FACTS[0])]
    answer = FACTS[i] + (f" {FABRICATION}" if i in HALF_SUPPORTED else "")
    return Response(answer=answer, retrieved=chunks)


def score(
    answer: str, settings: MetricSettings | None = None, **fields: object
) -> dict[str, Score]:
    metrics = grounding_metrics(settings or MetricSettings(grounding_model="lexical"))
    case = Case(case_id="c", question="What does the retry setting default to?")
    response = Response(answer=answer, retrieved=[RetrievedChunk(id="k", text=FACTS[2])], **fields)
    result = CaseResult(case_id="c", status="ok", response=response)
    return {m.name: score_case(m, case, result) for m in metrics}


def test_the_refusal_is_read_as_one_by_the_abstention_family() -> None:
    assert detect_abstention(Response(answer=REFUSAL)) == (True, "phrase: could not find")
    assert refusal_rule(Response(answer=REFUSAL)) == "phrase: could not find"
    assert refusal_rule(Response(answer=FACTS[2])) is None
    with pytest.raises(SkipScore, match=r"^the response abstained \(phrase: could not find\)$"):
        skip_refusal(Response(answer=REFUSAL))


def test_five_refusals_in_words_skip_the_claim_metrics_and_the_run_passes(
    tmp_path: Path,
) -> None:
    config = EvalConfig(
        store=str(tmp_path / "r.db"),
        output_dir=str(tmp_path / "out"),
        progress=False,
        metrics=["grounding", "abstention"],
        grounding_model="lexical",
        targets=["claim_support_rate > 0.85"],
    )  # type: ignore[call-arg]
    target = PythonTarget(TargetConfig(type="python"), function=system)
    outcome = evaluate(config, cases=dataset(), target=target)
    scores = {(s.metric, s.case_id): s for s in outcome.scores}
    refused = [f"none-{i}" for i in range(4)] + ["missed"]
    for case_id in refused:
        for name in GROUNDING:
            s = scores[(name, case_id)]
            assert (s.status, s.value) == ("skipped", None), (name, case_id)
            assert s.reason == "the response abstained (phrase: could not find)"
        # the abstention family reads the same five as refusals, by the same rule
        assert scores[("dont_know_rate", case_id)].details["class"] == "DON'T KNOW"
        assert scores[("unanswerable_accuracy", case_id)].details["detected_by"] == (
            "phrase: could not find"
        )
    # the 21 grounded answers by hand: 19 with every claim supported, 2 with 1 of 2
    per_case = {f"fact-{i:02d}": 0.5 if i in HALF_SUPPORTED else 1.0 for i in range(21)}
    for case_id, expected in per_case.items():
        assert scores[("claim_support_rate", case_id)].value == expected, case_id
        assert scores[("unsupported_claim_count", case_id)].value == (expected < 1)
    run = outcome.record.scorecard
    assert run is not None
    support = run.get("claim_support_rate")
    assert support is not None
    assert support.value == pytest.approx(20 / 21)  # (19 * 1.0 + 2 * 0.5) / 21 = 0.952
    assert (support.n_scored, support.n_skipped, support.n_failed) == (21, 5, 0)
    unsupported = run.get("unsupported_claim_count")
    assert unsupported is not None and unsupported.value == pytest.approx(2 / 21)
    [verdict] = outcome.record.goals
    assert (verdict.metric, verdict.status) == ("claim_support_rate", "pass")
    assert verdict.value == pytest.approx(20 / 21)
    # before: the five refusals read as 0.0 each, (19 + 1 + 5 * 0) / 26 = 0.769 < 0.85: fail
    assert (19 + 1) / 26 < 0.85


@pytest.mark.parametrize(
    ("answer", "fields", "rule"),
    [
        (REFUSAL, {}, "phrase: could not find"),
        ("The documents do not say; not enough information.", {}, "phrase: not enough information"),
        ("N/A", {}, "short non-answer: n/a"),
        ("", {}, "empty answer"),
        (FACTS[2], {"abstained": True}, "field"),  # the flag wins over the text
    ],
)
def test_every_rule_skips_every_grounding_metric_and_is_named(
    answer: str, fields: dict[str, object], rule: str
) -> None:
    scores = score(answer, **fields)
    for name in GROUNDING:
        assert scores[name].status == "skipped"
        assert scores[name].reason == f"the response abstained ({rule})"


def test_abstained_false_is_graded_whatever_the_text() -> None:
    # the flag wins: a target that says it answered has its claims graded, refusal words or not
    scores = score(REFUSAL, abstained=False)
    assert scores["claim_support_rate"].status == "ok"
    assert scores["claim_support_rate"].value == 0.0  # "this in the documentation." is not there


def test_the_configured_phrases_decide_as_in_the_abstention_family() -> None:
    settings = MetricSettings(grounding_model="lexical", abstention_phrases=("keine angabe",))
    scores = score("Keine Angabe in den Unterlagen.", settings)
    assert scores["claim_support_rate"].reason == "the response abstained (phrase: keine angabe)"
    # the configured list replaces the default one: "could not find" is no refusal there
    assert detect_abstention(Response(answer=REFUSAL), settings.abstention_phrases)[0] is False
    assert score(REFUSAL, settings)["claim_support_rate"].status == "ok"


def test_a_grounded_answer_is_still_graded() -> None:
    scores = score(FACTS[2])
    assert scores["claim_support_rate"].value == 1.0
    assert scores["numeric_fabrication_count"].value == 0.0


# found by a new user: a service that answers by copying a passage of ragmeter's own docs,
# which say "cannot answer" and "could not find" further on, read as refusals
COPIED_PASSAGE = (
    "Each metric is a small declaration: name, group, direction, how its per-case values "
    "aggregate and the inputs it requires. For every case it gives a score with one of three "
    "statuses. A metric that cannot answer for a case is skipped with its reason, and one "
    "that could not find its inputs fails."
)


def test_a_phrase_later_in_a_long_answer_is_not_a_refusal() -> None:
    assert len(COPIED_PASSAGE.split()) > 40
    abstained, how = detect_abstention(Response(answer=COPIED_PASSAGE))
    assert abstained is False
    assert how == (
        "no abstention phrase in the first sentence of a long answer ('cannot answer' later)"
    )
    assert refusal_rule(Response(answer=COPIED_PASSAGE)) is None
    # a long answer that opens with a refusal is one
    opening = f"{REFUSAL} {COPIED_PASSAGE}"
    assert detect_abstention(Response(answer=opening)) == (True, "phrase: could not find")
    # a short answer is read whole: a refusal after a courtesy is still one
    polite = f"Thank you for your question. Unfortunately, {REFUSAL[0].lower()}{REFUSAL[1:]}"
    assert detect_abstention(Response(answer=polite)) == (True, "phrase: could not find")


words = st.lists(
    st.sampled_from(["i", "could", "not", "find", "sure", "the", "leave", "is", "25", "days."]),
    max_size=40,
)


@given(words)
def test_an_answer_of_40_words_or_fewer_is_read_whole(answer_words: list[str]) -> None:
    answer = " ".join(answer_words)
    anywhere = any(phrase_found(p, fold(answer)) for p in DEFAULT_PHRASES)
    abstained, how = detect_abstention(Response(answer=answer))
    assert abstained == (anywhere or how.startswith(("empty answer", "short non-answer")))

"""The per-case sharing of the offline metrics (issue 18, item 5) gives the plain results: the
token F1 intersection, the one-pattern abstention pre-check, the last-response memos of the
citation and abstention families, the retrieval memos and the shared details dicts. Scoring
the cases in any order, with metrics built afresh or reused, gives the same scores."""

from __future__ import annotations

import random
import re
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.metrics import MetricSettings, resolve_metrics
from ragmeter.metrics.abstention import DEFAULT_PHRASES, detect_abstention
from ragmeter.metrics.base import score_response
from ragmeter.metrics.lexical import _common_tokens, keyword_coverage, normalize_answer, token_f1
from ragmeter.metrics.shared import SharedDetails
from ragmeter.metrics.textmatch import fold
from ragmeter.models import Case, Response, Score

FAMILIES = ["retrieval", "lexical", "assertions", "citation", "abstention", "injection", "trec"]
ANSWERS = [
    "Employees get 25 days of paid leave per year [1].",
    "I don't know.",
    "N/A",
    "",
    "Remote work is allowed [doc-b]. Sources: handbook.md",
    "It was previously 20 days; however it is now 25 days [1][2].",
    "Not enough information in the provided documents.",
    "piano data only",
]


def make_pairs(count: int, seed: int = 3) -> list[tuple[Case, Response]]:
    rng = random.Random(seed)
    pairs = []
    for i in range(count):
        level = rng.choice(["chunk_id", "doc_id"])
        doc = rng.choice(["doc-a", "doc-b"])
        case = Case.model_validate(
            {
                "case_id": f"c{i}",
                "question": f"How many days? {i}",
                "reference_answer": rng.choice(["25 days of paid leave", "Remote work, Yes"]),
                "answerable": rng.random() < 0.7,
                "gold_passages": [{level: doc if level == "doc_id" else f"{doc}#0"}],
                "attack_label": rng.choice([None, True, False]),
                "required_support_groups": [
                    {"passages": [{"doc_id": d}]} for d in rng.sample(["doc-a", "doc-c"], 2)
                ][: rng.randint(0, 2)],
            }
        )
        reply: dict[str, Any] = {
            "answer": rng.choice(ANSWERS),
            "retrieved": [
                {"id": f"{d}#0", "doc_id": d, "rank": r + 1, "text": "Employees get 25 days."}
                for r, d in enumerate(rng.sample(["doc-a", "doc-b", "doc-c"], 2))
            ],
            "guardrail_scores": {"injection": rng.random()},
        }
        if rng.random() < 0.5:
            reply["citations"] = [{"chunk_id": rng.choice(["doc-a#0", "doc-b#0", "x#1"])}]
        if rng.random() < 0.5:
            reply["abstained"] = rng.random() < 0.3
        response = Response.model_validate(reply)
        response.reported = sorted(reply)
        pairs.append((case, response))
    return pairs


def as_tuple(score: Score) -> tuple[Any, ...]:
    return (score.case_id, score.metric, score.value, score.status, score.reason, score.details)


def test_any_order_and_fresh_metrics_give_the_same_scores() -> None:
    pairs = make_pairs(60)
    metrics = resolve_metrics(FAMILIES, MetricSettings())
    in_order = {
        (case.case_id, metric.name): as_tuple(score_response(metric, case, response, {}))
        for case, response in pairs
        for metric in metrics
    }
    # metric by metric (every memo misses), then at random (interleaved cases)
    by_metric = {
        (case.case_id, metric.name): as_tuple(score_response(metric, case, response))
        for metric in metrics
        for case, response in pairs
    }
    jobs = [(pair, index) for pair in pairs for index in range(len(metrics))]
    random.Random(5).shuffle(jobs)
    fresh = resolve_metrics(FAMILIES, MetricSettings())
    shuffled = {
        (case.case_id, fresh[index].name): as_tuple(score_response(fresh[index], case, response))
        for (case, response), index in jobs
    }
    assert by_metric == in_order
    assert shuffled == in_order


def test_shared_details_are_equal_to_fresh_ones_and_never_mixed() -> None:
    pairs = make_pairs(40)
    metrics = resolve_metrics(FAMILIES, MetricSettings())
    scores = [score_response(m, case, response) for case, response in pairs for m in metrics]
    by_object: dict[int, dict[str, Any]] = {}
    for score in scores:
        first = by_object.setdefault(id(score.details), dict(score.details))
        assert score.details == first  # a shared dict holds one content only
    assert len(by_object) < sum(bool(s.details) for s in scores)


def test_shared_details_key_types_and_limit() -> None:
    shared = SharedDetails(limit=2)
    one = shared.get(("a", True), lambda: {"a": True})
    assert shared.get(("a", True), lambda: {"a": False}) is one
    assert shared.get(("b",), lambda: {"b": 1}) == {"b": 1}
    past = shared.get(("c",), lambda: {"c": 1})
    assert past == {"c": 1} and shared.get(("c",), lambda: {"c": 1}) is not past


tokens = st.lists(st.sampled_from(["a", "b", "c", "days", "25", "leave"]), max_size=12)


@settings(deadline=None)
@given(tokens, tokens)
def test_common_tokens_is_the_counter_intersection(left: list[str], right: list[str]) -> None:
    assert _common_tokens(left, right) == sum((Counter(left) & Counter(right)).values())


def counter_f1(prediction: str, reference: str) -> float:
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


words = st.lists(st.sampled_from(["The", "a", "days", "25", "leave,", "Leave", "x"]), max_size=9)


@settings(deadline=None)
@given(words, words)
def test_token_f1_equals_the_counter_computation(
    prediction: list[str], reference: list[str]
) -> None:
    answer, expected = " ".join(prediction), " ".join(reference)
    assert token_f1(answer, expected) == counter_f1(answer, expected)


def test_keyword_coverage_returns_a_fresh_missing_list() -> None:
    first = keyword_coverage("nothing", "Employees get Annual Leave")
    assert first is not None
    first[1].append("changed")
    again = keyword_coverage("nothing", "Employees get Annual Leave")
    assert again is not None and "changed" not in again[1]


answers = st.one_of(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz '/.", max_size=60),
    st.sampled_from([*ANSWERS, "no data", "piano data", "I do not know the answer", "None."]),
)
phrase_lists = st.sampled_from([(), ("no data",), ("piano", "i don't know"), ("",)])


@settings(deadline=None)
@given(answers, phrase_lists)
def test_abstention_pre_check_gives_the_first_phrase_of_the_list(
    answer: str, phrases: tuple[str, ...]
) -> None:
    response = Response(answer=answer)
    folded = fold(answer)
    expected: tuple[bool, str] | None = None
    if not folded:
        expected = (True, "empty answer")
    else:
        for phrase in phrases or DEFAULT_PHRASES:
            if re.search(rf"(?<!\w){re.escape(fold(phrase))}", folded):
                expected = (True, f"phrase: {phrase}")
                break
    found = detect_abstention(response, phrases)
    if expected is not None:
        assert found == expected
    else:
        assert not found[1].startswith("phrase")

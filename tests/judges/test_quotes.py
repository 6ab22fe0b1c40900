"""Judges that must quote (``ragmeter.judges.quotes``): a supported verdict names the passages'
words that support it, and a quote that is not in the passages overturns the verdict, the
judge's own verdict and quote kept beside it and counted in the run."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter import EvalConfig, evaluate
from ragmeter.judges.openai_compat import OpenAICompatJudge
from ragmeter.judges.quotes import QUOTE_NOT_FOUND, quote_found
from ragmeter.judges.session import JudgeSession
from ragmeter.judges.verdicts import Item, faithfulness, groundedness
from tests.judges.servers import Reply, completion, smart_judge

PASSAGES = [
    "Full-time employees get 27 days of paid vacation per year.",
    "Remote work is allowed two days a week; the office opens at 9am.",
]


@pytest.mark.parametrize(
    "quote",
    [
        "Full-time employees get 27 days of paid vacation per year.",
        "27 days of paid vacation",
        "FULL-TIME EMPLOYEES GET 27 DAYS",  # case
        "  remote work   is allowed\ntwo days a week ",  # white space
        "\u201cRemote work is allowed two days a week\u201d",  # curly quotes around it
        "Remote work is allowed ... the office opens at 9am",  # elided, one passage
        "Remote work is allowed \u2026 opens at 9am",
        "the office opens at 9am.",
    ],
)
def test_a_quote_in_one_passage_is_found(quote: str) -> None:
    assert quote_found(quote, PASSAGES)


@pytest.mark.parametrize(
    "quote",
    [
        "",
        "the",  # no content word
        "... ...",
        "Employees get 30 days of paid vacation",  # a changed number
        "employees may work remotely two days a week",  # a paraphrase
        "27 days of paid vacation ... the office opens at 9am",  # fragments in two passages
        "paid vacation per year for everyone",  # more than the passage says
    ],
)
def test_a_quote_not_in_the_passages_is_not_found(quote: str) -> None:
    assert not quote_found(quote, PASSAGES)


def test_the_escaping_the_prompt_used_is_read_back() -> None:
    passages = ["Profit & loss: margins < 5% in Q3."]
    assert quote_found("Profit &amp; loss: margins &lt; 5% in Q3", passages)
    assert quote_found("Profit & loss", passages)


WORDS = st.sampled_from(["vacation", "days", "27", "remote", "office", "policy", "the", "of"])


@given(st.lists(WORDS, min_size=3, max_size=12), st.integers(0, 20), st.integers(1, 8))
def test_every_span_of_a_passage_with_a_content_word_is_found(
    words: list[str], start: int, length: int
) -> None:
    passage = " ".join(words)
    span = " ".join(words[start : start + length])
    if not span or span.split() == ["the"] or set(span.split()) <= {"the", "of"}:
        assert not quote_found(span, [passage])
        return
    assert quote_found(span, [passage])
    assert quote_found(span.upper(), [passage])
    assert not quote_found(span + " unicorn", [passage])


def _first_context(user: str) -> str:
    found = re.search(r'<context index="1">\n(.*?)\n</context>', user, re.S)
    return found.group(1) if found else ""


def fabricating_judge(body: dict[str, Any]) -> Reply:
    """Says every claim is supported and quotes words no passage holds."""
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    n_claims = len(re.findall(r'<claim index="\d+">', user))
    fabricated = "employees receive unlimited paid leave"
    if "check claims" in system:
        verdicts = [
            {"index": i, "verdict": 1, "quote": fabricated, "reason": "stated"}
            for i in range(1, n_claims + 1)
        ]
        return completion(json.dumps({"verdicts": verdicts}))
    if "grounded in retrieved context" in system:
        supported = [{"claim": "Leave is unlimited.", "quote": fabricated}]
        return completion(json.dumps({"supported_claims": supported, "unsupported_claims": [],
                                      "score": 5}))  # fmt: skip
    return smart_judge(body)


def quoting_judge(body: dict[str, Any]) -> Reply:
    """Says every claim is supported and quotes the first context word for word."""
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    n_claims = len(re.findall(r'<claim index="\d+">', user))
    quote = _first_context(user)
    if "check claims" in system:
        verdicts = [
            {"index": i, "verdict": 1, "quote": quote, "reason": "stated"}
            for i in range(1, n_claims + 1)
        ]
        return completion(json.dumps({"verdicts": verdicts}))
    if "grounded in retrieved context" in system:
        supported = [{"claim": "27 days of vacation.", "quote": quote}]
        return completion(json.dumps({"supported_claims": supported, "unsupported_claims": [],
                                      "score": 5}))  # fmt: skip
    return smart_judge(body)


ITEM = Item(
    case_id="c1", question="How much vacation?", answer="27 days of paid vacation.",
    reference=None, contexts=PASSAGES, citations=["context 1"],
)  # fmt: skip


def _judge(url: str, task: Any) -> dict[str, tuple[float, dict[str, Any]]]:
    async def run() -> dict[str, tuple[float, dict[str, Any]]]:
        session = JudgeSession(OpenAICompatJudge(f"{url}/v1", "m", api_key_env=None))
        try:
            result: dict[str, tuple[float, dict[str, Any]]] = await task(session, ITEM)
            return result
        finally:
            await session.judge.aclose()

    return asyncio.run(run())


def test_a_made_up_quote_overturns_a_supported_verdict(judge_servers: Any) -> None:
    server = judge_servers(fabricating_judge)
    values = _judge(server.url, faithfulness)
    value, details = values["faithfulness"]
    assert value == 0.0  # smart_judge's two claims, both "supported" with a made-up quote
    for row in details["claims"]:
        assert row["supported"] is False and row["reason"] == QUOTE_NOT_FOUND
        assert row["judge_verdict"] == 1 and row["judge_reason"] == "stated"
        assert row["quote"] == "employees receive unlimited paid leave"
    assert details["overturned"] == 2 and details["quotes_checked"] is True
    assert values["faithfulness_overturned"][0] == 2.0
    # the prompt asked for the quote
    assert '"quote"' in server.requests[-1]["messages"][1]["content"]


def test_a_true_quote_keeps_the_verdict(judge_servers: Any) -> None:
    server = judge_servers(quoting_judge)
    values = _judge(server.url, faithfulness)
    value, details = values["faithfulness"]
    assert value == 1.0 and details["overturned"] == 0
    assert all(
        row["reason"] == "stated" and "judge_verdict" not in row for row in details["claims"]
    )
    assert values["faithfulness_overturned"][0] == 0.0


def test_groundedness_moves_a_claim_whose_quote_is_not_found(judge_servers: Any) -> None:
    made_up = _judge(judge_servers(fabricating_judge).url, groundedness)
    score, details = made_up["groundedness"]
    assert score == 2.0  # no supported claim left: at most 2, though the judge said 5
    assert details["judge_score"] == 5 and details["supported_claims"] == []
    assert details["unsupported_claims"] == ["Leave is unlimited."]
    assert details["overturned"][0]["reason"] == QUOTE_NOT_FOUND
    assert made_up["groundedness_overturned"][0] == 1.0
    quoted = _judge(judge_servers(quoting_judge).url, groundedness)
    assert quoted["groundedness"][0] == 5.0 and quoted["groundedness_overturned"][0] == 0.0


def test_the_run_counts_the_overturned_verdicts(judge_servers: Any, tmp_path: Path) -> None:
    server = judge_servers(fabricating_judge)
    outcome = evaluate(
        EvalConfig(
            store=str(tmp_path / "r.db"), output_dir=str(tmp_path / "o"), progress=False,
            samples=3, seed=0, metrics=["lexical"], judge=f"{server.url}/v1#m",
            judge_tasks=["faithfulness"],
        )
    )  # fmt: skip
    scorecard = outcome.record.scorecard
    assert scorecard is not None
    overturned, faithful = scorecard.get("faithfulness_overturned"), scorecard.get("faithfulness")
    assert overturned is not None and faithful is not None
    judged = faithful.n_scored
    # two claims a judged answer, both overturned: the run's total is the sum over its cases
    assert judged > 0 and overturned.aggregation == "sum" and overturned.value == 2.0 * judged
    assert faithful.value == 0.0

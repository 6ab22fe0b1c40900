"""Lone surrogates from a target or a judge (a JSON escape like ``\\ud800``, or a Python str that
holds one): valid JSON or a valid str, but text no UTF-8 writer accepts. They are replaced by
U+FFFD where the text enters ragmeter and counted, so the run completes and every view shows
the case (issue 30; before, the store's write failed and the run stayed ``running``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter.judges.base import JudgeError, JudgeReply
from ragmeter.judges.openai_compat import OpenAICompatJudge
from ragmeter.models import Response
from ragmeter.targets.python import to_response
from ragmeter.text import replace_lone_surrogates, valid_text

SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
TEXT = st.text(st.one_of(st.characters(codec="utf-8"), SURROGATES), max_size=20)
JSON_LIKE = st.recursive(
    st.one_of(TEXT, st.integers(), st.none(), st.booleans()),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)


def surrogates_in(value: Any) -> int:
    if isinstance(value, str):
        return sum(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, dict):
        return sum(surrogates_in(k) + surrogates_in(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(surrogates_in(item) for item in value)
    return 0


def replaced_by_hand(value: Any) -> Any:
    """The expected result, character by character."""
    if isinstance(value, str):
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
    if isinstance(value, dict):
        return {replaced_by_hand(k): replaced_by_hand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [replaced_by_hand(item) for item in value]
    return value


@given(JSON_LIKE)
def test_every_lone_surrogate_is_replaced_and_counted(value: Any) -> None:
    repaired, count = replace_lone_surrogates(value)
    assert count == surrogates_in(value)
    assert repaired == replaced_by_hand(value)
    json.dumps(repaired, ensure_ascii=False).encode("utf-8")  # what the store and reports do
    if count == 0:
        assert repaired is value  # nothing copied when there is nothing to replace


def test_a_replaced_text_keeps_every_other_character() -> None:
    assert valid_text("25 days \ud800 and \udcff.") == "25 days \ufffd and \ufffd."
    assert valid_text("an emoji \U0001f600 stays") == "an emoji \U0001f600 stays"
    assert replace_lone_surrogates({"k\udc80": ["a", "b\ud800"]}) == (
        {"k\ufffd": ["a", "b\ufffd"]},
        2,
    )


def test_a_reply_is_repaired_and_the_count_is_ragmeters_own() -> None:
    response = Response.from_target(
        {
            "answer": "25 days \ud800",
            "retrieved": [{"id": "c\udcff", "text": "x \ud800 y"}],
            "citations": [{"chunk_id": "c\udcff", "quote": "q"}],
            "text_repairs": 99,  # a target cannot set ragmeter's count
        }
    )
    assert response.answer == "25 days \ufffd"
    assert response.retrieved[0].id == "c\ufffd" and response.citations[0].chunk_id == "c\ufffd"
    assert response.text_repairs == 4
    response.model_dump_json()  # writable
    assert Response.from_target({"answer": "fine", "text_repairs": 3}).text_repairs == 0
    # a recorded reply (a replay of ragmeter's own export) keeps what ragmeter counted
    assert Response.from_target({"answer": "x", "text_repairs": 3}, recorded=True).text_repairs == 3


def test_a_python_target_reply_of_every_kind_is_repaired() -> None:
    assert to_response("bad \ud800").answer == "bad \ufffd"
    assert to_response("bad \ud800").text_repairs == 1
    built = Response.model_construct(answer="built \udcff", retrieved=[], citations=[])
    assert to_response(built).answer == "built \ufffd"
    plain = to_response({"answer": "ok", "retrieved": [{"id": "a", "text": "t \ud800"}]})
    assert plain.retrieved[0].text == "t \ufffd"
    json.dumps(plain.raw, ensure_ascii=False).encode("utf-8")  # the raw reply kept is writable


def test_a_judge_reply_and_error_are_repaired() -> None:
    content = '{"verdict": "yes \\ud800", "reason": "r"}'
    body = {"choices": [{"message": {"content": content}, "finish_reason": "stop"}]}
    raw = json.dumps(body).replace("yes \\\\ud800", "yes \\ud800")
    reply = httpx.Response(200, content=raw.encode(), request=httpx.Request("POST", "http://x"))
    parsed = OpenAICompatJudge("http://127.0.0.1:9/v1", "m", key_required=False)._parse(
        reply, 1.0, 1
    )
    assert parsed.text == '{"verdict": "yes \ufffd", "reason": "r"}'
    assert parsed.parsed == {"verdict": "yes \ufffd", "reason": "r"}
    json.dumps(parsed.raw, ensure_ascii=False).encode("utf-8")
    direct = JudgeReply(text='{"a": "\\udcff"}', parsed={"a": "\udcff"}, prompt_tokens=None,
                        completion_tokens=None, latency_ms=0.0, finish_reason="stop",
                        refusal="no \ud800")  # fmt: skip
    assert direct.parsed == {"a": "\ufffd"} and direct.refusal == "no \ufffd"
    error = JudgeError("http_5xx", "upstream \ud800", raw="body \udcff")
    assert error.message == "upstream \ufffd" and error.raw == "body \ufffd"


TARGET = """
def answer(question: str) -> dict:
    return {"answer": "25 days \\ud800", "retrieved": [{"id": "c1", "text": "x \\udcff"}]}

def fails(question: str) -> dict:
    raise RuntimeError("bad byte \\udcff")
"""


@pytest.mark.parametrize(
    ("function", "status", "shown"),
    [
        ("answer", "ok", "1 case(s) of 1"),
        ("fails", "error", "exception:RuntimeError: bad byte \ufffd"),
    ],
)
def test_ragmeter_eval_against_a_target_returning_a_lone_surrogate_completes(
    tmp_path: Path, function: str, status: str, shown: str
) -> None:
    (tmp_path / "surrogates.py").write_text(TARGET, encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(
        json.dumps({"id": "a", "question": "How many days?", "reference_answer": "25 days"}) + "\n",
        encoding="utf-8",
    )
    common = ["--store", str(tmp_path / "runs.db")]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ragmeter", *args, *common],
            capture_output=True, text=True, timeout=300, cwd=tmp_path,
        )  # fmt: skip

    done = cli(
        "eval", "-d", "cases.jsonl", "--target", f"surrogates.py:{function}",
        "--metrics", "lexical", "--no-progress", "--output-dir", "runs",
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == (0 if status == "ok" else 3), done.stderr
    run_id = next((tmp_path / "runs").glob("*.json")).name.split("_")[0]
    details = cli("show", run_id, "--details")
    assert details.returncode == 0 and "Traceback" not in details.stderr, details.stderr
    assert shown in details.stdout
    cases = json.loads(cli("show", run_id, "--details", "--json").stdout)
    assert [case["status"] for case in cases] == [status]
    if status == "ok":
        assert cases[0]["answer"] == "25 days \ufffd" and cases[0]["text_repairs"] == 2
        assert "lone surrogate(s) in the reply's text replaced by U+FFFD" in details.stdout
    resumed = cli("eval", "--resume", run_id)
    assert resumed.returncode == 2 and "already completed" in resumed.stderr, resumed.stderr

"""Judge prompts fitted to a judge's context window, the json_schema rejection remembered for
the run, context-length replies typed, and the local judge's automatic n_ctx and server
clean-up (no model: scripted servers on 127.0.0.1, a synthetic GGUF header, a sleeping child)."""

from __future__ import annotations

import asyncio
import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragmeter.judges import local
from ragmeter.judges.base import JudgeError, JudgeReply, Message
from ragmeter.judges.fitting import GAP, select_windows, split_windows
from ragmeter.judges.openai_compat import OpenAICompatJudge
from ragmeter.judges.schemas import Groundedness, Relevancy
from ragmeter.judges.session import JudgeFailure, JudgeSession
from tests.judges.servers import Reply, completion

FILLER = "Quarterly reports list office supplies, parking rules and cafeteria menus. " * 20
RELEVANT = "Employees accrue 27 days of paid vacation per calendar year at Quillmark Labs."


class WindowJudge:
    """A judge with a context window that counts one token per word and answers groundedness;
    it records the prompts it was sent."""

    model = "fake:window"
    params: dict[str, Any] = {"temperature": 0}

    def __init__(self, window: int) -> None:
        self.context_window = window
        self.sent: list[list[Message]] = []

    async def count_tokens(self, messages: list[Message]) -> int:
        return sum(len(m["content"].split()) for m in messages)

    async def complete(
        self, messages: list[Message], schema: dict[str, Any] | None, max_tokens: int
    ) -> JudgeReply:
        self.sent.append(messages)
        text = '{"supported_claims": ["27 days"], "unsupported_claims": [], "score": 4}'
        return JudgeReply(text, json.loads(text), 10, 10, 1.0, "stop")

    async def aclose(self) -> None:
        pass


def ask_grounded(judge: WindowJudge, contexts: list[str], answer: str) -> Any:
    session = JudgeSession(judge, None)
    values: dict[str, str | list[str]] = {
        "answer": answer,
        "contexts": contexts,
        "citations": "none reported",
    }
    return asyncio.run(session.ask("groundedness.v2", values, Groundedness, max_tokens=100))


def test_windows_keep_the_relevant_stretch_and_every_context_index() -> None:
    long = f"{FILLER} {RELEVANT} {FILLER}"
    fit = select_windows([long, FILLER], "How many vacation days accrue per year?", 700)
    assert fit.trimmed and fit.total == len(split_windows(long)) + len(split_windows(FILLER))
    assert len(fit.contexts) == 2  # each context keeps its place
    assert "27 days of paid vacation" in fit.contexts[0]
    assert fit.contexts[0].startswith(GAP) and fit.contexts[1] == GAP
    assert sum(len(c) for c in fit.contexts) < len(long)


def test_prompt_trimmed_to_the_window_and_said_in_the_verdict() -> None:
    judge = WindowJudge(window=600)
    contexts = [f"{FILLER} {RELEVANT} {FILLER}", FILLER * 2]
    verdict = ask_grounded(judge, contexts, "Employees accrue 27 paid vacation days a year.")
    [sent] = judge.sent
    assert sum(len(m["content"].split()) for m in sent) <= 600 - 100 - 48
    assert "27 days of paid vacation" in sent[1]["content"]
    assert sent[1]["content"].count('<context index="') == 2
    assert verdict.evidence is not None
    assert verdict.evidence.startswith("evidence trimmed to fit 600 tokens: ")
    assert verdict.evidence.endswith("windows kept")


def test_prompt_that_fits_is_sent_whole() -> None:
    judge = WindowJudge(window=4000)
    verdict = ask_grounded(judge, [RELEVANT], "27 days.")
    assert verdict.evidence is None
    assert RELEVANT in judge.sent[0][1]["content"]


def test_prompt_too_long_without_evidence_is_not_sent() -> None:
    judge = WindowJudge(window=300)
    with pytest.raises(JudgeFailure) as caught:
        ask_grounded(judge, [FILLER], "word " * 400)
    assert caught.value.error_type == "too_long" and judge.sent == []


def relevancy_reply() -> Reply:
    return completion('{"reasoning": "x", "score": 1.0}')


def test_json_schema_rejection_is_remembered_for_the_run(judge_servers: Any) -> None:
    def script(body: dict[str, Any]) -> Reply:
        if body["response_format"]["type"] == "json_schema":
            return 500, {}, {"error": {"message": "response_format type json_schema unsupported"}}
        return relevancy_reply()

    server = judge_servers(script)

    async def batch(n: int) -> None:
        judge = OpenAICompatJudge(f"{server.url}/v1", "remembered", api_key_env=None)
        session = JudgeSession(judge, None, concurrency=4)
        try:
            await asyncio.gather(
                *(
                    session.ask(
                        "answer_relevancy.v1", {"question": "Q?", "answer": f"A{i}"}, Relevancy
                    )
                    for i in range(n)
                )
            )
        finally:
            await judge.aclose()

    asyncio.run(batch(4))  # four calls at once: one probe is rejected, the others wait for it
    kinds = [r["response_format"]["type"] for r in server.requests]
    assert kinds == ["json_schema"] + ["json_object"] * 4
    asyncio.run(batch(3))  # a new judge on the same server (the next batch, pass or case)
    assert [r["response_format"]["type"] for r in server.requests[5:]] == ["json_object"] * 3


def test_context_length_reply_is_typed(judge_servers: Any) -> None:
    message = (
        "This model's maximum context length is 2048 tokens. However, you requested 2600 "
        "tokens (2200 in the messages, 400 in the completion)."
    )
    server = judge_servers(lambda body: (400, {}, {"error": {"message": message}}))
    judge = OpenAICompatJudge(f"{server.url}/v1", "small", api_key_env=None)

    async def go() -> None:
        try:
            await judge.complete([{"role": "user", "content": "hi"}], None, 10)
        finally:
            await judge.aclose()

    with pytest.raises(JudgeError) as caught:
        asyncio.run(go())
    assert caught.value.error_type == "context_length"


def gguf_file(path: Path, **ints: int) -> Path:
    def text(value: str) -> bytes:
        data = value.encode()
        return struct.pack("<Q", len(data)) + data

    kvs = [text("general.architecture") + struct.pack("<I", 8) + text("qwen2")]
    kvs.append(  # an array the reader skips (the tokenizer's are large)
        text("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 3) + struct.pack("<3f", 0, 0, 0)
    )
    for key, value in ints.items():
        kvs.append(text(f"qwen2.{key.replace('__', '.')}") + struct.pack("<II", 4, value))
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs))
    return path


def test_auto_n_ctx_from_training_context_bounded_by_cap_and_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = {"block_count": 24, "embedding_length": 896, "attention__head_count": 14}
    big = gguf_file(
        tmp_path / "big.gguf", context_length=32768, attention__head_count_kv=2, **sizes
    )
    small = gguf_file(tmp_path / "small.gguf", context_length=1024, **sizes)
    assert local.gguf_info(big)["context_length"] == 32768
    monkeypatch.setattr(local, "available_memory", lambda: 64 << 30)
    assert local.auto_n_ctx(big)[0] == local.AUTO_MAX_CTX
    assert local.auto_n_ctx(small)[0] == 1024  # never more than the model was trained on
    # 12288 bytes of KV cache a token: a quarter of 128 MiB holds 2730, kept at 2560
    monkeypatch.setattr(local, "available_memory", lambda: 128 << 20)
    assert local.auto_n_ctx(big) == (2560, "training context 32768, cap 8192, memory for 2560")
    not_gguf = tmp_path / "plain.gguf"
    not_gguf.write_bytes(b"not a model")
    assert local.auto_n_ctx(not_gguf)[0] == local.MIN_AUTO_CTX


def test_stop_servers_ends_every_started_child() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with local._LIVE_LOCK:
        local._LIVE[child.pid] = child
    local.stop_servers(wait_s=5)
    assert child.poll() is not None
    assert child.pid not in local._LIVE

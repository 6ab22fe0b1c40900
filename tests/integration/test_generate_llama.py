"""``ragmeter generate`` end to end with a real local judge: llama.cpp's server on 127.0.0.1
with Qwen2.5-Coder-0.5B-Instruct (the model of test_judge_llama.py, installed by
scripts/setup_llama.py), over the bundled demo corpus.

A 0.5B model writes questions of uneven quality, so this test checks what the pipeline does
with whatever it writes: every kept case has gold passage ids of the corpus and a recorded
validation call that confirmed it, every rejected attempt has a reason, nothing is lost."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from ragmeter.demo import DEMO_CORPUS
from ragmeter.generate.run import (
    DUPLICATE,
    JUDGE_ERROR,
    MALFORMED,
    NOT_CONFIRMED,
    VALIDATION_MALFORMED,
)
from ragmeter.judges.cache import JudgeStore
from ragmeter.models import Case
from ragmeter.targets.reference.chunking import chunk_corpus
from tests.integration.processes import run_bounded

pytestmark = pytest.mark.integration
REASONS = {MALFORMED, DUPLICATE, NOT_CONFIRMED, VALIDATION_MALFORMED, JUDGE_ERROR}
ASKED = 1  # a case costs a generation and a validation call (about 45 s of CPU here)


def test_generate_with_the_local_judge(gguf: Path, tmp_path: Path) -> None:
    out, store = tmp_path / "cases.jsonl", tmp_path / "runs.db"
    # none of the user's settings, but the suite's thread count for the local judge
    # (tests/integration/conftest.py: one thread beside the other workers)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("RAGMETER_") or k == "RAGMETER_LOCAL_THREADS"
    }
    started = time.perf_counter()
    done = run_bounded(
        [
            sys.executable, "-m", "ragmeter", "generate", str(DEMO_CORPUS),
            "--judge", f"local:{gguf}", "-n", str(ASKED), "--attempts", "1", "--concurrency", "1",
            "-o", str(out), "--store", str(store), "--json",
        ],
        1800, env=env, cwd=tmp_path,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    assert done.returncode in (0, 1), done.stderr[-2000:]
    summary = json.loads(done.stdout)
    rejected = [(r["category"], r["reason"], r["detail"]) for r in summary["rejections"]]
    print(f"generate -n {ASKED}, 0.5B judge: {elapsed:.1f}s, kept {summary['kept']}, {rejected}")

    # every attempt is kept or rejected with a reason
    assert summary["stopped"] is None
    for category, count in summary["categories"].items():
        assert count["kept"] + sum(count["rejected"].values()) == count["attempts"], category
        assert count["kept"] <= count["asked"]
    assert sum(c["attempts"] for c in summary["categories"].values()) == ASKED
    for rejection in summary["rejections"]:
        assert rejection["reason"] in REASONS and rejection["detail"].strip()
        assert rejection["chunks"]
    assert summary["judge"]["model"].startswith("local:")
    assert summary["judge"]["cost_usd"] == 0.0

    if summary["kept"] == 0:  # the model's junk was all rejected: no empty file
        assert done.returncode == 1 and not out.exists()
        assert f"no case kept out of {ASKED} asked" in done.stderr
        return
    assert done.returncode == 0 and summary["output"] == str(out)
    if summary["kept"] < ASKED:
        assert f"wrote {summary['kept']} of the {ASKED} cases asked" in done.stderr
    cases = [Case.model_validate_json(line) for line in out.read_text().splitlines()]
    assert len(cases) == summary["kept"]
    chunks = {chunk.chunk_id: chunk for chunk in chunk_corpus(DEMO_CORPUS)}
    judge_store = JudgeStore(store)
    calls = {call["id"]: call for call in judge_store.calls()}
    judge_store.close()
    for case in cases:
        generated = case.metadata["generated"]
        validation = generated["validation"]
        assert validation["calls"], case.case_id  # the second call, recorded
        for call_id in validation["calls"]:
            assert calls[call_id]["prompt_name"] == "validate_case.v1"
            assert calls[call_id]["status"] == "ok"
        for call_id in generated["generation_calls"]:
            assert calls[call_id]["prompt_name"] == f"generate_{generated['category']}.v1"
        assert validation["answerable"] is case.answerable
        if not case.answerable:
            assert case.gold_passages == [] and validation["contexts"]
            continue
        assert case.gold_passages
        for gold in case.gold_passages:
            chunk = chunks[str(gold.chunk_id)]  # a chunk id of the corpus
            assert gold.doc_id == chunk.doc_id
        assert [g.chunk_id for g in case.gold_passages] == validation["contexts"]

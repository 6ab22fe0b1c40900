"""The judged metrics end to end with a real local judge: llama.cpp's server on 127.0.0.1 with
Qwen2.5-Coder-0.5B-Instruct (GGUF from PyPI), installed by scripts/setup_llama.py (the ``gguf``
fixture of conftest.py). A 0.5B model answers unevenly, so these tests check what ragmeter does
with any answer (a verdict in range, a failure with its reason, a recorded call), never which
answer the model gives."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter import judges
from ragmeter.judges.cache import JudgeStore
from ragmeter.judges.estimate import estimate_judging
from ragmeter.judges.templates import load_prompt
from ragmeter.metrics import resolve_metrics
from ragmeter.metrics.base import MetricSettings
from ragmeter.metrics.judged import RAGAS_WEIGHTS
from ragmeter.models import Case, CaseResult, Response, RetrievedChunk, Score
from ragmeter.runner.engine import score_results

pytestmark = pytest.mark.integration
CONTEXT = (
    "Full-time employees of Quillmark Labs accrue 2.25 days of paid vacation per month, "
    "which is 27 days per calendar year. Unused days carry over up to 5 days."
)
OTHER = "The office coffee machine is cleaned every Friday afternoon by the facilities team."
UNANSWERABLE_ONLY = ("judged_abstention_accuracy", "judged_hallucination_rate")


class JudgeHolder:
    """The judge the next scoring in this test uses (passed in MetricSettings, never global)."""

    settings: judges.JudgeSettings | None = None


def use_judge(spec: str | None, **options: Any) -> None:
    JudgeHolder.settings = judges.judge_settings(spec, **options) if spec else None


@pytest.fixture(autouse=True)
def clean_config() -> Iterator[None]:
    use_judge(None)
    yield
    use_judge(None)


def demo_pairs() -> list[tuple[Case, Response]]:
    question = "How many days of paid vacation does a full-time employee accrue per year?"
    reference = "Full-time employees accrue 27 days of paid vacation per calendar year."
    chunks = [RetrievedChunk(id="a", text=CONTEXT), RetrievedChunk(id="b", text=OTHER)]
    # one answer (about 11 judge calls on CPU, the suite's longest test): a refusal read by its
    # phrase makes no judge call for the claim metrics
    # (tests/metrics/grounding/test_refusals.py), and its other calls are those of any answer
    answers = {"right": "A full-time employee accrues 27 days of paid vacation per year."}
    return [
        (
            Case(case_id=name, question=question, reference_answer=reference),
            Response(answer=answer, retrieved=chunks),
        )
        for name, answer in answers.items()
    ]


def run(pairs: list[tuple[Case, Response]]) -> dict[tuple[str, str], Score]:
    metrics = resolve_metrics(["judged"], MetricSettings(judge=JudgeHolder.settings))
    results = [CaseResult(case_id=c.case_id, status="ok", response=r) for c, r in pairs]
    return {
        (s.metric, s.case_id): s for s in score_results([c for c, _ in pairs], results, metrics)
    }


def test_local_judge_end_to_end(
    gguf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # these prompts are short: a 2048-token context holds them and keeps the CPU time down
    # (the automatic choice, 8192 for this model, is tested in tests/judges/test_fitting.py)
    monkeypatch.setenv("RAGMETER_LOCAL_N_CTX", "2048")
    store = tmp_path / "runs.db"
    use_judge(f"local:{gguf}", store=str(store), concurrency=1)
    pairs = demo_pairs()
    started = time.perf_counter()
    first = run(pairs)
    first_s = time.perf_counter() - started

    # whatever the 0.5B model answers, ragmeter gives each score a verdict or a named reason:
    # the unanswerable-only abstention metrics skip every case (all are answerable), the claim
    # metrics skip the refusal (read as one by its phrase, with no judge call), and the RAGAS
    # composite is never skipped here: it has a value when one of its parts does, and fails
    # when none does
    skipped = {key for key, s in first.items() if s.status == "skipped"}
    cases = tuple(case.case_id for case, _ in pairs)
    claim_metrics = (
        "faithfulness", "groundedness", "faithfulness_overturned", "groundedness_overturned"
    )  # fmt: skip
    refusal_skips = {(m, c) for m in claim_metrics for c in cases if c != "right"}
    # the judge's abstention verdict may read the other answer as a refusal too: then its claim
    # metrics skip it, saying the judge decided
    judged_refusals = {
        key
        for key in skipped - refusal_skips
        if key[0] in claim_metrics and "abstained (judge" in (first[key].reason or "")
    }
    unanswerable_only = {(metric, case) for metric in UNANSWERABLE_ONLY for case in cases}
    assert skipped == unanswerable_only | refusal_skips | judged_refusals
    assert all(first[key].reason for key in skipped)
    assert all("abstained (phrase:" in (first[key].reason or "") for key in refusal_skips)
    first = {key: s for key, s in first.items() if key not in skipped}
    for case in cases:
        composite = first[("ragas_score", case)]
        parts_ok = [
            (part, case) in first and first[(part, case)].status == "ok" for part in RAGAS_WEIGHTS
        ]
        assert composite.status == ("ok" if any(parts_ok) else "failed"), composite.reason
    ok = [s for s in first.values() if s.status == "ok"]
    for score in first.values():
        if score.status == "failed":  # a named reason, never a silent value
            assert score.reason and "judge" in score.reason, score.reason
            continue
        assert score.status == "ok"
        assert score.details["judge_model"].startswith("local:")
        assert score.details["judge_model"].endswith(judges_sha(gguf))
        for name, version in score.details["prompt_versions"].items():
            assert load_prompt(name).version == version
    for metric in ("groundedness", "correctness"):
        for case in cases:
            score = first.get((metric, case))  # None: the refusal's groundedness, skipped
            assert score is None or score.status != "ok" or 0 <= (score.value or 0) <= 5
    for (metric, _), score in first.items():
        if score.status == "ok" and metric not in ("groundedness", "correctness"):
            assert 0.0 <= (score.value or 0.0) <= 1.0, metric
    relevancy = first[("answer_relevancy", "right")]
    if relevancy.status == "ok":
        assert relevancy.details["method"] == "question_generation"
        assert len(relevancy.details["generated_questions"]) == 3
    factual = first[("factual_accuracy", "right")]
    if factual.status == "ok":
        assert factual.details["grade"] in "ABCDE"
    grounded = first.get(("groundedness", "right"))  # None: skipped as a judged refusal
    if grounded is not None and grounded.status == "ok":
        assert isinstance(grounded.details["unsupported_claims"], list)

    # every call is recorded: an answered one with its tokens, a failed one with its error
    rows = JudgeStore(store).calls()
    assert rows and all(r["cached"] == 0 for r in rows)
    assert all(r["model"].startswith("local:") for r in rows)
    answered = [r for r in rows if r["status"] == "ok"]
    assert all(r["cost_usd"] == 0.0 for r in answered)
    assert all(r["prompt_tokens"] and r["completion_tokens"] for r in answered)
    assert all(r["finish_reason"] in ("stop", "length") for r in answered)
    assert all(r["error"] for r in rows if r["status"] != "ok")
    requests = len(rows)
    # per case 11 calls (10 when no claim is found; +1 per repair): faithfulness 2, then one
    # each for relevancy, precision, recall, groundedness, correctness, classification, factual
    # accuracy, answer correctness and abstention; each may be retried after a timeout. The
    # refusal (by its phrase, or by the judge's abstention verdict) skips faithfulness and
    # groundedness: 8 calls
    attempts = 1 + judges.judge_settings(f"local:{gguf}").max_retries
    assert 8 * len(pairs) <= requests <= 22 * attempts * len(pairs)

    # the second run asks only what failed the first time: an answered call comes from the
    # cache, and a score built from answered calls alone is the same
    started = time.perf_counter()
    second = {key: s for key, s in run(pairs).items() if key not in skipped}
    second_s = time.perf_counter() - started
    rows = JudgeStore(store).calls()
    assert sum(r["cached"] == 1 for r in rows) == len(answered)
    asked_again = [r for r in rows[requests:] if r["cached"] == 0]
    if len(answered) == requests:
        assert asked_again == []  # zero requests on the second run
        assert {k: (s.status, s.value) for k, s in first.items()} == {
            k: (s.status, s.value) for k, s in second.items()
        }
    for key, score in first.items():
        if score.status == "ok" and key[0] != "ragas_score":
            assert (second[key].status, second[key].value) == ("ok", score.value), key

    estimate = estimate_judging(list(pairs), rows[0]["model"])
    prompt_tokens = sum(r["prompt_tokens"] for r in answered)
    assert estimate.cost_usd == 0.0
    if len(answered) == requests:  # the estimate is of every call, so only then comparable
        assert 0.4 < estimate.prompt_tokens / prompt_tokens < 2.5
    print(
        f"\nlocal judge: {requests} calls in {first_s:.1f} s ({first_s / requests:.2f} s/call), "
        f"cached rerun {second_s:.2f} s; prompt tokens {prompt_tokens} "
        f"(estimate {estimate.prompt_tokens}); ok {len(ok)}/{len(first)}, "
        f"failed calls {requests - len(answered)}; "
        + ", ".join(
            f"{m}[{c}]={s.value}" for (m, c), s in sorted(first.items()) if s.value is not None
        )
    )


def judges_sha(gguf: Path) -> str:
    from ragmeter.judges.local import file_sha256

    return file_sha256(gguf)[:12]


# --- real-size chunks and interruption (issue 29) --------------------------------------------
FACTS = {
    "vacation": (
        "How many days of paid vacation does a full-time employee accrue per year?",
        CONTEXT,
        "A full-time employee accrues 27 days of paid vacation per year.",
    ),
    "parking": (
        "Where do visitors park at the Quillmark Labs office?",
        "Visitors of Quillmark Labs park in the north garage, level 2, with a day pass from "
        "the front desk.",
        "Visitors park in the north garage on level 2.",
    ),
    "laptops": (
        "How often are Quillmark Labs laptops replaced?",
        "Quillmark Labs replaces every employee laptop after three years of use.",
        "Laptops are replaced every three years.",
    ),
}
TOPICS = ("budget review", "release notes", "security training", "travel policy", "hiring plan")


def long_chunk(fact: str, seed: int) -> str:
    """About 1,500 words of handbook-like text with ``fact`` in the middle."""
    sentences = [
        f"Section {seed}.{i} of the handbook covers the {TOPICS[(i + seed) % len(TOPICS)]} "
        f"and asks every team to file its notes in folder {i * 7 + seed} before the end of "
        "the month so the office can review them."
        for i in range(54)
    ]
    sentences.insert(27, fact)
    return " ".join(sentences)


def long_pairs() -> list[tuple[Case, Response]]:
    pairs = []
    for n, (name, (question, fact, answer)) in enumerate(FACTS.items()):
        chunks = [
            RetrievedChunk(id=f"{name}-1", text=long_chunk(fact, n)),
            RetrievedChunk(id=f"{name}-2", text=long_chunk(OTHER, n + 10)),
        ]
        pairs.append(
            (Case(case_id=name, question=question), Response(answer=answer, retrieved=chunks))
        )
    return pairs


def test_local_judge_fits_long_chunks(
    gguf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the context a user had (n_ctx 2048 did not hold two 1,500-word chunks) made smaller, so
    # the evidence is trimmed and the three calls stay short on a 2-core CPU
    monkeypatch.setenv("RAGMETER_LOCAL_N_CTX", "1024")
    pairs = long_pairs()[:2]  # two cases: each reads a 1,024-token prompt on one CPU thread
    assert all(len(c.text.split()) >= 1400 for _, r in pairs for c in r.retrieved)
    use_judge(
        f"local:{gguf}",
        store=str(tmp_path / "runs.db"),
        concurrency=1,
        tasks=("groundedness",),
        timeout_s=300.0,
        max_retries=0,
    )
    started = time.perf_counter()
    scores = {case: s for (metric, case), s in run(pairs).items() if metric == "groundedness"}
    took = time.perf_counter() - started
    assert set(scores) == {case.case_id for case, _ in pairs}
    for score in scores.values():
        # a verdict, or a typed failure that is never the server refusing the prompt's length
        assert score.status in ("ok", "failed"), score.reason
        text = f"{score.reason} {score.details}"
        assert "context length" not in text and "context_length" not in text, text
        if score.status == "ok":
            assert 0 <= (score.value or 0) <= 5
        note = score.details.get("evidence_trimmed", "")
        assert note.startswith("evidence trimmed to fit 1024 tokens: "), score.details
        assert not note.split(": ")[1].startswith("0 of"), note  # some evidence is kept
    rows = JudgeStore(tmp_path / "runs.db").calls()
    assert len(rows) <= 2 * len(pairs)  # one call a case, at most one repair each
    assert all(r["prompt_tokens"] is None or r["prompt_tokens"] < 1024 for r in rows)
    # the windows kept are those about the question and answer: each case's fact is shown
    for case, _ in pairs:
        name, fact = case.case_id, FACTS[case.case_id][1]
        [first] = [r for r in rows if r["case_id"] == name and not r["purpose"].endswith("repair")]
        assert fact.split(",")[0][:40] in first["messages_json"], name
    print(
        f"\nlong chunks: {len(rows)} calls in {took:.1f} s; "
        + ", ".join(f"{c}={s.status}:{s.value} ({s.details.get('evidence_trimmed')})"
                    for c, s in scores.items())
    )  # fmt: skip


def children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError, ValueError):
            found |= {int(p) for p in (task / "children").read_text().split()}
    return found


def llama_child(pid: int) -> int | None:
    for child in children(pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"llama_cpp.server" in command:
            return child
    return None


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie has ended (it waits for its parent to read its status)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_run_leaves_no_local_judge_server(
    gguf: Path, tmp_path: Path, stop: signal.Signals
) -> None:
    # SIGTERM: the run stops its server and is marked interrupted; SIGKILL runs no handler,
    # and the kernel ends the server (PR_SET_PDEATHSIG) when its parent is gone
    pairs = long_pairs()
    (tmp_path / "cases.jsonl").write_text(
        "".join(json.dumps({"id": c.case_id, "question": c.question}) + "\n" for c, _ in pairs)
    )
    (tmp_path / "responses.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "case_id": c.case_id,
                    "response": {
                        "answer": r.answer,
                        "retrieved": [{"id": k.id, "text": k.text} for k in r.retrieved],
                    },
                }
            )
            + "\n"
            for c, r in pairs
        )
    )
    env = {**os.environ, "RAGMETER_LOCAL_N_CTX": "1024", "RAGMETER_JUDGE_TASKS": "groundedness"}
    process = subprocess.Popen(
        [
            sys.executable, "-m", "ragmeter", "eval", "--dataset", "cases.jsonl",
            "--target", "replay:responses.jsonl", "--metrics", "lexical",
            "--judge", f"local:{gguf}", "--judge-timeout", "300", "--store", "runs.db",
            "--output-dir", "out", "--no-progress",
        ],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        server = None
        while server is None and time.monotonic() < deadline and process.poll() is None:
            server = llama_child(process.pid)
            time.sleep(0.2)
        assert server is not None, f"no llama.cpp server child: {process.poll()}"
        time.sleep(1.0)  # the server is loading or judging: the run is in its judging stage
        process.send_signal(stop)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    deadline = time.monotonic() + 20
    while alive(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(server), f"llama.cpp server {server} outlived the run: {err[-2000:]}"
    if stop == signal.SIGKILL:
        assert process.returncode == -signal.SIGKILL
        return
    assert process.returncode == 143, out[-2000:] + err[-2000:]
    with sqlite3.connect(tmp_path / "runs.db") as db:
        statuses = [row[0] for row in db.execute("SELECT status FROM runs")]
    assert statuses == ["interrupted"], err[-2000:]

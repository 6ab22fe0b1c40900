"""The judged metrics end to end with a real local judge: llama.cpp's server on 127.0.0.1 with
Qwen2.5-Coder-0.5B-Instruct (GGUF from PyPI), installed by scripts/setup_llama.py (the ``gguf``
fixture of conftest.py). A 0.5B model answers unevenly, so these tests check what ragmeter does
with any answer (a verdict in range, a failure with its reason, a recorded call), never which
answer the model gives."""

from __future__ import annotations

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
    # two answers (about 11 judge calls each on CPU): one to judge, one refusal
    answers = {
        "right": "A full-time employee accrues 27 days of paid vacation per year.",
        "unknown": "I don't know.",
    }
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


def test_local_judge_end_to_end(gguf: Path, tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    use_judge(f"local:{gguf}", store=str(store), concurrency=1)
    pairs = demo_pairs()
    started = time.perf_counter()
    first = run(pairs)
    first_s = time.perf_counter() - started

    # whatever the 0.5B model answers, ragmeter gives each score a verdict or a named reason:
    # the unanswerable-only abstention metrics skip every case (all are answerable), and the
    # RAGAS composite is never skipped here: it has a value when one of its parts does, and
    # fails when none does
    skipped = {key for key, s in first.items() if s.status == "skipped"}
    cases = tuple(case.case_id for case, _ in pairs)
    assert skipped == {(metric, case) for metric in UNANSWERABLE_ONLY for case in cases}
    assert all(first[key].reason for key in skipped)
    first = {key: s for key, s in first.items() if key not in skipped}
    for case in cases:
        composite = first[("ragas_score", case)]
        parts_ok = [first[(part, case)].status == "ok" for part in RAGAS_WEIGHTS]
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
            score = first[(metric, case)]
            assert score.status != "ok" or 0 <= (score.value or 0) <= 5
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
    grounded = first[("groundedness", "right")]
    if grounded.status == "ok":
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
    # accuracy, answer correctness and abstention; each may be retried after a timeout
    attempts = 1 + judges.judge_settings(f"local:{gguf}").max_retries
    assert 10 * len(pairs) <= requests <= 22 * attempts * len(pairs)

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

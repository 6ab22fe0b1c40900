from __future__ import annotations

import asyncio
from pathlib import Path

from ragmeter.config import EvalConfig, TargetConfig
from ragmeter.models import Case, Response
from ragmeter.runner.engine import sample_cases
from ragmeter.runner.run import evaluate
from ragmeter.targets.python import PythonTarget

CASES = [Case(case_id=f"c{i:02d}", question=f"question {i}") for i in range(30)]


def config(tmp_path: Path, **changes: object) -> EvalConfig:
    return EvalConfig(
        store=str(tmp_path / "r.db"), output_dir=str(tmp_path / "out"), progress=False, **changes
    )  # type: ignore[arg-type]


def test_sampling_is_seeded_and_keeps_dataset_order() -> None:
    first = sample_cases(CASES, 7, seed=3)
    assert [c.case_id for c in first] == [c.case_id for c in sample_cases(CASES, 7, seed=3)]
    assert [c.case_id for c in first] == sorted(c.case_id for c in first)
    assert [c.case_id for c in sample_cases(CASES, 7, seed=4)] != [c.case_id for c in first]
    assert sample_cases(CASES, None, 0) == CASES


def test_samples_are_per_dataset() -> None:
    mixed = [
        Case(case_id=f"{name}-{i}", question="q?", dataset=name)
        for name, count in (("a", 12), ("b", 3), ("c", 9))
        for i in range(count)
    ]
    picked = sample_cases(mixed, 5, seed=1)
    per = {name: [c for c in picked if c.dataset == name] for name in "abc"}
    assert [len(per[name]) for name in "abc"] == [5, 3, 5]  # b has only 3: all of them
    assert picked == [c for c in mixed if c in picked]  # dataset order kept
    # one dataset: the same subset as before datasets were sampled apart
    only_a = [c for c in mixed if c.dataset == "a"]
    assert [c for c in sample_cases(only_a, 5, seed=1)] == per["a"]


def test_concurrency_is_bounded_and_slow_cases_time_out(tmp_path: Path) -> None:
    in_flight = 0
    peak = 0

    async def system(question: str) -> Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            # a slow case would take 300 s; the others are done long before the case timeout
            await asyncio.sleep(300.0 if question.endswith(" 3") else 0.01)
            return Response(answer=question, retrieved=[])
        finally:
            in_flight -= 1

    target = PythonTarget(TargetConfig(type="python"), function=system)
    outcome = evaluate(
        config(tmp_path, concurrency=4, case_timeout_s=1.0, samples=12, seed=1),
        cases=CASES,
        target=target,
    )
    assert peak == 4
    assert outcome.record.question_count == 12
    timed_out = [r for r in outcome.results if r.status == "error"]
    assert [(r.case_id, r.error_type) for r in timed_out] == [
        (c.case_id, "case_timeout") for c in sample_cases(CASES, 12, 1) if c.question.endswith(" 3")
    ]
    assert outcome.record.error_count == len(timed_out)


def test_sync_callable_receiving_the_case(tmp_path: Path) -> None:
    def system(case: Case) -> dict[str, object]:
        if case.case_id == "c01":
            raise ValueError("boom")
        return {"answer": case.case_id, "abstained": False}

    target = PythonTarget(TargetConfig(type="python"), function=system)
    outcome = evaluate(config(tmp_path, samples=3, seed=0), cases=CASES[:3], target=target)
    by_id = {r.case_id: r for r in outcome.results}
    assert by_id["c00"].response is not None and by_id["c00"].response.answer == "c00"
    assert (by_id["c01"].error_type, by_id["c01"].error_message) == ("exception:ValueError", "boom")

"""The Ray executor (``executor: ray``) on a local Ray instance the test starts: 10,000 recorded
cases give the local executor's per-case scores and scorecard exactly, and a Ray run stopped
after a few batches resumes on Ray, asking only the unanswered cases, without duplicates."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.config import EvalConfig, TargetConfig
from ragmeter.runner.engine import RunInterruptedError, RunOutcome
from ragmeter.runner.run import evaluate, evaluate_async

# included in the default run (about a minute on two cores); marked like the other tests that
# start processes
pytestmark = pytest.mark.integration

ray = pytest.importorskip(
    "ray",
    reason="the Ray executor needs Ray: pip install 'ragmeter[ray]' (the ray extra)",
    exc_type=ImportError,
)

CASES = 10_000
METRICS = [
    "retrieval",
    "lexical",
    "assertions",
    "context",
    "citation",
    "abstention",
    "pipeline",
    "performance",
]
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "sigma",
]


def _text(i: int, n: int) -> str:
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(n)) + f" fact{i % 97}."


def _case(i: int) -> dict[str, Any]:
    case: dict[str, Any] = {
        "id": f"q{i:05d}",
        "question": f"What is {WORDS[i % len(WORDS)]} number {i}?",
        "reference_answer": _text(i, 6),
        "gold_passages": [{"chunk_id": f"c{i % 500}", "snippets": [f"fact{i % 97}"]}],
        "gold_facts": [{"fact": f"fact{i % 97}"}],
        "expected_chunks": [f"c{i % 500}"],
        "expected_citations": [f"c{i % 500}"],
        "category": ["policy", "product", "billing"][i % 3],
    }
    if i % 11 == 0:
        case["answerable"] = False
    return case


def _recorded(i: int) -> dict[str, Any]:
    if i % 53 == 0:
        return {"case_id": f"q{i:05d}", "error_type": "http_500", "error_message": "boom"}
    chunks = [
        {"id": f"c{(i + shift) % 500}", "text": _text(i + shift, 12), "score": 1.0 / (1 + shift)}
        for shift in range(i % 4 + 1)
    ]
    answer = "I don't know." if i % 17 == 0 else _text(i, 8 + i % 5) + f" [c{i % 500}]"
    return {
        "case_id": f"q{i:05d}",
        "response": {
            "answer": answer,
            "retrieved": chunks,
            "citations": [{"chunk_id": f"c{i % 500}"}] if i % 3 else [],
            "latency_ms": {"total": 100.0 + i % 250, "retrieval": 20.0 + i % 40},
            "usage": {"prompt_tokens": 300 + i % 90, "completion_tokens": 40 + i % 30},
        },
    }


def _write(folder: Path, count: int) -> tuple[Path, Path]:
    dataset, replay = folder / "cases.jsonl", folder / "responses.jsonl"
    dataset.write_text("".join(json.dumps(_case(i)) + "\n" for i in range(count)))
    replay.write_text("".join(json.dumps(_recorded(i)) + "\n" for i in range(count)))
    return dataset, replay


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _write(tmp_path_factory.mktemp("ray"), CASES)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray instance for the module; the executors find it running and leave it."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        yield
    finally:
        ray.shutdown()


def _config(folder: Path, recorded: tuple[Path, Path], name: str, **changes: Any) -> EvalConfig:
    dataset, replay = recorded
    return EvalConfig(
        datasets=[str(dataset)],
        target=TargetConfig(type="replay", path=str(replay)),
        metrics=METRICS,
        breakdowns=["category"],
        bootstrap_resamples=200,
        store=str(folder / f"{name}.db"),
        output_dir=str(folder / name),
        progress=False,
        **changes,
    )


def _rows(outcome: RunOutcome) -> list[tuple[Any, ...]]:
    return [(s.case_id, s.metric, s.value, s.status, s.reason, s.details) for s in outcome.scores]


def _card(outcome: RunOutcome) -> dict[str, Any]:
    record = outcome.record
    assert record.scorecard is not None
    return {
        "scorecard": record.scorecard.model_dump(),
        "breakdowns": record.breakdowns,
        "weighted": record.weighted_score.model_dump() if record.weighted_score else None,
        "targets": [t.model_dump() for t in record.goals],
        "performance": record.performance.model_dump(),
    }


def _stored(db: Path, run_id: str) -> tuple[int, int, int, int]:
    with sqlite3.connect(db) as connection:
        responses, distinct = connection.execute(
            "SELECT COUNT(*), COUNT(DISTINCT case_id) FROM responses WHERE run_id=?", (run_id,)
        ).fetchone()
        scores, distinct_scores = connection.execute(
            "SELECT COUNT(*), COUNT(DISTINCT case_id || '|' || metric) FROM scores WHERE run_id=?",
            (run_id,),
        ).fetchone()
    return responses, distinct, scores, distinct_scores


def test_the_executor_starts_a_local_ray_and_shuts_it_down(tmp_path: Path) -> None:
    """Without a running Ray (and no ray_address) the executor starts one for the run (here
    with a ":memory:" store, whose scoring runs inside the run's event loop)."""
    assert not ray.is_initialized()
    files = _write(tmp_path, 300)
    config = _config(tmp_path, files, "ray", executor="ray")
    on_ray = evaluate(config.model_copy(update={"store": ":memory:"}))
    assert not ray.is_initialized()
    local = evaluate(_config(tmp_path, files, "local"))
    assert _rows(on_ray) == _rows(local) and _card(on_ray) == _card(local)


@pytest.mark.usefixtures("local_ray")
def test_ray_gives_the_local_scores_and_resumes_without_duplicates(
    tmp_path: Path, recorded: tuple[Path, Path]
) -> None:
    local = evaluate(_config(tmp_path, recorded, "local"))
    on_ray = evaluate(_config(tmp_path, recorded, "ray", executor="ray"))
    assert len(local.results) == len(on_ray.results) == CASES
    assert len(local.scores) > 10 * CASES
    assert _rows(on_ray) == _rows(local)  # every case, metric, value, status, reason, details
    assert _card(on_ray) == _card(local)
    assert {s.status for s in local.scores} >= {"ok", "skipped"}  # a varied set
    assert on_ray.record.config["executor"] == "ray"

    # stopped (as Ctrl-C stops a run) once some batches are stored, then resumed on Ray
    config = _config(tmp_path, recorded, "resumed", executor="ray")
    seen: list[int] = []

    async def interrupted() -> None:
        tasks: list[asyncio.Task[RunOutcome]] = []

        def progress(done: int, total: int) -> None:
            seen.append(done)
            if done >= 2_000:
                tasks[0].cancel()

        tasks.append(asyncio.create_task(evaluate_async(config, on_progress=progress)))
        with pytest.raises(RunInterruptedError) as stopped:
            await tasks[0]
        run_id.append(stopped.value.run_id)

    run_id: list[str] = []
    asyncio.run(interrupted())
    db = tmp_path / "resumed.db"
    answered, distinct, _, _ = _stored(db, run_id[0])
    assert 2_000 <= answered == distinct < CASES, (answered, seen)

    totals: list[int] = []
    resumed = evaluate(
        config, resume=run_id[0], on_progress=lambda done, total: totals.append(total)
    )
    assert resumed.record.status == "completed"
    assert set(totals) == {CASES - answered}  # only the unanswered cases were asked
    responses, distinct, scores, distinct_scores = _stored(db, run_id[0])
    assert responses == distinct == CASES
    assert scores == distinct_scores == len(local.scores)
    assert _rows(resumed) == _rows(local)
    assert _card(resumed) == _card(local)

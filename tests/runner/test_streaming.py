"""Runs in batches (issue 18, item 4): cases, answers and scores flow through the store a
batch at a time, and nothing a user sees depends on the batch size."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import ragmeter.scoring.aggregate as aggregate
from ragmeter.cli.main import main
from ragmeter.config import EvalConfig, TargetConfig
from ragmeter.datasets import DatasetError
from ragmeter.datasets.stream import iter_dataset_batches
from ragmeter.demo import DEMO_DATASET
from ragmeter.metrics.base import Metric
from ragmeter.models import Case, Score
from ragmeter.runner.run import evaluate
from ragmeter.scoring import columns as columns_module
from ragmeter.scoring.aggregate import aggregate_with_breakdowns
from ragmeter.store import streams

DEMO_LINES = (DEMO_DATASET / "cases.jsonl").read_text(encoding="utf-8").splitlines()
# the default families but the embedder's: their values do not depend on how texts are batched
FAMILIES = [name for name in EvalConfig().metrics if name != "semantic"]


def _replay_files(folder: Path, copies: int) -> tuple[Path, Path]:
    """The demo's cases ``copies`` times over (ids made unique), and a recorded answer each: a
    copy of its first gold passage's snippet, with that passage as the retrieved chunk."""
    cases, answers = [], []
    for k in range(copies):
        for line in DEMO_LINES:
            case = json.loads(line)
            case["case_id"] = f"{case['case_id']}.{k}"
            cases.append(json.dumps(case))
            gold = (case.get("gold_passages") or [{}])[0]
            snippet = " ".join(gold.get("snippets") or [case.get("reference_answer") or "no idea"])
            chunk = {"id": gold.get("chunk_id"), "doc_id": gold.get("doc_id"), "text": snippet}
            answer = {
                "answer": f"{snippet} (copy {k})",
                "retrieved": [chunk, chunk | {"id": "x"}],
                "latency_ms": {"total": 100.0 + len(answers) % 37, "retrieval": 20.0},
            }
            answers.append(json.dumps({"case_id": case["case_id"], "response": answer}))
    dataset, replay = folder / "cases.jsonl", folder / "answers.jsonl"
    dataset.write_text("\n".join(cases) + "\n", encoding="utf-8")
    replay.write_text("\n".join(answers) + "\n", encoding="utf-8")
    return dataset, replay


def _config(folder: Path, dataset: Path, replay: Path, name: str) -> EvalConfig:
    return EvalConfig(
        datasets=[str(dataset)],
        target=TargetConfig(type="replay", path=str(replay)),
        store=str(folder / f"{name}.db"),
        output_dir=str(folder / name),
        metrics=FAMILIES,
        progress=False,
        bootstrap_resamples=200,
    )


def _eval_cli(dataset: Path, replay: Path, *options: str) -> Any:
    """``ragmeter eval`` of a replayed dataset with the families of ``FAMILIES``."""
    arguments = ["eval", "--dataset", str(dataset), "--target", f"replay:{replay}"]
    arguments += ["--metrics", ",".join(FAMILIES), *options, "--no-progress"]
    return CliRunner().invoke(main, arguments)


def _without_ids(document: dict[str, Any]) -> dict[str, Any]:
    """A run file without what differs between two runs of the same answers: ids, names,
    times, and the measured time of each replayed call."""
    skip = ("id", "name", "created_at", "completed_at", "config")
    kept = {k: v for k, v in document.items() if k not in skip}
    kept["cases"] = [{k: v for k, v in c.items() if k != "latency_ms"} for c in kept["cases"]]
    return kept


def test_a_run_in_batches_of_seven_equals_the_run_in_one_batch(tmp_path, monkeypatch):
    dataset, replay = _replay_files(tmp_path, 2)  # 174 cases: 25 batches of 7
    whole = evaluate(_config(tmp_path, dataset, replay, "whole"))
    monkeypatch.setattr(streams, "BATCH_CASES", 7)
    batched = evaluate(_config(tmp_path, dataset, replay, "batched"))

    assert len(batched.results) == len(whole.results) == 174
    key = lambda s: (s.case_id, s.metric)  # noqa: E731
    assert sorted(batched.scores, key=key) == sorted(whole.scores, key=key)
    assert batched.record.scorecard == whole.record.scorecard
    assert batched.record.breakdowns == whole.record.breakdowns
    assert batched.record.performance == whole.record.performance
    # TF-IDF's document frequencies are the run's, not a batch's
    tfidf = {s.case_id: s.value for s in batched.scores if s.metric == "redundancy_tfidf"}
    assert tfidf == {s.case_id: s.value for s in whole.scores if s.metric == "redundancy_tfidf"}
    assert batched.run_file is not None and whole.run_file is not None
    first = json.loads(whole.run_file.read_text(encoding="utf-8"))
    second = json.loads(batched.run_file.read_text(encoding="utf-8"))
    assert _without_ids(second) == _without_ids(first)
    assert [c["case_id"] for c in second["cases"]] == [c["case_id"] for c in first["cases"]]


def test_a_dataset_problem_after_the_first_batch_leaves_no_run_and_no_cases(tmp_path, monkeypatch):
    dataset, replay = _replay_files(tmp_path, 1)
    lines = dataset.read_text(encoding="utf-8").splitlines()
    lines[60] = lines[60].replace('"question": ', '"question": 5, "x": ')
    dataset.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(streams, "BATCH_CASES", 10)
    config = _config(tmp_path, dataset, replay, "bad")

    with pytest.raises(DatasetError) as raised:
        evaluate(config)
    assert f"{dataset}:61" in str(raised.value)
    with sqlite3.connect(config.store) as db:
        assert db.execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)
        assert db.execute("SELECT COUNT(*) FROM cases").fetchone() == (0,)


def test_a_small_bad_dataset_is_refused_before_the_store_is_created(tmp_path):
    dataset, replay = _replay_files(tmp_path, 1)
    dataset.write_text(DEMO_LINES[0] + "\n{not json\n", encoding="utf-8")
    config = _config(tmp_path, dataset, replay, "small")
    with pytest.raises(DatasetError, match=r"cases.jsonl:2: invalid JSON"):
        evaluate(config)
    assert not Path(config.store).exists()


def test_streamed_batches_hold_the_same_cases_as_the_whole_load(tmp_path):
    from ragmeter.datasets import load_datasets

    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("\n".join(DEMO_LINES[:40]) + "\n", encoding="utf-8")
    second.write_text("\ufeff" + "\n".join(DEMO_LINES[40:]) + "\r\n", encoding="utf-8")
    specs = [str(first), str(second)]
    whole = load_datasets(specs)
    for size in (1, 7, 1000):
        streamed = [c for batch in iter_dataset_batches(specs, None, size) for c in batch]
        assert [c.model_dump() for c in streamed] == [c.model_dump() for c in whole]


def test_a_case_id_repeated_across_streamed_files_is_named_with_both(tmp_path):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("\n".join(DEMO_LINES[:3]) + "\n", encoding="utf-8")
    second.write_text(DEMO_LINES[5] + "\n" + DEMO_LINES[1] + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as raised:
        list(iter_dataset_batches([str(first), str(second)], None, 2))
    assert str(raised.value).count("demo-002") == 1
    assert f"{second}:2" in str(raised.value) and f"also used in dataset {first}" in str(
        raised.value
    )


def _random_scores(n: int, metrics: list[Metric], seed: int) -> tuple[list[Case], list[Score]]:
    rng = random.Random(seed)
    cases = [
        Case(
            case_id=f"c{i}",
            question="q?",
            category=rng.choice(["a", "b", None]),
            tags=rng.sample(["x", "y", "z"], rng.randint(0, 2)),
        )
        for i in range(n)
    ]
    scores = []
    for case in cases:
        for metric in metrics:
            draw = rng.random()
            if draw < 0.1:
                scores.append(Score(case.case_id, metric.name, None, "skipped", "no gold"))
            elif draw < 0.15:
                scores.append(Score(case.case_id, metric.name, None, "failed", "boom"))
            else:
                scores.append(Score(case.case_id, metric.name, round(rng.random(), 3)))
    return cases, scores


METRICS = [Metric(f"m{j}", "retrieval", lambda c, r: 0.0, kind="score") for j in range(5)] + [
    Metric("count", "lexical", lambda c, r: 0.0, aggregation="sum", kind="count"),
    Metric("p95", "performance", lambda c, r: 0.0, aggregation="p95", kind="duration", unit="ms"),
]


def test_metrics_bootstrapped_a_few_at_a_time_agree_with_all_at_once(monkeypatch):
    cases, scores = _random_scores(300, METRICS, seed=4)
    fields = ["category", "tags"]
    together = aggregate_with_breakdowns(scores, METRICS, cases, fields, 300, 7, "zero")
    monkeypatch.setattr(aggregate, "GROUP_CELLS", 600)  # two metrics at a time
    apart = aggregate_with_breakdowns(scores, METRICS, cases, fields, 300, 7, "zero")

    def flat(result: Any) -> list[tuple[str, Any]]:
        card, breakdowns = result
        rows = [("all", s) for s in card.metrics]
        rows += [
            (f"{f}={g}", s)
            for f, groups in breakdowns.items()
            for g, items in groups.items()
            for s in items
        ]
        return [(where, s.model_dump()) for where, s in rows]

    for (where, a), (where_b, b) in zip(flat(together), flat(apart), strict=True):
        assert where == where_b and a["name"] == b["name"]
        for field, value in a.items():
            if isinstance(value, float):
                # the same Poisson weights; only float32 summation order may differ
                assert b[field] == pytest.approx(value, rel=1e-6, abs=1e-9), (
                    where,
                    a["name"],
                    field,
                )
            else:
                assert b[field] == value, (where, a["name"], field)


def test_columns_spilled_to_files_read_back_exactly(monkeypatch):
    cases, scores = _random_scores(120, METRICS, seed=9)
    names = [m.name for m in METRICS]
    kept = columns_module.ScoreColumns(METRICS, ["category", "tags"])
    kept.add(cases, scores)
    monkeypatch.setattr(columns_module, "SPILL_CELLS", 50)
    with columns_module.ScoreColumns(METRICS, ["category", "tags"]) as spilled:
        for start in range(0, 120, 17):
            batch = cases[start : start + 17]
            ids = {c.case_id for c in batch}
            spilled.add(batch, [s for s in scores if s.case_id in ids])
        assert spilled._folder is not None  # the columns went to files
        for name in (names, names[2:4], [names[-1]]):
            a, b = kept.table(name), spilled.table(name)
            assert np.array_equal(a.values, b.values, equal_nan=True)
            assert np.array_equal(a.status, b.status)
        assert spilled.fields[1].per_case() == kept.fields[1].per_case()
    kept.close()


def test_the_outcome_reads_answers_and_scores_from_the_store(tmp_path):
    dataset, replay = _replay_files(tmp_path, 1)
    outcome = evaluate(_config(tmp_path, dataset, replay, "lazy"))
    assert outcome._results is None and outcome._scores is None  # not held by the outcome
    assert [r.case_id for r in outcome.results] == [c.case_id for c in outcome.cases]
    assert {s.case_id for s in outcome.scores} == {c.case_id for c in outcome.cases}


def test_eval_in_batches_through_the_cli_matches_the_run_file_and_the_store(tmp_path, monkeypatch):
    dataset, replay = _replay_files(tmp_path, 1)
    monkeypatch.setattr(streams, "BATCH_CASES", 10)
    monkeypatch.chdir(tmp_path)
    result = _eval_cli(dataset, replay, "--output", "batched")
    assert result.exit_code == 0, result.output
    document = json.loads(
        (tmp_path / ".ragmeter" / "runs" / "batched.json").read_text(encoding="utf-8")
    )
    assert len(document["cases"]) == 87
    with sqlite3.connect(tmp_path / ".ragmeter" / "runs.db") as db:
        stored = db.execute("SELECT COUNT(*) FROM scores").fetchone()[0]
        answered = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    assert answered == 87
    assert stored == sum(len(case["scores"]) for case in document["cases"])
    token_f1 = [c["scores"]["token_f1"] for c in document["cases"]]
    token_f1 = [value for value in token_f1 if isinstance(value, float)]
    summary = next(m for m in document["scorecard"]["metrics"] if m["name"] == "token_f1")
    assert summary["value"] == pytest.approx(float(np.mean(token_f1)))


@pytest.mark.parametrize("query", [streams.PENDING_BATCH, streams.ANSWERED_BATCH])
def test_each_batch_is_read_by_index_without_sorting_the_run(tmp_path, query):
    from ragmeter.store.sqlite import RunStore

    store = RunStore(tmp_path / "runs.db")
    try:
        plan = " | ".join(
            str(row[-1]) for row in store.db.execute(f"EXPLAIN QUERY PLAN {query}", ("run", -1, 10))
        )
    finally:
        store.close()
    assert "cases_by_position (run_id=? AND position>?)" in plan, plan
    assert "TEMP B-TREE" not in plan, plan


def test_traces_written_from_batches_equal_those_from_the_whole_run(tmp_path, monkeypatch):
    dataset, replay = _replay_files(tmp_path, 1)
    lines = replay.read_text(encoding="utf-8").splitlines()
    for i in (3, 40, 85):  # failed answers: a trace each
        case_id = json.loads(lines[i])["case_id"]
        lines[i] = json.dumps({"case_id": case_id, "error_type": "http_500", "error_message": "x"})
    replay.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    traced: list[dict[str, str]] = []
    for size in (1000, 10):
        monkeypatch.setattr(streams, "BATCH_CASES", size)
        folder = tmp_path / f"traces-{size}"
        result = _eval_cli(dataset, replay, "--save-trace", str(folder))
        assert result.exit_code in (0, 1), result.output
        assert "traces: " in result.output and "failed case(s)" in result.output
        traced.append(
            {
                path.name.split("-")[0]: "\n".join(
                    json.dumps(
                        {
                            k: v
                            for k, v in json.loads(line).items()
                            if k not in ("run_id", "latency_ms")
                        }
                    )
                    for line in path.read_text(encoding="utf-8").splitlines()
                )
                for path in folder.glob("*.jsonl")
            }
        )
    assert traced[0] == traced[1]
    assert traced[0]["operational"].count('"http_500"') >= 3


def test_the_judge_cost_cap_holds_for_the_run_not_for_each_batch(tmp_path, monkeypatch):
    from tests.judges.servers import JudgeServer, smart_judge

    server = JudgeServer(smart_judge)
    try:
        dataset, replay = _replay_files(tmp_path, 1)
        lines = dataset.read_text(encoding="utf-8").splitlines()[:8]
        dataset.write_text("\n".join(lines) + "\n", encoding="utf-8")
        statuses, spent_by = {}, {}
        for size in (2000, 2):
            monkeypatch.setattr(streams, "BATCH_CASES", size)
            config = EvalConfig.model_validate(
                {
                    **_config(tmp_path, dataset, replay, f"judged-{size}").model_dump(),
                    "metrics": ["lexical"],
                    "judge": f"{server.url}/v1#judge-model",
                    "judge_tasks": ["answer_relevancy"],
                    "max_judge_cost": 2.5,
                    "prices": {"judge-model": {"input_per_1k": 1.0, "output_per_1k": 1.0}},
                    "judge_api_key_env": None,
                }
            )
            outcome = evaluate(config)
            statuses[size] = [s.status for s in outcome.scores if s.metric == "answer_relevancy"]
            with sqlite3.connect(config.store) as db:
                spent = db.execute("SELECT SUM(cost_usd) FROM judge_calls").fetchone()[0]
            spent_by[size] = spent
        # batches of 2 used to get a fresh budget each: all 8 judged, $8 spent
        assert "skipped" in statuses[2] and statuses[2].count("skipped") >= 3
        assert spent_by[2] <= spent_by[2000] + 1.0
    finally:
        server.close()


def test_a_replay_file_changed_after_it_was_checked_fails_its_cases(tmp_path):
    from ragmeter.targets import TargetError
    from ragmeter.targets.replay import read_recorded

    replay = tmp_path / "answers.jsonl"
    lines = [
        json.dumps({"case_id": f"c{i}", "response": {"answer": f"answer of c{i}"}})
        for i in range(4)
    ]
    replay.write_text("\n".join(lines) + "\n", encoding="utf-8")
    index = read_recorded(replay)
    found = index.get("c2")
    assert found is not None and found.record["response"]["answer"] == "answer of c2"
    replay.write_text("\n".join(reversed(lines)) + "\n", encoding="utf-8")
    with pytest.raises(TargetError, match=r"answers.jsonl:3: the replay file changed"):
        index.get("c2")
    index.close()


def test_an_interrupted_scoring_pass_leaves_no_scores_to_read(tmp_path, monkeypatch):
    from ragmeter.runner import scoring
    from ragmeter.store.sqlite import RunStore

    dataset, replay = _replay_files(tmp_path, 1)
    monkeypatch.setattr(streams, "BATCH_CASES", 10)
    real = scoring.score_results
    calls = {"n": 0}

    def stops_on_the_third_batch(*args: Any, **kwargs: Any) -> list[Score]:
        calls["n"] += 1
        if calls["n"] == 3:
            raise scoring.ScoringStoppedError("c")
        return real(*args, **kwargs)

    config = _config(tmp_path, dataset, replay, "stopped")
    from ragmeter.runner import executors

    monkeypatch.setattr(executors, "score_results", stops_on_the_third_batch)
    with pytest.raises(scoring.ScoringStoppedError):
        evaluate(config)
    store = RunStore(config.store)
    try:
        (run,) = store.list_runs()
        assert run.status != "completed" and run.scorecard is None
        assert store.get_scores(run.id) == []
        assert store.db.execute("SELECT COUNT(*) FROM scores").fetchone()[0] == 0
    finally:
        store.close()


def test_no_cases_is_refused_before_the_store_is_created(tmp_path):
    config = EvalConfig(store=str(tmp_path / "runs.db"), output_dir=str(tmp_path / "runs"))
    with pytest.raises(Exception, match="no cases to evaluate"):
        evaluate(config, cases=[])
    assert not (tmp_path / "runs.db").exists()


def test_cases_stored_for_a_run_whose_row_could_not_be_written_are_removed(tmp_path, monkeypatch):
    from ragmeter.store.sqlite import RunStore, StoreError

    dataset, replay = _replay_files(tmp_path, 1)
    config = _config(tmp_path, dataset, replay, "orphans")

    def refuse(self: RunStore, *_: Any) -> None:
        raise StoreError("database is locked")

    monkeypatch.setattr(RunStore, "insert_run", refuse)
    with pytest.raises(StoreError):
        evaluate(config)
    with sqlite3.connect(config.store) as db:
        assert db.execute("SELECT COUNT(*) FROM cases").fetchone() == (0,)


class _SlowFirstTarget:
    """Holds case c0 until a case of the next batch has started: with batches asked one after
    the other it would wait forever (the test gives up after 10 s)."""

    name = "slow-first"

    def __init__(self) -> None:
        import asyncio

        self.started: list[str] = []
        self.next_batch_started = asyncio.Event()

    async def preflight(self) -> dict[str, Any]:
        return {}

    async def query(self, case: Case) -> Any:
        import asyncio

        from ragmeter.models import Response

        self.started.append(case.case_id)
        if case.case_id == "c12":
            self.next_batch_started.set()
        if case.case_id == "c0":
            await asyncio.wait_for(self.next_batch_started.wait(), timeout=10)
        return Response(answer=f"answer {case.case_id}")

    async def aclose(self) -> None:
        return None


def test_a_slow_case_does_not_hold_up_the_next_batch(tmp_path, monkeypatch):
    monkeypatch.setattr(streams, "BATCH_CASES", 10)
    cases = [Case(case_id=f"c{i}", question=f"question {i}?") for i in range(30)]
    target = _SlowFirstTarget()
    config = EvalConfig(
        store=str(tmp_path / "runs.db"),
        output_dir=str(tmp_path / "runs"),
        metrics=["lexical"],
        concurrency=4,
        progress=False,
        bootstrap_resamples=20,
    )
    outcome = evaluate(config, cases=cases, target=target)
    assert [r.status for r in outcome.results] == ["ok"] * 30
    assert target.started.index("c12") < len(target.started) - 1


def test_the_cases_stored_are_reported_batch_by_batch(tmp_path, monkeypatch):
    import asyncio

    from ragmeter.runner.engine import run_evaluation_async

    dataset, replay = _replay_files(tmp_path, 1)  # 87 cases
    monkeypatch.setattr(streams, "BATCH_CASES", 20)
    heard: list[int] = []
    started: list[int] = []
    outcome = asyncio.run(
        run_evaluation_async(
            _config(tmp_path, dataset, replay, "heard"),
            on_stored=heard.append,
            on_start=lambda record, pending: started.append(pending),
        )
    )
    assert heard == [20, 40, 60, 80, 87]
    assert started == [87]
    assert len(outcome.results) == 87

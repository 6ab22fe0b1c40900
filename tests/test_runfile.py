"""The typed run file: what the engine writes is what compare reads, the header reads alone
without parsing the cases, and old or foreign files are named, not misread."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragmeter.runfile as runfile_module
from ragmeter.errors import InputError
from ragmeter.models import CaseResult, Score
from ragmeter.run_record import MetricSummary, RunRecord, Scorecard
from ragmeter.runfile import RUN_FILE_VERSION, RunFile

SEED_002_KEYS = {
    "id", "name", "created_at", "completed_at", "config", "datasets", "scorecard",
    "weighted_score", "question_count", "error_count",
}  # fmt: skip


def record(config: dict[str, Any] | None = None) -> RunRecord:
    summary = MetricSummary(
        name="token_f1", group="lexical", value=0.5, kind="proportion",
        n_scored=1, n_skipped=1, n_failed=0,
    )  # fmt: skip
    return RunRecord(
        id="abc123", name="eval-abc", status="completed", created_at="2026-11-23T10:00:00+00:00",
        completed_at="2026-11-23T10:01:00+00:00",
        config={"seed": 0, "judge": None} if config is None else config,
        datasets=["demo"],
        scorecard=Scorecard(metrics=[summary], by_group={"lexical": ["token_f1"]}),
        question_count=2, error_count=1,
    )  # fmt: skip


def results_and_scores() -> tuple[list[CaseResult], list[Score]]:
    results = [
        CaseResult(case_id="a", status="ok", latency_ms=12.5),
        CaseResult(case_id="b", status="error", error_type="http_500", error_message="boom"),
    ]
    scores = [
        Score("a", "token_f1", 0.5),
        Score("b", "token_f1", None, "failed", "target error: http_500"),
        Score("a", "exact_match", None, "skipped", "case has no reference answer"),
    ]
    return results, scores


def test_written_file_keeps_seed_002_keys_and_the_per_case_score_shape(tmp_path: Path) -> None:
    results, scores = results_and_scores()
    path = RunFile.from_run(record(), results, scores).write(tmp_path)
    assert path.name == "abc123_20261123T100000.json"
    document = json.loads(path.read_text())
    assert set(document) >= SEED_002_KEYS and list(document)[-1] == "cases"
    assert document["run_file_version"] == RUN_FILE_VERSION
    a, b = document["cases"]
    assert a["scores"] == {
        "token_f1": 0.5,
        "exact_match": {"status": "skipped", "reason": "case has no reference answer"},
    }
    assert b["scores"]["token_f1"] == {"status": "failed", "reason": "target error: http_500"}
    assert document["scorecard"]["metrics"][0]["sample_size"] == 1


def test_read_round_trips_and_header_only_leaves_the_cases_out(tmp_path: Path) -> None:
    results, scores = results_and_scores()
    path = RunFile.from_run(record(), results, scores).write(tmp_path)
    full = RunFile.read(path)
    assert full.cases is not None and [c.case_id for c in full.cases] == ["a", "b"]
    assert full.values() == {"token_f1": {"a": 0.5}}
    header = RunFile.read(path, header_only=True)
    assert header.cases is None
    assert header.header == full.header == record()


def test_header_only_never_parses_the_cases(tmp_path: Path) -> None:
    results, scores = results_and_scores()
    path = RunFile.from_run(record(), results, scores).write(tmp_path)
    text = path.read_text()
    broken = tmp_path / "broken.json"
    broken.write_text(text[: text.index('"cases": [') + 11] + "not json at all, never read")
    assert RunFile.read(broken, header_only=True).header == record()
    with pytest.raises(InputError, match=r"broken\.json: not a ragmeter run file"):
        RunFile.read(broken)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    config=st.dictionaries(st.text(max_size=8), json_values, max_size=6), chunk=st.integers(1, 40)
)
def test_header_reader_agrees_with_json_at_every_chunk_size(
    config: dict[str, Any], chunk: int
) -> None:
    import tempfile

    document = {**record(config=config).model_dump(mode="json"), "cases": [{"x": 1}]}
    text = json.dumps(document, indent=None if chunk % 2 else 1)
    original = runfile_module._CHUNK
    runfile_module._CHUNK = chunk
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "run.json"
            path.write_text(text)
            header = RunFile.read(path, header_only=True)
    finally:
        runfile_module._CHUNK = original
    assert header.config == config
    assert header.header == record(config=config)


def test_version_1_files_read_and_newer_versions_are_refused(tmp_path: Path) -> None:
    results, scores = results_and_scores()
    document = RunFile.from_run(record(), results, scores).document()
    del document["run_file_version"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(document))
    assert RunFile.read(old).run_file_version == 1
    document = {"run_file_version": RUN_FILE_VERSION + 1, **document}
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(document))
    with pytest.raises(InputError, match="newer ragmeter"):
        RunFile.read(newer, header_only=True)


def test_foreign_and_malformed_files_are_named(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"hello": "world"}))
    with pytest.raises(InputError, match=r"foreign\.json: not a ragmeter run file"):
        RunFile.read(foreign)
    bad = tmp_path / "bad.json"
    document = RunFile.from_run(record(), *results_and_scores()).document()
    document["question_count"] = "many"
    bad.write_text(json.dumps(document))
    with pytest.raises(InputError, match=r"bad\.json: run file field question_count"):
        RunFile.read(bad, header_only=True)
    with pytest.raises(InputError, match="cannot read run file"):
        RunFile.read(tmp_path / "missing.json")


def test_header_only_reads_floats_cut_at_a_chunk_and_key_sorted_files(tmp_path: Path) -> None:
    results, scores = results_and_scores()
    document = RunFile.from_run(record(), results, scores).document()
    text = json.dumps(document, sort_keys=True)  # "cases" now comes before "id"
    path = tmp_path / "sorted.json"
    path.write_text(text)
    assert RunFile.read(path, header_only=True).header == record()
    floats = {"run_file_version": 2, "a": 0.75, "b": 1e5, **{k: v for k, v in document.items()}}
    text = json.dumps(floats)
    for cut in range(1, 40):  # every chunk size cuts some number somewhere
        original = runfile_module._CHUNK
        runfile_module._CHUNK = cut
        try:
            path.write_text(text)
            header = RunFile.read(path, header_only=True)
        finally:
            runfile_module._CHUNK = original
        assert header.header == record(), cut


VANISHING_FOLDER_TARGET = """
import os, shutil

def answer(question: str) -> str:
    shutil.rmtree(os.environ["RUNS_DIR"], ignore_errors=True)  # the run folder, mid-run
    return "It is 27 days."
"""


def test_a_run_folder_deleted_mid_run_is_made_again(tmp_path: Path) -> None:
    # issue 30: FileNotFoundError on runs/<id>_<ts>.json.part, exit 1, no run file or report
    (tmp_path / "vanish.py").write_text(VANISHING_FOLDER_TARGET, encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "a", "question": "q1?"}\n{"id": "b", "question": "q2?"}\n', encoding="utf-8"
    )
    runs = tmp_path / "runs"
    result = subprocess.run(
        [sys.executable, "-m", "ragmeter", "eval", "-d", "cases.jsonl", "--target",
         "vanish.py:answer", "--metrics", "lexical", "--no-progress", "--store", "r.db",
         "--output-dir", str(runs)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "RUNS_DIR": str(runs)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (run_file,) = runs.glob("*.json")
    document = json.loads(run_file.read_text(encoding="utf-8"))
    assert [case["case_id"] for case in document["cases"]] == ["a", "b"]
    assert len(list(runs.glob("*.md"))) == 1  # the report too


def test_a_version_2_file_and_store_row_read_their_targets_as_goals(tmp_path: Path) -> None:
    """Before version 3 the goals were ``targets`` (seed 003's word) and the record carried a
    ``schema_version``: both a file and a store row of then are read, the goals kept."""
    from ragmeter.run_record import GoalResult
    from ragmeter.store.sqlite import RunStore

    goal = GoalResult(metric="token_f1", op=">", threshold=0.4, value=0.5, status="pass")
    written = RunFile.from_run(record().model_copy(update={"goals": [goal]}), [], []).document()
    # a version 2 file: the same header order, "targets" where "goals" is now
    document = {"targets" if key == "goals" else key: value for key, value in written.items()}
    document.update(run_file_version=2, schema_version="1")
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document))
    for read in (RunFile.read(path), RunFile.read(path, header_only=True)):
        assert read.goals == [goal] and read.run_file_version == 2
    store = RunStore(str(tmp_path / "runs.db"))
    try:
        store.insert_run(record(), 2)
        extras = json.dumps({"targets": [goal.model_dump(mode="json")], "breakdowns": {}})
        with store.transaction():
            store.db.execute("UPDATE runs SET extras_json=? WHERE id=?", (extras, "abc123"))
        assert store.get_run("abc123").goals == [goal]
    finally:
        store.close()

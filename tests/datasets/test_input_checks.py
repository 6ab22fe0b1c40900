"""Audit of dataset inputs: mistakes in a user's files are caught before the first question,
with file:line, case and field (golden JSON keys given twice and their real lines, two files of
one dataset name, label files that would not be read, negative latency budgets)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragmeter.cli.main import main
from ragmeter.config import ENV_FIELDS
from ragmeter.datasets import DatasetError, load_dataset, validate_dataset
from ragmeter.datasets.rows import read_rows
from tests.conftest import write_jsonl


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for variable in ENV_FIELDS:
        monkeypatch.delenv(variable, raising=False)


def validate(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["datasets", "validate", *args])
    return result.exit_code, result.output


def evaluate(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        main, ["eval", "--target", "reference", "--store", "runs.db", "--no-progress", *args]
    )
    return result.exit_code, result.output


# 2. a key given twice in a JSON file ------------------------------------------------------------
def test_golden_json_key_given_twice_is_a_problem_at_its_line(tmp_path: Path) -> None:
    Path("j6.json").write_text(
        '[{"case_id": "p1", "question": "first",\n  "question": "second"}]\n', encoding="utf-8"
    )
    code, output = validate("golden:j6.json")
    assert code == 1, output
    assert "j6.json:2: case p1: field 'question': key given twice in one object" in output
    code, output = evaluate("--dataset", "golden:j6.json")
    assert code == 2 and "key given twice" in output and not Path("runs.db").exists()


def test_golden_cases_object_key_given_twice_nested(tmp_path: Path) -> None:
    Path("g.json").write_text(
        '{"cases": [\n{"case_id": "a", "question": "q"},\n'
        '{"case_id": "b", "question": "q",\n "metadata": {"y": 1, "y": 2}}\n]}\n',
        encoding="utf-8",
    )
    code, output = validate("golden:g.json")
    assert code == 1 and "g.json:4: case b: field 'metadata.y': key given twice" in output


def test_every_json_row_file_refuses_a_key_given_twice(tmp_path: Path) -> None:
    path = Path("rows.json")
    path.write_text('[\n{"id": 1},\n{"id": 2, "id": 3}\n]\n', encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        read_rows(path)
    (problem,) = caught.value.problems
    assert (problem.line, problem.field) == (3, "1.id")


def test_a_json_file_without_duplicates_still_reads(tmp_path: Path) -> None:
    Path("ok.json").write_text(
        json.dumps({"questions": [{"case_id": "a", "question": "q"}]}), encoding="utf-8"
    )
    assert [c.case_id for c in load_dataset("golden:ok.json")] == ["a"]


# 3. the real line of a case in a JSON file ------------------------------------------------------
def test_golden_json_problems_name_the_line_of_the_case(tmp_path: Path) -> None:
    Path("j5.json").write_text(
        "[\n"
        '  {"case_id": "p1", "question": "ok"},\n'
        "  {\n"
        '    "case_id": "p2",\n'
        '    "question": "q",\n'
        '    "reference_answer": "a",\n'
        '    "bogus": 1\n'
        "  },\n"
        '  {"case_id": "p1", "question": "again"}\n'
        "]\n",
        encoding="utf-8",
    )
    code, output = validate("golden:j5.json")
    assert code == 1, output
    assert "j5.json:3: case p2: field 'bogus': unknown field" in output
    assert "j5.json:9: case p1: field 'case_id': duplicate case_id (first defined at line 2)" in (
        output
    )
    assert "j5.json:2: case p2" not in output


# 4. two files with one dataset name -------------------------------------------------------------
def test_two_files_of_one_dataset_name_are_refused(tmp_path: Path) -> None:
    write_jsonl(Path("esc2.jsonl"), [{"case_id": "e1", "question": "q"}])
    Path("sub").mkdir()
    write_jsonl(Path("sub/esc2.jsonl"), [{"case_id": "e2", "question": "q"}])
    code, output = evaluate("-d", "esc2.jsonl", "-d", "sub/esc2.jsonl")
    assert code == 2, output
    assert "sub/esc2.jsonl" in output and "esc2.jsonl" in output
    assert "'esc2'" in output and "rename" in output
    assert not Path("runs").exists()  # no run file beside the store


def test_a_dataset_field_tells_two_files_apart(tmp_path: Path) -> None:
    from ragmeter.datasets import load_datasets

    write_jsonl(Path("esc2.jsonl"), [{"case_id": "e1", "question": "q"}])
    Path("sub").mkdir()
    write_jsonl(Path("sub/esc2.jsonl"), [{"case_id": "e2", "question": "q", "dataset": "esc2b"}])
    cases = load_datasets(["esc2.jsonl", "sub/esc2.jsonl"])
    assert sorted(c.dataset or "" for c in cases) == ["esc2", "esc2b"]


# 5. label files that would not be read ----------------------------------------------------------
def test_near_miss_label_files_are_reported(tmp_path: Path) -> None:
    folder = Path("f3")
    folder.mkdir()
    write_jsonl(folder / "cases.jsonl", [{"case_id": "a", "question": "q"}])
    write_jsonl(folder / "pipeline_label.jsonl", [{"case_id": "a", "expected_outcome": "success"}])
    write_jsonl(folder / "groundedness_labels.json", [{"case_id": "a", "expected_claims": ["x"]}])
    (folder / "README.md").write_text("notes\n", encoding="utf-8")
    (folder / "corpus").mkdir()
    code, output = validate("f3")
    assert code == 1, output
    assert "pipeline_label.jsonl" in output and "rename it to pipeline_labels.jsonl" in output
    assert "groundedness_labels.json:" in output
    assert "rename it to groundedness_labels.jsonl" in output
    assert "README" not in output
    code, output = evaluate("--dataset", "f3")
    assert code == 2 and "pipeline_label.jsonl" in output


def test_a_clean_label_folder_is_ok(tmp_path: Path) -> None:
    folder = Path("f4")
    folder.mkdir()
    write_jsonl(folder / "cases.jsonl", [{"case_id": "a", "question": "q"}])
    write_jsonl(folder / "pipeline_labels.jsonl", [{"case_id": "a", "expected_outcome": "success"}])
    (folder / "notes.txt").write_text("x\n", encoding="utf-8")
    # a second file beside the one read is not a misnaming, and "_labels.jsonl" is read
    write_jsonl(folder / "cases_old.jsonl", [{"case_id": "a", "question": "old q"}])
    write_jsonl(folder / "pipeline_label.jsonl", [{"case_id": "a", "expected_outcome": "x"}])
    write_jsonl(folder / "_labels.jsonl", [{"case_id": "a", "category": "factual"}])
    code, output = validate("f4")
    assert code == 0 and "ok: 1 cases" in output, output


# 6. a negative latency budget -------------------------------------------------------------------
def test_negative_latency_budget_is_a_problem_at_load(tmp_path: Path) -> None:
    write_jsonl(
        Path("lat.jsonl"),
        [
            {"case_id": "ok", "question": "q0", "latency_budget_ms": {"p95": 0}},
            {"case_id": "a", "question": "q1", "latency_budget_ms": {"p95": -5}},
        ],
    )
    code, output = validate("lat.jsonl")
    assert code == 1, output
    assert "lat.jsonl:2: case a: field 'latency_budget_ms.p95': a latency budget is a number" in (
        output
    )
    assert "case ok" not in output


def test_negative_latency_budget_in_a_label_file_names_that_file(tmp_path: Path) -> None:
    folder = Path("f5")
    folder.mkdir()
    write_jsonl(folder / "cases.jsonl", [{"case_id": "a", "question": "q"}])
    write_jsonl(
        folder / "pipeline_labels.jsonl", [{"case_id": "a", "latency_budget_ms": {"p95": -1}}]
    )
    (problem,) = validate_dataset("f5")
    assert problem.file.endswith("pipeline_labels.jsonl") and problem.line == 1
    assert problem.field == "latency_budget_ms.p95"

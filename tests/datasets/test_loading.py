from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.datasets import DatasetError, load_dataset, load_datasets, validate_dataset
from tests.conftest import write_jsonl

GOOD = {"case_id": "c1", "question": "How many vacation days?", "reference_answer": "15 days"}


def test_native_jsonl_loads_and_names_dataset(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "hr.jsonl", [GOOD, {"id": 2, "query": "Sick leave?"}])
    cases = load_dataset(str(path))
    assert [c.case_id for c in cases] == ["c1", "2"]
    assert cases[1].question == "Sick leave?"
    assert {c.dataset for c in cases} == {"hr"}


def test_malformed_jsonl_gives_one_problem_per_defect_with_file_line_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        json.dumps(GOOD)
        + "\n"
        + "{not json\n"
        + json.dumps({"case_id": "c2"})
        + "\n"
        + json.dumps({"case_id": "c3", "question": "q", "answerable": "perhaps"})
        + "\n"
        + json.dumps({"case_id": "c1", "question": "again"})
        + "\n",
        encoding="utf-8",
    )
    problems = validate_dataset(str(path))
    described = [(p.line, p.field) for p in problems]
    assert described == [(2, None), (3, "question"), (4, "answerable"), (5, "case_id")]
    text = [str(p) for p in problems]
    assert text[0].startswith(f"{path}:2: invalid JSON")
    assert "case c2" in text[1] and "required field is missing" in text[1]
    assert "perhaps" in text[2]
    assert "duplicate case_id (first defined at line 1)" in text[3]


def test_unknown_field_is_reported(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "x.jsonl", [{**GOOD, "qestion": "typo"}])
    [problem] = validate_dataset(str(path))
    assert (problem.line, problem.field) == (1, "qestion")
    assert "unknown field" in problem.message


def test_gold_passage_grade_is_bounded(tmp_path: Path) -> None:
    row = {**GOOD, "gold_passages": [{"chunk_id": "a#b", "grade": 5}]}
    [problem] = validate_dataset(str(write_jsonl(tmp_path / "g.jsonl", [row])))
    assert problem.field == "gold_passages.0.grade"


def test_yaml_cases_carry_their_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(
        "cases:\n  - case_id: a\n    question: first\n  - case_id: b\n    answerable: no\n",
        encoding="utf-8",
    )
    [problem] = validate_dataset(str(path))
    assert (problem.line, problem.field, problem.case_id) == (4, "question", "b")
    path.write_text("- case_id: a\n  question: first\n  answerable: false\n", encoding="utf-8")
    [case] = load_dataset(str(path))
    assert case.answerable is False


def test_label_folder_joins_perspectives_by_case_id(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "cases.jsonl",
        [
            {
                "case_id": "q001",
                "query": "What is the vacation policy?",
                "user_roles": ["employee"],
                "query_type": "faq",
            },
            {"case_id": "q002", "query": "How do I request time off?"},
        ],
    )
    write_jsonl(
        tmp_path / "retrieval_labels.jsonl",
        [
            {
                "case_id": "q001",
                "relevant_docs": ["internal-001"],
                "relevance_grades": {"internal-001": 3},
                "relevant_chunks": ["internal-001-child-002-001"],
                "chunk_relevance_grades": {"internal-001-child-002-001": 3},
            },
        ],
    )
    write_jsonl(
        tmp_path / "context_labels.jsonl",
        [
            {
                "case_id": "q001",
                "gold_facts": [{"fact": "15 days vacation", "aliases": ["fifteen days"]}],
                "expected_chunks": ["internal-001-child-002-001"],
            },
        ],
    )
    write_jsonl(
        tmp_path / "pipeline_labels.jsonl",
        [
            {
                "case_id": "q002",
                "expected_outcome": "success",
                "forbidden_flags": ["guardrail_blocked"],
                "min_citations": 1,
                "latency_budget_ms": {"p95": 5000},
            },
        ],
    )
    first, second = load_dataset(str(tmp_path))
    assert [(p.chunk_id, p.doc_id, p.grade) for p in first.gold_passages] == [
        ("internal-001-child-002-001", None, 3),
        (None, "internal-001", 3),
    ]
    assert first.gold_facts[0].aliases == ["fifteen days"]
    assert first.user_roles == ["employee"]
    assert second.expected_outcome == "success"
    assert second.latency_budget_ms == {"p95": 5000}
    assert first.dataset == tmp_path.name


def test_label_folder_problems_point_at_the_label_file(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "cases.jsonl", [{"case_id": "q1", "query": "a"}])
    labels = write_jsonl(
        tmp_path / "pipeline_labels.jsonl",
        [
            {"case_id": "q1", "expected_outcome": "maybe"},
            {"case_id": "ghost", "min_citations": 1},
        ],
    )
    problems = validate_dataset(str(tmp_path))
    assert {(p.file, p.line, p.field) for p in problems} == {
        (str(labels), 1, "expected_outcome"),
        (str(labels), 2, "case_id"),
    }


def test_mapped_csv_with_field_map(tmp_path: Path) -> None:
    path = tmp_path / "foreign.csv"
    path.write_text(
        "qid,text,gold,kind\n7,What is BM25?,a ranking function,x\n8,,y,z\n", encoding="utf-8"
    )
    field_map = {"case_id": "qid", "question": "text", "reference_answer": "gold"}
    problems = validate_dataset(str(path), field_map)
    assert [(p.line, p.field) for p in problems] == [(3, "question")]
    path.write_text("qid,text,gold,kind\n7,What is BM25?,a ranking function,x\n", encoding="utf-8")
    [case] = load_dataset(str(path), field_map)
    assert (case.case_id, case.reference_answer, case.metadata) == (
        "7",
        "a ranking function",
        {"kind": "x"},
    )


def test_mapped_jsonl_dotted_paths(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "squadish.jsonl",
        [{"id": "s1", "q": "Who?", "answers": {"text": ["Ada", "Ada L."]}, "is_impossible": False}],
    )
    [case] = load_dataset(
        str(path), {"case_id": "id", "question": "q", "reference_answer": "answers.text.0"}
    )
    assert case.reference_answer == "Ada"
    with pytest.raises(DatasetError) as error:
        load_dataset(str(path), {"question": "missing.path"})
    assert "mapped source field 'missing.path' is missing" in str(error.value)


def test_duplicate_ids_across_datasets(tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", [GOOD])
    b = write_jsonl(tmp_path / "b.jsonl", [GOOD])
    with pytest.raises(DatasetError) as error:
        load_datasets([str(a), str(b)])
    assert "also used in dataset" in str(error.value)


def test_demo_dataset_is_valid_and_covers_the_categories() -> None:
    cases = load_dataset("demo")
    assert len(cases) >= 60
    categories = {c.category for c in cases}
    assert {
        "factual",
        "multi_hop",
        "numeric",
        "list",
        "unanswerable",
        "recency_conflict",
    } <= categories
    assert all(c.gold_passages for c in cases if c.answerable)
    assert all(c.required_support_groups for c in cases if c.category == "multi_hop")


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )


def test_cli_validate_and_eval_refuse_a_bad_dataset_without_writing_a_run(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"case_id": "x"}\n{oops\n', encoding="utf-8")
    result = run_cli("datasets", "validate", str(bad), cwd=tmp_path)
    assert result.returncode == 1
    assert f"{bad}:1: case x: field 'question': required field is missing" in result.stdout
    assert f"{bad}:2: invalid JSON" in result.stdout

    result = run_cli("eval", "--dataset", str(bad), "--no-progress", cwd=tmp_path)
    assert result.returncode == 2
    assert "2 problem(s)" in result.stderr
    assert not (tmp_path / ".ragmeter").exists()


def test_cli_schema_prints_json_schema(tmp_path: Path) -> None:
    result = run_cli("datasets", "schema", cwd=tmp_path)
    schema = json.loads(result.stdout)
    assert {"case_id", "question"} <= set(schema["required"])
    assert "gold_passages" in schema["properties"]

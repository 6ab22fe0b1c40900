"""A user's own dataset shape: other tools' column names, --field-map, CSV and Parquet parity
(issue 29, scope 2). Expected values are written out by hand."""

from __future__ import annotations

import ast
import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.cli.main import main
from ragmeter.datasets import DatasetError, load_dataset, validate_dataset
from ragmeter.datasets.fieldmap import FieldMapError, _split_entries, parse_field_map
from tests.conftest import write_jsonl


def user_records() -> list[dict[str, Any]]:
    """The shape the user wrote: 26 cases, the last 4 unanswerable and without a source."""
    records: list[dict[str, Any]] = []
    for number in range(1, 27):
        record: dict[str, Any] = {
            "id": f"q{number:02d}",
            "question": f"What does section {number} say?",
            "answer": f"Section {number} says {number}.",
        }
        if number > 22:
            record["answerable"] = False
        else:
            record["source_file"] = f"doc{number % 3}.md"
            record["source_node"] = f"node-{number}"
        records.append(record)
    return records


def test_names_without_a_safe_reading_give_one_problem_per_field_with_a_hint(
    tmp_path: Path,
) -> None:
    # beside 'contexts' an 'answer' is a system's recorded answer; two document columns and
    # a chunk column leave no single gold passage: none of them is read (datasets.readings)
    records = [
        {**r, "contexts": ["c"], "doc_id": "d"} if "source_file" in r else {**r, "contexts": []}
        for r in user_records()
    ]
    path = write_jsonl(tmp_path / "cases.jsonl", records)
    problems = validate_dataset(str(path))
    # 26 + 26 + 22 + 22 + 22 = 118 per-line problems before; one per field, at its first line
    found = {p.field: p for p in problems}
    assert {field: (p.line, p.count) for field, p in found.items()} == {
        "answer": (1, 26),
        "contexts": (1, 26),
        "doc_id": (1, 22),
        "source_file": (1, 22),
        "source_node": (1, 22),
    }
    answer = str(found["answer"])
    assert answer.startswith(f"{path}:1: case q01: field 'answer': unknown field: ")
    assert "--field-map reference_answer=answer" in answer
    assert answer.endswith("[in 26 records; the first is here]")
    assert "--field-map gold_passages.0.doc_id=source_file" in str(found["source_file"])
    assert "--field-map gold_passages.0.chunk_id=source_node" in str(found["source_node"])


def test_the_users_file_loads_with_the_documented_map(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "cases.jsonl", user_records())
    field_map = parse_field_map(["reference_answer=answer,gold_passages.0.doc_id=source_file"])
    assert field_map == {"reference_answer": "answer", "gold_passages.0.doc_id": "source_file"}
    cases = load_dataset(str(path), field_map)
    assert len(cases) == 26
    assert [c.case_id for c in cases if not c.answerable] == ["q23", "q24", "q25", "q26"]
    first, last = cases[0], cases[-1]
    # 'question' and 'answerable' are not mapped: read by their own names
    assert (first.case_id, first.question) == ("q01", "What does section 1 say?")
    assert first.reference_answer == "Section 1 says 1."
    assert [(g.doc_id, g.chunk_id) for g in first.gold_passages] == [("doc1.md", None)]
    assert first.metadata == {"source_node": "node-1"}  # not a case field: kept
    # the mapped source_file is absent on q26: no gold passage, no problem
    assert (last.gold_passages, last.reference_answer) == ([], "Section 26 says 26.")


def test_the_cli_reads_a_comma_separated_map(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "cases.jsonl", user_records())
    result = CliRunner().invoke(
        main,
        [
            "datasets",
            "validate",
            str(path),
            "--field-map",
            "reference_answer=answer,gold_passages.0.doc_id=source_file",
            "--field-map",
            "gold_passages.0.chunk_id=source_node",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "ok: 26 cases" in result.output
    bad = CliRunner().invoke(
        main, ["datasets", "validate", str(path), "--field-map", "answer=reference_answer"]
    )
    assert bad.exit_code == 2
    assert "'answer=reference_answer': 'answer' is not a case field" in bad.output


def test_one_meaning_names_are_aliases_and_two_meaning_names_a_did_you_mean(
    tmp_path: Path,
) -> None:
    path = write_jsonl(
        tmp_path / "x.jsonl",
        [
            {"qid": "a", "user_input": "Q1?", "ground_truth": "A1"},
            {"query_id": "b", "query": "Q2?", "expected_output": "A2"},
            {"question_id": "c", "question": "Q3?", "gold_answer": "A3"},
        ],
    )
    cases = load_dataset(str(path))
    assert [(c.case_id, c.question, c.reference_answer) for c in cases] == [
        ("a", "Q1?", "A1"),
        ("b", "Q2?", "A2"),
        ("c", "Q3?", "A3"),
    ]
    write_jsonl(
        path,
        [
            {"id": "a", "question": "Q?", "ground_truth": "A", "expected_output": "A"},
            {"id": "b", "question": "Q?", "reference": "A", "contexts": ["t"]},
            {"id": "c", "question": "Q?", "refrence_answer": "A", "ground_truths": ["A"]},
        ],
    )
    found = {p.field: p.message for p in validate_dataset(str(path))}
    assert found["ground_truth"] == (
        "another name of 'reference_answer', which this case already gives; keep one of them"
    )
    assert "--field-map reference_answer=reference" in found["reference"]
    assert "--dataset ragas:FILE" in found["reference"]
    assert "what a system retrieved is not a label" in found["contexts"]
    assert found["refrence_answer"] == "unknown field; did you mean 'reference_answer'?"
    assert "--field-map reference_answer=ground_truths.0" in found["ground_truths"]


def test_a_nested_map_builds_gold_passages_from_flat_and_list_columns(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "x.jsonl",
        [
            {"q": "Q1?", "file": "a.md", "node": "a#1", "rel": ["d1", "d2"]},
            {"q": "Q2?", "node": "b#2", "rel": []},
        ],
    )
    flat = {"question": "q", "gold_passages.0.doc_id": "file", "gold_passages.0.chunk_id": "node"}
    first, second = load_dataset(str(path), flat)
    assert [(g.doc_id, g.chunk_id) for g in first.gold_passages] == [("a.md", "a#1")]
    assert [(g.doc_id, g.chunk_id) for g in second.gold_passages] == [(None, "b#2")]
    assert (first.case_id, second.case_id) == ("x-1", "x-2")
    spread = {"question": "q", "gold_passages.*.doc_id": "rel", "metadata.node": "node"}
    first, second = load_dataset(str(path), spread)
    assert [g.doc_id for g in first.gold_passages] == ["d1", "d2"]
    assert (second.gold_passages, second.metadata) == ([], {"node": "b#2"})
    assert first.metadata == {"node": "a#1", "file": "a.md"}


def test_a_mapped_optional_field_absent_is_absent_a_required_one_a_problem(
    tmp_path: Path,
) -> None:
    path = write_jsonl(
        tmp_path / "x.jsonl",
        [{"q": "Q1?", "a": "A1", "n": 3}, {"q": "Q2?", "a": None}, {"a": "A3"}],
    )
    field_map = {"question": "q", "reference_answer": "a", "min_citations": "n"}
    problems = validate_dataset(str(path), field_map)
    assert [str(p) for p in problems] == [
        f"{path}:3: field 'question': mapped source field 'q' is missing (a required field)"
    ]
    write_jsonl(path, [{"q": "Q1?", "a": "A1", "n": 3}, {"q": "Q2?", "a": None}])
    first, second = load_dataset(str(path), field_map)
    assert (first.reference_answer, first.min_citations) == ("A1", 3)
    assert (second.reference_answer, second.min_citations) == (None, None)


TABLE = [
    {
        "id": "r1",
        "question": "Q1?",
        "answer": "A1",
        "source_file": "a.md",
        "tags": ["x", "y"],
        "answerable": True,
    },
    {
        "id": "r2",
        "question": "Q2?",
        "answer": "A2",
        "source_file": "",
        "tags": [],
        "answerable": False,
    },
]
TABLE_MAP = {"reference_answer": "answer", "gold_passages.0.doc_id": "source_file"}


def _write_csv(path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(TABLE[0]))
        for row in TABLE:
            writer.writerow(
                [
                    ";".join(v)
                    if isinstance(v, list)
                    else str(v).lower()
                    if v in (True, False)
                    else v
                    for v in row.values()
                ]
            )


def _summary(spec: Path, field_map: dict[str, str] | None) -> list[tuple[Any, ...]]:
    return [
        (
            c.case_id,
            c.question,
            c.reference_answer,
            [g.doc_id for g in c.gold_passages],
            c.tags,
            c.answerable,
        )
        for c in load_dataset(str(spec), field_map)
    ]


def test_csv_and_parquet_read_the_same_cases_as_jsonl(tmp_path: Path) -> None:
    jsonl_rows = [{k: v for k, v in row.items() if v != ""} for row in TABLE]
    expected = [
        ("r1", "Q1?", "A1", ["a.md"], ["x", "y"], True),
        ("r2", "Q2?", "A2", [], [], False),
    ]
    assert _summary(write_jsonl(tmp_path / "t.jsonl", jsonl_rows), TABLE_MAP) == expected
    _write_csv(tmp_path / "t.csv")
    assert _summary(tmp_path / "t.csv", TABLE_MAP) == expected
    pyarrow = pytest.importorskip("pyarrow", reason="pyarrow is not installed: no Parquet check")
    import pyarrow.parquet as pq

    parquet_rows = [{**row, "source_file": row["source_file"] or None} for row in TABLE]
    pq.write_table(pyarrow.Table.from_pylist(parquet_rows), tmp_path / "t.parquet")
    assert _summary(tmp_path / "t.parquet", TABLE_MAP) == expected


def test_csv_and_parquet_without_a_map_are_read_by_their_own_names(tmp_path: Path) -> None:
    path = tmp_path / "own.csv"
    path.write_text(
        'case_id,question,reference_answer,gold_passages\nc1,Q?,A,"[{""doc_id"": ""d""}]"\n',
        encoding="utf-8",
    )
    [case] = load_dataset(str(path))
    assert (case.case_id, case.reference_answer, case.gold_passages[0].doc_id) == ("c1", "A", "d")
    # no map: columns with a safe reading are read by it (datasets.readings), the same in
    # CSV and Parquet; others are problems (with their hint), once per column
    _write_csv(tmp_path / "t.csv")
    expected = [("r1", "A1", ["a.md"]), ("r2", "A2", [])]
    csv_cases = load_dataset(str(tmp_path / "t.csv"))
    assert [
        (c.case_id, c.reference_answer, [g.doc_id for g in c.gold_passages]) for c in csv_cases
    ] == expected
    recorded = tmp_path / "recorded.csv"
    recorded.write_text("id,question,answer,response\nr1,Q?,A,B\nr2,Q?,A,B\n", encoding="utf-8")
    csv_found = {(p.line, p.field, p.count) for p in validate_dataset(str(recorded))}
    assert csv_found == {(2, "answer", 2), (2, "response", 2)}
    pyarrow = pytest.importorskip("pyarrow", reason="pyarrow is not installed: no Parquet check")
    import pyarrow.parquet as pq

    parquet_rows = [{**row, "source_file": row["source_file"] or None} for row in TABLE]
    pq.write_table(pyarrow.Table.from_pylist(parquet_rows), tmp_path / "t.parquet")
    parquet_cases = load_dataset(str(tmp_path / "t.parquet"))
    assert [
        (c.case_id, c.reference_answer, [g.doc_id for g in c.gold_passages]) for c in parquet_cases
    ] == expected
    recorded_rows = [{"id": "r1", "question": "Q?", "answer": "A", "response": "B"}]
    pq.write_table(pyarrow.Table.from_pylist(recorded_rows), tmp_path / "recorded.parquet")
    parquet_found = {
        (p.line, p.field, p.count) for p in validate_dataset(str(tmp_path / "recorded.parquet"))
    }
    assert parquet_found == {(1, "answer", 1), (1, "response", 1)}


# the field-map parser

_NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_.*0123456789=,\\ ", max_size=30)


@settings(max_examples=300, deadline=None)
@given(st.lists(_NAME, max_size=4))
def test_the_field_map_parser_never_crashes_and_names_the_bad_entry(values: list[str]) -> None:
    try:
        parsed = parse_field_map(values)
    except FieldMapError as exc:
        # every error starts with the entry it is about, quoted as Python quotes it
        quoted = re.match(r"""^('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""", str(exc))
        assert quoted is not None, str(exc)
        named = ast.literal_eval(quoted.group(1)).replace(" ", "")
        given = [*values, *(e for v in values for e in _split_entries(v))]
        assert any(named in g.replace(" ", "") for g in given), (named, values)
        return
    for target, source in parsed.items():
        assert target and source and target == target.strip() and source == source.strip()


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("question", "'question': expected FIELD=SOURCE"),
        ("question=q,answer", "'answer': expected FIELD=SOURCE"),
        ("gold_passages.x.doc_id=f", "'gold_passages' is a list"),
        ("gold_passages.0.source=f", "'source' is not a field of 'gold_passages.0'"),
        ("question.x=q", "'question' holds a string"),
        ("reference_anwser=a", "did you mean 'reference_answer'?"),
        ("gold_passages.*.doc_id=a,gold_passages.0.chunk_id=b", "either spread"),
        ("ground_truth=a,reference_answer=b", "maps the same field"),
        ("question=", "the source (after '=') is empty"),
    ],
)
def test_field_map_errors_name_the_entry(value: str, named: str) -> None:
    with pytest.raises(FieldMapError) as error:
        parse_field_map([value])
    assert named in str(error.value)


def test_a_comma_inside_a_column_name_is_escaped() -> None:
    assert parse_field_map([r"question=Question\, full,case_id=id"]) == {
        "question": "Question, full",
        "case_id": "id",
    }


def test_a_bad_map_in_a_config_is_a_dataset_problem(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "x.jsonl", [{"q": "Q?"}])
    with pytest.raises(DatasetError) as error:
        load_dataset(str(path), {"questoin": "q"})
    assert "--field-map: 'questoin=q': 'questoin' is not a case field; did you mean" in str(
        error.value
    )
    assert json.dumps(str(error.value))  # one printable message


def test_yaml_reads_a_map_and_a_missing_source_is_one_problem_per_file(tmp_path: Path) -> None:
    path = tmp_path / "y.yaml"
    path.write_text("- id: a\n  q: Q?\n  src: s.md\n- id: b\n  q: Q2?\n", encoding="utf-8")
    first, second = load_dataset(str(path), {"question": "q", "gold_passages.0.rel_path": "src"})
    assert ([g.rel_path for g in first.gold_passages], second.gold_passages) == (["s.md"], [])
    [problem] = validate_dataset(str(path), {"question": "text"})
    assert str(problem) == (
        f"{path}:1: field 'question': mapped source field 'text' is missing (a required field) "
        "[in 2 records; the first is here]"
    )


def test_parquet_struct_keys_a_row_lacks_are_not_given(tmp_path: Path) -> None:
    pyarrow = pytest.importorskip("pyarrow", reason="pyarrow is not installed: no Parquet check")
    import pyarrow.parquet as pq

    rows = [
        {"id": "a", "question": "Q?", "gold_passages": [{"doc_id": "d", "snippets": ["x"]}]},
        {"id": "b", "question": "Q2?", "gold_passages": [{"chunk_id": "c"}]},
    ]
    pq.write_table(pyarrow.Table.from_pylist(rows), tmp_path / "g.parquet")
    first, second = load_dataset(str(tmp_path / "g.parquet"))
    assert [(g.doc_id, g.chunk_id, g.snippets) for g in first.gold_passages] == [("d", None, ["x"])]
    assert [(g.doc_id, g.chunk_id, g.snippets) for g in second.gold_passages] == [(None, "c", [])]

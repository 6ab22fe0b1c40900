"""Trust at the edges: every bad dataset or replay file is a message naming file:line, case and
field, never a traceback and never a silently wrong value."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.config import TargetConfig
from ragmeter.datasets import DatasetError, load_dataset, load_datasets, validate_dataset
from ragmeter.datasets.jsonl import read_jsonl, split_lines
from ragmeter.datasets.squad import import_squad
from ragmeter.datasets.trec import read_qrels, read_run
from ragmeter.errors import InputError
from ragmeter.models import Case
from ragmeter.targets import TargetError, build_target
from ragmeter.targets.replay import ReplayTarget
from ragmeter.yamlio import YamlError, load_yaml
from tests.conftest import write_jsonl

GOOD = {"case_id": "c1", "question": "How many vacation days?"}
SEPARATORS = "\u2028\u2029\u0085"


def validate_cli(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """`ragmeter datasets validate PATH` as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", "datasets", "validate", str(path), *extra],
        capture_output=True,
        text=True,
        cwd=path.parent,
        timeout=600,
    )


def assert_refused(result: subprocess.CompletedProcess[str], *messages: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    for message in messages:
        assert message in result.stdout, result.stdout


def label_folder(tmp_path: Path, *labels: dict[str, object]) -> Path:
    write_jsonl(tmp_path / "cases.jsonl", [{"case_id": "q1", "query": "Vacation policy?"}])
    write_jsonl(tmp_path / "retrieval_labels.jsonl", list(labels))
    return tmp_path / "retrieval_labels.jsonl"


def problem_texts(spec: str | Path, field_map: dict[str, str] | None = None) -> list[str]:
    return [str(p) for p in validate_dataset(str(spec), field_map)]


# 1. a string where a list of ids belongs is a problem, not 21 one-letter gold passages


def test_relevant_docs_as_a_string_is_a_problem_naming_the_field(tmp_path: Path) -> None:
    labels = label_folder(tmp_path, {"case_id": "q1", "relevant_docs": "handbook/leave-policy"})
    [problem] = validate_dataset(str(tmp_path))
    assert (problem.file, problem.line, problem.field, problem.case_id) == (
        str(labels),
        1,
        "relevant_docs",
        "q1",
    )
    assert 'write ["handbook/leave-policy"]' in problem.message
    assert_refused(
        validate_cli(tmp_path),
        f"{labels}:1: case q1: field 'relevant_docs': must be a list of document ids, "
        "not a single string",
    )


def test_relevant_chunks_as_a_string_is_a_problem_too(tmp_path: Path) -> None:
    label_folder(tmp_path, {"case_id": "q1", "relevant_chunks": "a#b"})
    assert [(p.field, p.line) for p in validate_dataset(str(tmp_path))] == [("relevant_chunks", 1)]


def test_retrieval_grades_are_checked_where_they_are_written(tmp_path: Path) -> None:
    labels = label_folder(
        tmp_path,
        {
            "case_id": "q1",
            "relevant_docs": ["a", "a", 7],
            "relevance_grades": {"a": True, "b": 2},
            "chunk_relevance_grades": {"a#x": 2.5, "a#y": 3},
        },
    )
    found = {(p.file, p.line, p.field): p.message for p in validate_dataset(str(tmp_path))}
    assert set(found) == {
        (str(labels), 1, "relevant_docs.1"),
        (str(labels), 1, "relevant_docs.2"),
        (str(labels), 1, "relevance_grades.a"),
        (str(labels), 1, "relevance_grades.b"),
        (str(labels), 1, "chunk_relevance_grades.a#x"),
    }
    assert "listed twice" in found[(str(labels), 1, "relevant_docs.1")]
    assert "not in relevant_docs" in found[(str(labels), 1, "relevance_grades.b")]


def test_grades_alone_still_name_the_relevant_ids(tmp_path: Path) -> None:
    label_folder(tmp_path, {"case_id": "q1", "relevance_grades": {"d1": 3, "d2": 0}})
    [case] = load_dataset(str(tmp_path))
    assert [(p.doc_id, p.grade) for p in case.gold_passages] == [("d1", 3), ("d2", 0)]


def test_retrieval_labels_add_to_gold_supports_given_under_the_alias(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "cases.jsonl",
        [{"case_id": "q1", "query": "q", "gold_supports": [{"doc_id": "d0", "grade": 2}]}],
    )
    write_jsonl(tmp_path / "retrieval_labels.jsonl", [{"case_id": "q1", "relevant_docs": ["d1"]}])
    [case] = load_dataset(str(tmp_path))
    assert [(p.doc_id, p.grade) for p in case.gold_passages] == [("d0", 2), ("d1", 1)]


def test_a_label_given_twice_names_both_places(tmp_path: Path) -> None:
    labels = label_folder(
        tmp_path,
        {"case_id": "q1", "relevant_docs": ["d1"]},
        {"case_id": "q1", "relevant_docs": ["d1"]},
    )
    write_jsonl(tmp_path / "context_labels.jsonl", [{"case_id": "q1", "query": "other"}])
    found = {(p.file, p.line, p.field): p.message for p in validate_dataset(str(tmp_path))}
    assert found == {
        (str(labels), 2, "relevant_docs"): (
            "already given for this case at retrieval_labels.jsonl:1"
        ),
        (str(tmp_path / "context_labels.jsonl"), 1, "query"): (
            "already given for this case at cases.jsonl:1"
        ),
    }


# 2. U+2028 / U+2029 / U+0085 inside a string are not line breaks


def test_unicode_line_separators_inside_strings_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "sep.jsonl"
    rows = [{"case_id": f"c{i}", "question": f"one{sep}two"} for i, sep in enumerate(SEPARATORS)]
    path.write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\r\n" for row in rows), encoding="utf-8"
    )
    cases = load_dataset(str(path))
    assert [c.question for c in cases] == [f"one{sep}two" for sep in SEPARATORS]


def test_unicode_line_separators_in_a_mapped_jsonl_and_a_label_folder(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text(json.dumps({"q": "a\u2028b"}, ensure_ascii=False) + "\n", "utf-8")
    [case] = load_dataset(str(foreign), {"question": "q"})
    assert case.question == "a\u2028b"
    folder = tmp_path / "labels"
    folder.mkdir()
    (folder / "cases.jsonl").write_text(
        json.dumps({"case_id": "q1", "query": "x\u2029y"}, ensure_ascii=False) + "\n", "utf-8"
    )
    [case] = load_dataset(str(folder))
    assert case.question == "x\u2029y"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.text(), st.text() | st.integers() | st.booleans())))
def test_any_string_content_survives_a_jsonl_round_trip(rows: list[dict[str, object]]) -> None:
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    lines = split_lines(text)
    assert lines[-1] == ""
    assert [json.loads(line) for line in lines[:-1]] == rows


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)) | st.sampled_from(SEPARATORS)))
def test_read_jsonl_keeps_every_question_text(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    path = tmp_path_factory.mktemp("rt") / "rt.jsonl"
    path.write_text(json.dumps({"v": text}, ensure_ascii=False) + "\r\n", encoding="utf-8")
    problems: list = []
    assert read_jsonl(path, problems) == [(1, {"v": text})]
    assert problems == []


# 3. a case recorded twice in a replay file


def test_replay_case_recorded_twice_names_both_lines(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "r.jsonl",
        [
            {"case_id": "c1", "response": {"answer": "first"}},
            {"case_id": "c2", "response": {"answer": "other"}},
            {"case_id": "c1", "response": {"answer": "second"}},
        ],
    )
    with pytest.raises(DatasetError) as error:
        ReplayTarget(TargetConfig(type="replay", path=str(path)))
    [problem] = error.value.problems
    assert (problem.line, problem.field, problem.case_id) == (3, "case_id", "c1")
    assert "first at line 1" in problem.message
    assert "in the replay file" in str(error.value)


def test_dataset_case_id_used_twice_names_the_first_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [GOOD, {"id": "c1", "query": "again"}])
    assert problem_texts(path) == [
        f"{path}:2: case c1: field 'case_id': duplicate case_id (first defined at line 1)"
    ]


def test_replay_lines_are_checked_when_the_target_is_built(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(
        '{"case_id": "a", "response": "just text"}\n'
        '{"case_id": " ", "answer": "x"}\n'
        "[1, 2]\n"
        '{"case_id": "b", "answer": "x", "answer": "y"}\n'
        '{"case_id": "c", "answer": "\\ud800"}\n',
        encoding="utf-8",
    )
    with pytest.raises(DatasetError) as error:
        build_target(TargetConfig(type="replay", path=str(path)))
    assert [(p.line, p.field) for p in error.value.problems] == [
        (1, "response"),
        (2, "case_id"),
        (3, None),
        (4, "answer"),
        (5, "answer"),
    ]


def test_replay_reads_unicode_separators_and_names_a_bad_response_by_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(
        json.dumps({"case_id": "a", "response": {"answer": "x\u2028y"}}, ensure_ascii=False)
        + "\n"
        + '{"case_id": "b", "response": {"answer": "z", "confidence": NaN}}\n',
        encoding="utf-8",
    )
    target = ReplayTarget(TargetConfig(type="replay", path=str(path)))
    response = asyncio.run(target.query(Case(case_id="a", question="q")))
    assert response.answer == "x\u2028y"
    with pytest.raises(TargetError) as error:
        asyncio.run(target.query(Case(case_id="b", question="q")))
    assert error.value.error_type == "invalid_response"
    assert error.value.message.startswith(f"{path}:2: case b: field 'response.confidence': ")


# 4. duplicate YAML keys


def test_load_yaml_refuses_a_duplicate_key_naming_source_and_line(tmp_path: Path) -> None:
    with pytest.raises(YamlError) as error:
        load_yaml("judge: a\nmetrics: [x]\njudge: b\n", "ragmeter.yaml")
    assert str(error.value) == "ragmeter.yaml:3: duplicate key 'judge' (first at line 1)"
    assert isinstance(error.value, InputError) and error.value.line == 3
    with pytest.raises(YamlError, match=r"^t\.yaml:2: duplicate key 'b' \(first at line 2\)"):
        load_yaml("a:\n  {b: 1, b: 2}\n", "t.yaml")
    path = tmp_path / "c.yaml"
    path.write_text("x: 1\n", encoding="utf-8")
    assert load_yaml(path, "c.yaml") == {"x": 1}
    assert load_yaml("", "empty.yaml") is None


def test_load_yaml_errors_read_source_line_message(tmp_path: Path) -> None:
    with pytest.raises(YamlError, match=r"^t\.yaml:2: invalid YAML: "):
        load_yaml("a: 1\n  b: [\n", "t.yaml")
    with pytest.raises(YamlError, match=r"^t\.yaml: nested too deeply"):
        load_yaml("[" * 5000, "t.yaml")
    with pytest.raises(YamlError, match="no such file"):
        load_yaml(tmp_path / "absent.yaml", "absent.yaml")
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n" for p, n in zip("abcde", "bcdef", strict=True)
    )
    with pytest.raises(YamlError, match="more than 100000 values"):
        load_yaml(laughs, "lol.yaml")


def test_load_yaml_allows_a_key_that_overrides_a_merged_one() -> None:
    text = "base: &b {x: 1, y: 2}\ntop: {<<: *b, x: 3}\nlater: {<<: *b}\n"
    assert load_yaml(text, "t.yaml")["top"] == {"x": 3, "y": 2}
    # a merged mapping that is itself merged again: still no duplicate
    text = "m0: &m {<<: {x: 1}, x: 2}\nuse: {<<: *m}\n"
    assert load_yaml(text, "t.yaml")["use"] == {"x": 2}


def test_yaml_dataset_duplicate_key_names_case_and_field(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(
        "cases:\n"
        "  - case_id: a\n"
        "    question: first\n"
        "    question: second\n"
        "  - case_id: b\n"
        "    question: q\n"
        "    gold_passages:\n"
        "      - {doc_id: d1, grade: 3, grade: 1}\n",
        encoding="utf-8",
    )
    assert_refused(
        validate_cli(path),
        f"{path}:4: case a: field 'question': duplicate key 'question' (first at line 3)",
        f"{path}:8: case b: field 'gold_passages.0.grade': duplicate key 'grade'",
    )


def test_yaml_dataset_numeric_looking_ids_and_alias_cycles(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(
        "- {case_id: 010, question: q}\n- {case_id: '010', question: q}\n- {id: 7, question: q}\n",
        encoding="utf-8",
    )
    assert problem_texts(path) == [
        f"{path}:1: field 'case_id': 010 reads as the number 8 in YAML; put the id in quotes "
        "('010')"
    ]
    path.write_text("- &a {case_id: z, question: q, metadata: {me: *a}}\n", encoding="utf-8")
    assert problem_texts(path) == [f"{path}:1: this case contains itself through a YAML alias"]


def test_duplicate_key_in_a_json_line_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"case_id": "a", "question": "q", "gold_passages": [{"doc_id": "x", "grade": 3, '
        '"grade": 0}]}\n',
        encoding="utf-8",
    )
    assert problem_texts(path) == [
        f"{path}:1: case a: field 'gold_passages.0.grade': key given twice in one object "
        "(JSON would silently keep the last)"
    ]


def test_a_field_and_its_alias_together_say_so(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "d.jsonl",
        [
            {**GOOD, "query": "other"},
            {
                "id": "c2",
                "question": "q",
                "gold_passages": [{"doc_id": "d", "grade": 3, "relevance": 1}],
            },
        ],
    )
    assert problem_texts(path) == [
        f"{path}:1: case c1: field 'query': another name of 'question', which this case "
        "already gives; keep one of them",
        f"{path}:2: case c2: field 'gold_passages.0.relevance': another name of 'grade', which "
        "is given too; keep one of them",
    ]


# 5. deep nesting and a list where a mapping belongs: problems, not tracebacks


def test_deep_nesting_is_a_problem_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(
        json.dumps(GOOD) + "\n" + '{"case_id": "d", "metadata": ' + "[" * 5000 + "]" * 5000 + "}\n",
        encoding="utf-8",
    )
    assert_refused(validate_cli(path), f"{path}:2: invalid JSON: nested too deeply to read")
    # deep enough to parse, too deep to store
    path.write_text(
        '{"case_id": "d", "question": "q", "metadata": {"x": ' + "[" * 300 + "]" * 300 + "}}\n",
        encoding="utf-8",
    )
    [problem] = validate_dataset(str(path))
    assert problem.line == 1 and problem.field is not None
    assert problem.field.startswith("metadata.x.0.0")
    assert "nested more than 100 levels deep" in problem.message


def test_relevance_grades_as_a_list_is_a_problem(tmp_path: Path) -> None:
    labels = label_folder(
        tmp_path, {"case_id": "q1", "relevant_docs": ["d1"], "relevance_grades": ["d1"]}
    )
    assert_refused(
        validate_cli(tmp_path),
        f"{labels}:1: case q1: field 'relevance_grades': must be a mapping of document id to "
        "grade 0-3 (got ['d1'])",
    )


def test_a_huge_integer_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text('{"case_id": "a", "question": "q", "min_citations": ' + "9" * 5000 + "}\n")
    [problem] = validate_dataset(str(path))
    assert (problem.line, problem.field) == (1, None)
    assert problem.message.startswith("invalid JSON: Exceeds the limit")


# 6. a replay file that does not exist


def test_missing_replay_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^replay file missing\.jsonl does not exist$"):
        build_target(TargetConfig(type="replay", path="missing.jsonl"))
    with pytest.raises(InputError, match="is a folder"):
        build_target(TargetConfig(type="replay", path=str(tmp_path)))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="holds no recorded responses"):
        build_target(TargetConfig(type="replay", path=str(empty)))
    with pytest.raises(InputError, match="needs a path"):
        build_target(TargetConfig(type="replay"))


def test_dataset_error_is_an_input_error() -> None:
    assert issubclass(DatasetError, InputError) and issubclass(DatasetError, ValueError)


# 7. NaN and Infinity


def test_nan_and_infinity_fail_validate_naming_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "nan.jsonl"
    path.write_text(
        '{"case_id": "a", "question": "q", "expected_number": {"value": NaN}}\n'
        '{"case_id": "b", "question": "q", "expected_number": {"value": Infinity}}\n'
        '{"case_id": "c", "question": "q", "metadata": {"score": -Infinity}}\n',
        encoding="utf-8",
    )
    assert [(p.line, p.field, p.case_id) for p in validate_dataset(str(path))] == [
        (1, "expected_number.value", "a"),
        (2, "expected_number.value", "b"),
        (3, "metadata.score", "c"),
    ]
    assert_refused(
        validate_cli(path),
        f"{path}:1: case a: field 'expected_number.value': Input should be a finite number",
        f"{path}:2: case b: field 'expected_number.value': Input should be a finite number",
        f"{path}:3: case c: field 'metadata.score': -Infinity is not a finite number",
    )


def test_nan_in_a_yaml_dataset_and_a_label_file(tmp_path: Path) -> None:
    path = tmp_path / "n.yaml"
    path.write_text("- {case_id: a, question: q, metadata: {w: .nan}}\n", encoding="utf-8")
    assert [(p.line, p.field) for p in validate_dataset(str(path))] == [(1, "metadata.w")]
    folder = tmp_path / "f"
    folder.mkdir()
    labels = folder / "retrieval_labels.jsonl"
    write_jsonl(folder / "cases.jsonl", [{"case_id": "q1", "query": "q"}])
    labels.write_text('{"case_id": "q1", "relevance_grades": {"d": NaN}}\n', encoding="utf-8")
    [problem] = validate_dataset(str(folder))
    assert (problem.file, problem.line, problem.field) == (str(labels), 1, "relevance_grades.d")


def test_unpaired_surrogates_cannot_reach_the_store(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"case_id": "a", "question": "q", "reference_answer": "x\\udc80"}\n')
    [problem] = validate_dataset(str(path))
    assert (problem.line, problem.field) == (1, "reference_answer")
    assert "unpaired surrogate" in problem.message
    path.write_text('{"case_id": "a", "question": "q", "metadata": {"k\\udc80": 1}}\n')
    assert_refused(
        validate_cli(path), f"{path}:1: case a: field 'metadata.k\\udc80': the key holds an"
    )


def test_problems_print_on_one_line_without_terminal_escapes(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text(
        '{"case_id": "a\\u001b[31m", "question": "q", "metadata": {"x\\u2028\\u001b[2J": NaN}}\n'
    )
    [problem] = validate_dataset(str(path))
    assert str(problem) == (
        f"{path}:1: case 'a\\x1b[31m': field 'metadata.x\\u2028\\x1b[2J': NaN is not a "
        "finite number (NaN and Infinity cannot be scored or stored); give a finite number"
    )


# 8. an empty dataset is an error


@pytest.mark.parametrize(
    ("name", "text"),
    [("empty.jsonl", ""), ("blank.jsonl", "\n  \n\r\n"), ("e.yaml", ""), ("c.yaml", "cases: []\n")],
)
def test_an_empty_dataset_is_an_error(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError, match="holds no cases"):
        load_dataset(str(path))
    with pytest.raises(DatasetError, match="holds no cases"):
        load_datasets([str(write_jsonl(tmp_path / "ok.jsonl", [GOOD])), str(path)])
    assert_refused(validate_cli(path), f"{path}: holds no cases")
    assert "ok:" not in validate_cli(path).stdout


def test_an_empty_label_folder_and_csv_are_errors_too(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"cases\.jsonl: holds no cases"):
        load_dataset(str(tmp_path))
    csv_file = tmp_path / "x.csv"
    csv_file.write_text("qid,text\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="holds no cases"):
        load_dataset(str(csv_file), {"question": "text"})


def test_the_same_dataset_twice_is_one_problem(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [GOOD])
    with pytest.raises(DatasetError) as error:
        load_datasets([str(path), str(path)])
    assert [p.message for p in error.value.problems] == ["this dataset is given twice"]


# 9. blank ids and questions read well


def test_blank_ids_and_questions_read_well(tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_text(
        '{"case_id": "  ", "question": "q"}\n{"case_id": "b", "question": " \\t"}\n'
        '{"case_id": " c ", "question": ""}\n',
        encoding="utf-8",
    )
    assert_refused(
        validate_cli(path),
        f"{path}:1: field 'case_id': must not be blank (only white space) (got '  ')",
        f"{path}:2: case b: field 'question': must not be blank (only white space) (got ' \\t')",
        f"{path}:3: case ' c ': field 'question': String should have at least 1 character",
    )


# mapped files: CSV and foreign JSONL


def test_csv_edges_bom_header_ragged_rows_and_empty_cells(tmp_path: Path) -> None:
    path = tmp_path / "f.csv"
    path.write_text(
        "\ufeffqid,text,ok\n1,What?,\n2,Why?,no\n3,Who\n4,,yes\n5,How?,perhaps\n",
        encoding="utf-8",
    )
    field_map = {"case_id": "qid", "question": "text", "answerable": "ok"}
    found = [(p.line, p.field) for p in validate_dataset(str(path), field_map)]
    assert found == [(4, None), (5, "question"), (6, "answerable")]
    path.write_text("\ufeffqid,text,ok\n1,What?,\n2,Why?,no\n", encoding="utf-8")
    first, second = load_dataset(str(path), field_map)
    assert (first.case_id, first.answerable, second.answerable) == ("1", True, False)
    path.write_text("q,q\na,b\n", encoding="utf-8")
    first_problem = validate_dataset(str(path), {"question": "q"})[0]
    assert str(first_problem) == f"{path}:1: column 'q' appears twice in the header"


def test_mapped_jsonl_list_field_given_a_string_is_a_problem(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "f.jsonl", [{"q": "x", "claims": "A; B"}])
    [problem] = validate_dataset(str(path), {"question": "q", "expected_claims": "claims"})
    assert (problem.line, problem.field) == (1, "expected_claims")
    assert "needs a list" in problem.message


# TREC and SQuAD files


def test_trec_files_refuse_nan_scores_and_twice_judged_documents(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.write_text("q1 Q0 d1 1 nan t\nq1 Q0 d2 2 inf t\nq1 Q0 d3 3 0.5 t\n")
    with pytest.raises(DatasetError) as error:
        read_run(run)
    assert [(p.line, p.field) for p in error.value.problems] == [(1, "score"), (2, "score")]
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\nq1 0 d1 0\n")
    with pytest.raises(DatasetError, match=r"judged twice .*first at line 1"):
        read_qrels(qrels)
    qrels.write_bytes(b"q1 0 d1 \xff\n")
    with pytest.raises(DatasetError, match="not UTF-8"):
        read_qrels(qrels)


def test_malformed_squad_file_names_the_json_path(tmp_path: Path) -> None:
    source = tmp_path / "s.json"
    source.write_text(
        json.dumps(
            {
                "data": [
                    {
                        "title": "T",
                        "paragraphs": [
                            {"context": "c", "qas": [{"id": "1", "question": " "}, 5]},
                            {"qas": []},
                        ],
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    with pytest.raises(DatasetError) as error:
        import_squad(source, tmp_path / "out")
    assert [p.field for p in error.value.problems] == [
        "data.0.paragraphs.0.qas.0.question",
        "data.0.paragraphs.0.qas.1",
        "data.0.paragraphs.1.context",
    ]

"""Columns read by their meaning where the record leaves no doubt (``datasets.readings``):
hand-written records, the user's file without a map, and properties over any record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from ragmeter.cli.main import main
from ragmeter.datasets import load_dataset, validate_dataset
from ragmeter.datasets.readings import (
    ANSWER_NAMES,
    CHUNK_LISTS,
    CHUNK_NAMES,
    DOCUMENT_LISTS,
    DOCUMENT_NAMES,
    RECORDED_NAMES,
    Reading,
    dataset_readings,
    read_other_names,
)
from tests.conftest import write_jsonl
from tests.datasets.test_fieldmap import user_records


def test_the_users_file_loads_without_a_map_and_says_what_it_read(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "cases.jsonl", user_records())
    cases = load_dataset(str(path))
    assert len(cases) == 26
    first, last = cases[0], cases[-1]
    assert (first.case_id, first.reference_answer) == ("q01", "Section 1 says 1.")
    assert [(g.doc_id, g.chunk_id) for g in first.gold_passages] == [("doc1.md", "node-1")]
    assert first.metadata == {}
    assert (last.answerable, last.gold_passages, last.reference_answer) == (
        False,
        [],
        "Section 26 says 26.",
    )
    assert dataset_readings(str(path), None) == [
        Reading("answer", "reference_answer"),
        Reading("source_file", "gold_passages.0.doc_id"),
        Reading("source_node", "gold_passages.0.chunk_id"),
    ]
    assert dataset_readings(str(path), {"question": "question"}) == []  # a map decides
    shown = CliRunner().invoke(main, ["datasets", "validate", str(path)])
    assert shown.exit_code == 0, shown.output
    assert shown.output.strip() == (
        "ok: 26 cases; read answer -> reference_answer, source_file -> gold_passages.0.doc_id, "
        "source_node -> gold_passages.0.chunk_id"
    )


def test_a_yaml_file_reads_the_same(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(
        "- {id: a, question: 'Q?', reference: A, relevant_docs: [d1, d2]}\n", encoding="utf-8"
    )
    [case] = load_dataset(str(path))
    assert case.reference_answer == "A"
    assert [g.doc_id for g in case.gold_passages] == ["d1", "d2"]
    assert dataset_readings(str(path), None) == [
        Reading("reference", "reference_answer"),
        Reading("relevant_docs", "gold_passages.*.doc_id"),
    ]


def _read(record: dict[str, Any]) -> list[tuple[str, str]]:
    return [(r.source, r.target) for r in read_other_names(record)[1]]


def test_no_reading_where_the_record_leaves_a_doubt() -> None:
    base = {"id": "a", "question": "Q?"}
    # a recorded row: 'answer' is what the system said
    assert _read({**base, "answer": "A", "contexts": ["c"]}) == []
    assert _read({**base, "answer": "A", "response": "R"}) == []
    # the expected answer is already given under its own name (or an alias)
    assert _read({**base, "answer": "A", "ground_truth": "G"}) == []
    # two candidates for one field
    assert _read({**base, "answer": "A", "reference": "R"}) == []
    assert _read({**base, "source_file": "f", "doc_id": "d"}) == []
    assert _read({**base, "relevant_docs": ["a"], "chunk_ids": ["c"]}) == []
    assert _read({**base, "source_file": "f", "relevant_docs": ["a"]}) == []
    # gold passages given: nothing is added to them
    assert _read({**base, "source_file": "f", "gold_passages": [{"doc_id": "g"}]}) == []
    # not an id
    assert _read({**base, "source_file": ""}) == []
    assert _read({**base, "source_file": 3}) == []
    assert _read({**base, "relevant_docs": []}) == []
    # each is then an unknown field with its hint (tests.datasets.test_fieldmap)
    assert _read({**base, "answer": "A"}) == [("answer", "reference_answer")]
    assert _read({**base, "chunk_id": "c"}) == [("chunk_id", "gold_passages.0.chunk_id")]


def test_a_null_in_a_read_column_is_a_value_not_given(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "n.jsonl",
        [
            {"id": "a", "question": "Q?", "answer": "A", "source_file": None},
            {"id": "b", "question": "Q?", "answer": None, "contexts": ["c"]},
        ],
    )
    found = {p.field for p in validate_dataset(str(path))}
    assert found == {"contexts"}  # 'a' loads without gold; 'b' is a recorded row


ids = st.text(st.characters(codec="utf-8"), min_size=0, max_size=5)
values = st.one_of(st.none(), st.integers(), ids, st.lists(ids, max_size=3))
names = st.sampled_from(
    sorted(
        {*ANSWER_NAMES, *RECORDED_NAMES, *DOCUMENT_NAMES, *CHUNK_NAMES, *DOCUMENT_LISTS}
        | {*CHUNK_LISTS, "ground_truth", "gold_passages", "question", "metadata"}
    )
)


@given(st.dictionaries(names, values, max_size=6))
def test_a_reading_moves_values_and_never_invents_or_loses_one(record: dict[str, Any]) -> None:
    moved, readings = read_other_names(record)
    sources = {r.source for r in readings}
    for key, value in record.items():
        if key in sources:
            assert key not in moved
        elif value is not None:
            assert moved[key] == value  # every other value is kept as it was
    answer = [r for r in readings if r.target == "reference_answer"]
    if answer:
        assert not (RECORDED_NAMES | {"ground_truth"}) & record.keys()
        assert moved["reference_answer"] == record[answer[0].source]
    gold = [r for r in readings if r.target.startswith("gold_passages")]
    if gold:
        assert "gold_passages" not in record
        read_ids = sorted(
            str(value)
            for passage in moved["gold_passages"]
            for value in passage.values()  # type: ignore[union-attr]
        )
        given_ids: list[str] = []
        for reading in gold:
            value = record[reading.source]
            given_ids.extend(value if isinstance(value, list) else [value])
        assert read_ids == sorted(given_ids)

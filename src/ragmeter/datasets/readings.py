"""Columns of a hand-written dataset read by what they mean where the record leaves no doubt.

A RAG engineer's own file often looks like ``{"id", "question", "answer", "source_file",
"source_node"}``. Each of these names has a safe reading when the record itself rules out the
other one, and only then:

- ``answer`` (or ``reference``) is the expected answer unless the record also holds an
  expected answer under its own name, or what a system returned (``contexts``, ``response``,
  ...): then it is a recorded RAGAS-style row and the name stays an unknown field whose
  message says how to import it (:mod:`ragmeter.datasets.hints`);
- one gold-document column (``source_file``, ``doc_id``, ...) and/or one gold-chunk column
  (``source_node``, ``chunk_id``, ...) is one gold passage; one list column (``relevant_docs``,
  ``chunk_ids``, ...) is one gold passage per id; never beside ``gold_passages``, never two of
  a kind (which one would be gold?).

A reading never relaxes the schema: every other name is checked as in any native file. The
readings of a record are returned so the run can say what it read (``ragmeter eval`` prints
them before the first question; ``--field-map`` reads a file otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from ragmeter.datasets.fieldmap import field_names
from ragmeter.models import Case

ANSWER_NAMES = ("answer", "reference")
RECORDED_NAMES = frozenset(
    {
        "contexts",
        "retrieved_contexts",
        "retrieval_context",
        "response",
        "actual_output",
        "generated_answer",
        "prediction",
    }
)
DOCUMENT_NAMES = ("source_file", "source_doc", "source_document", "doc_id", "document_id")
CHUNK_NAMES = ("source_node", "source_chunk", "chunk_id", "node_id", "passage_id")
DOCUMENT_LISTS = (
    "relevant_docs",
    "relevant_doc_ids",
    "relevant_documents",
    "gold_docs",
    "gold_doc_ids",
    "doc_ids",
    "document_ids",
)
CHUNK_LISTS = ("relevant_chunks", "relevant_chunk_ids", "chunk_ids")
READABLE = frozenset((*ANSWER_NAMES, *DOCUMENT_NAMES, *CHUNK_NAMES, *DOCUMENT_LISTS, *CHUNK_LISTS))

__all__ = ["Reading", "describe_readings", "read_other_names"]


@dataclass(frozen=True)
class Reading:
    """One column read as a case field: ``source`` in the file, ``target`` in the case."""

    source: str
    target: str


@cache
def _names_of(field: str) -> frozenset[str]:
    """The input names of a case field (its name and aliases): fixed, so read once."""
    return frozenset(name for name, owner in field_names(Case).items() if owner == field)


def _present(record: dict[str, Any], names: tuple[str, ...]) -> list[str]:
    return [name for name in names if name in record]


def _is_id(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _answer(record: dict[str, Any]) -> Reading | None:
    given = _present(record, ANSWER_NAMES)
    if len(given) != 1 or not isinstance(record[given[0]], str):
        return None
    if _names_of("reference_answer") & record.keys() or RECORDED_NAMES & record.keys():
        return None
    return Reading(given[0], "reference_answer")


def _gold(record: dict[str, Any]) -> tuple[list[dict[str, str]], list[Reading]] | None:
    if _names_of("gold_passages") & record.keys():
        return None
    documents, chunks = _present(record, DOCUMENT_NAMES), _present(record, CHUNK_NAMES)
    document_lists, chunk_lists = _present(record, DOCUMENT_LISTS), _present(record, CHUNK_LISTS)
    singles = documents or chunks
    if singles and not (document_lists or chunk_lists):
        if len(documents) > 1 or len(chunks) > 1:
            return None
        passage: dict[str, str] = {}
        readings = []
        for names, key in ((documents, "doc_id"), (chunks, "chunk_id")):
            if names and _is_id(record[names[0]]):
                passage[key] = record[names[0]]
                readings.append(Reading(names[0], f"gold_passages.0.{key}"))
            elif names:
                return None
        return [passage], readings
    if (document_lists and chunk_lists) or len(document_lists + chunk_lists) != 1 or singles:
        return None
    (name,) = document_lists + chunk_lists
    key = "doc_id" if document_lists else "chunk_id"
    ids = record[name]
    if not isinstance(ids, list) or not ids or not all(_is_id(item) for item in ids):
        return None
    return [{key: item} for item in ids], [Reading(name, f"gold_passages.*.{key}")]


def read_other_names(record: dict[str, Any]) -> tuple[dict[str, Any], list[Reading]]:
    """``record`` with the columns that have a safe reading moved to their case fields, and
    those readings (none: ``record`` itself, without nulls in those columns)."""
    if READABLE.isdisjoint(record):  # a record in the case schema: nothing to read
        return record, []
    # a null in a column with a reading is a value not given (a Parquet row without it)
    record = {k: v for k, v in record.items() if v is not None or k not in READABLE}
    readings: list[Reading] = []
    moved = dict(record)
    answer = _answer(record)
    if answer is not None:
        moved["reference_answer"] = moved.pop(answer.source)
        readings.append(answer)
    gold = _gold(record)
    if gold is not None:
        passages, found = gold
        for reading in found:
            del moved[reading.source]
        moved["gold_passages"] = passages
        readings.extend(found)
    return (moved, readings) if readings else (record, [])


def describe_readings(readings: list[Reading]) -> str:
    """``answer -> reference_answer, source_file -> gold_passages.0.doc_id``."""
    return ", ".join(f"{r.source} -> {r.target}" for r in readings)


def dataset_readings(
    spec: str, field_map: dict[str, str] | None, peek: int = 1_000
) -> list[Reading]:
    """The readings of the first ``peek`` records of the native JSONL or YAML file ``spec``
    (none for any other dataset, or with a field map), each once, in the order first met."""
    from pathlib import Path

    from ragmeter.datasets.jsonl import iter_jsonl
    from ragmeter.datasets.native import read_yaml_records
    from ragmeter.datasets.problems import Problem

    path = Path(spec)
    suffix = path.suffix.lower()
    try:
        if field_map or not path.is_file() or suffix not in (".jsonl", ".ndjson", ".yaml", ".yml"):
            return []
    except (OSError, ValueError):
        return []
    ignored: list[Problem] = []  # reported when the file is loaded
    if suffix in (".yaml", ".yml"):
        records: Any = (record for _, record in read_yaml_records(path, ignored))
    else:
        records = (record for _, _, record in iter_jsonl(path, ignored))
    found: dict[Reading, None] = {}
    for count, record in enumerate(records):
        if count >= peek:
            break
        if isinstance(record, dict):
            found.update(dict.fromkeys(read_other_names(record)[1]))
    return list(found)

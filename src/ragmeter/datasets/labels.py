"""The seed-003 layout: ``cases.jsonl`` plus per-perspective ``*_labels.jsonl`` files,
joined by case_id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragmeter.datasets.native import read_jsonl_records
from ragmeter.datasets.problems import DatasetError, Problem, problems_from_validation
from ragmeter.models import Case

_RETRIEVAL_KEYS = ("relevant_docs", "relevance_grades", "relevant_chunks", "chunk_relevance_grades")


def _passages_from_retrieval_labels(label: dict[str, Any]) -> list[dict[str, Any]]:
    """Chunk-level passages when chunk ids are given; doc-level passages otherwise."""
    passages: list[dict[str, Any]] = []
    chunk_grades = label.get("chunk_relevance_grades") or {}
    for chunk_id in label.get("relevant_chunks") or list(chunk_grades):
        passages.append({"chunk_id": chunk_id, "grade": chunk_grades.get(chunk_id, 1)})
    doc_grades = label.get("relevance_grades") or {}
    for doc_id in label.get("relevant_docs") or list(doc_grades):
        passages.append({"doc_id": doc_id, "grade": doc_grades.get(doc_id, 1)})
    return passages


def load_label_folder(folder: str | Path) -> list[Case]:
    folder = Path(folder)
    problems: list[Problem] = []
    base_file = folder / "cases.jsonl"
    if not base_file.is_file():
        raise DatasetError([Problem(str(folder), None, None, "no cases.jsonl in this folder")])
    base = read_jsonl_records(base_file, problems)
    merged: dict[str, dict[str, Any]] = {}
    origin: dict[str, dict[str, tuple[str, int]]] = {}
    base_line: dict[str, int] = {}
    for line, record in base:
        case_id = record.get("case_id")
        if case_id is None:
            problems.append(Problem(str(base_file), line, "case_id", "required field is missing"))
            continue
        case_id = str(case_id)
        if case_id in merged:
            problems.append(
                Problem(
                    str(base_file),
                    line,
                    "case_id",
                    f"duplicate case_id (first defined at line {base_line[case_id]})",
                    case_id,
                )
            )
            continue
        merged[case_id] = dict(record)
        base_line[case_id] = line
        origin[case_id] = {key: (str(base_file), line) for key in record}

    for label_file in sorted(folder.glob("*_labels.jsonl")):
        for line, label in read_jsonl_records(label_file, problems):
            case_id = str(label.get("case_id", ""))
            if case_id not in merged:
                problems.append(
                    Problem(
                        str(label_file),
                        line,
                        "case_id",
                        "no case with this case_id in cases.jsonl",
                        case_id or None,
                    )
                )
                continue
            fields = {k: v for k, v in label.items() if k != "case_id"}
            if any(key in fields for key in _RETRIEVAL_KEYS):
                passages = _passages_from_retrieval_labels(fields)
                for key in _RETRIEVAL_KEYS:
                    fields.pop(key, None)
                fields["gold_passages"] = merged[case_id].get("gold_passages", []) + passages
            for key, value in fields.items():
                merged[case_id][key] = value
                origin[case_id][key] = (str(label_file), line)

    cases: list[Case] = []
    for case_id, record in merged.items():
        try:
            case = Case.model_validate(record)
        except ValidationError as exc:
            for problem in problems_from_validation(
                exc, str(base_file), base_line[case_id], case_id
            ):
                top = (problem.field or "").split(".")[0]
                file, line = origin[case_id].get(top, (problem.file, problem.line or 0))
                problems.append(Problem(file, line, problem.field, problem.message, case_id))
            continue
        if case.dataset is None:
            case.dataset = folder.name
        cases.append(case)
    if problems:
        raise DatasetError(problems)
    return cases

"""The seed-003 layout: ``cases.jsonl`` plus per-perspective ``*_labels.jsonl`` files,
joined by case_id.

Retrieval labels are checked here, where the label file's own field names are known:
``relevant_docs`` / ``relevant_chunks`` must be lists of ids (a bare string is a problem, not
read character by character), ``relevance_grades`` / ``chunk_relevance_grades`` mappings of id
to a grade 0-3 whose ids are among the listed ones. A label field that another line or file
already gave the same case is a problem naming both places (only retrieval labels add to the
case's ``gold_passages``; everything else would silently replace a value).
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any

from ragmeter.datasets.jsonl import case_id_of
from ragmeter.datasets.native import read_jsonl_records, validate_record
from ragmeter.datasets.problems import DatasetError, Problem, _short
from ragmeter.models import Case

_RETRIEVAL_KEYS = ("relevant_docs", "relevance_grades", "relevant_chunks", "chunk_relevance_grades")
# (list key, grades key, the passage field the ids go to, what an id names)
_RETRIEVAL_PAIRS = (
    ("relevant_chunks", "chunk_relevance_grades", "chunk_id", "chunk"),
    ("relevant_docs", "relevance_grades", "doc_id", "document"),
)


def _id_list(label: dict[str, Any], key: str, what: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The ids of a ``relevant_*`` list and what is wrong with it."""
    value = label.get(key)
    if value is None:
        return [], []
    if isinstance(value, str):
        as_list = json.dumps([value], ensure_ascii=False)
        return [], [(key, f"must be a list of {what} ids, not a single string; write {as_list}")]
    if not isinstance(value, list):
        return [], [(key, f"must be a list of {what} ids (got {_short(value)})")]
    ids: list[str] = []
    wrong: list[tuple[str, str]] = []
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            wrong.append((f"{key}.{index}", f"must be a non-empty {what} id (got {_short(item)})"))
        elif item in ids:
            wrong.append((f"{key}.{index}", f"{what} id {item!r} is listed twice"))
        else:
            ids.append(item)
    return ids, wrong


def _grades(
    label: dict[str, Any], key: str, what: str
) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """The grades of a ``*relevance_grades`` mapping and what is wrong with it."""
    value = label.get(key)
    if value is None:
        return {}, []
    if not isinstance(value, dict):
        return {}, [(key, f"must be a mapping of {what} id to grade 0-3 (got {_short(value)})")]
    grades: dict[str, int] = {}
    wrong: list[tuple[str, str]] = []
    for item, grade in value.items():
        if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= 3:
            wrong.append((f"{key}.{item}", f"grade must be an integer 0-3 (got {_short(grade)})"))
        elif not item.strip():
            wrong.append((key, f"a {what} id must not be empty"))
        else:
            grades[item] = grade
    return grades, wrong


def passages_from_retrieval_labels(
    label: dict[str, Any],
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Chunk-level passages when chunk ids are given, doc-level passages otherwise (both when
    both are given), and (field, message) for everything wrong in the labels."""
    passages: list[dict[str, Any]] = []
    wrong: list[tuple[str, str]] = []
    for list_key, grades_key, id_field, what in _RETRIEVAL_PAIRS:
        ids, id_wrong = _id_list(label, list_key, what)
        grades, grade_wrong = _grades(label, grades_key, what)
        wrong += id_wrong + grade_wrong
        if ids:
            wrong += [
                (
                    f"{grades_key}.{item}",
                    f"grades a {what} that is not in {list_key} (add it there, or drop the grade)",
                )
                for item in grades
                if item not in ids
            ]
        elif not id_wrong:
            ids = list(grades)  # no list: the grades alone name the relevant ids
        passages += [{id_field: item, "grade": grades.get(item, 1)} for item in ids]
    return passages, wrong


def _where(place: tuple[str, int], folder: Path) -> str:
    file, line = place
    name = Path(file).name if Path(file).parent == folder else file
    return f"{name}:{line}"


# files of these kinds beside cases.jsonl are data a user may mean as labels
_DATA_SUFFIXES = (".json", ".jsonl", ".ndjson", ".yaml", ".yml", ".csv", ".tsv", ".parquet")
_LABEL_FILE = re.compile(r".*_labels\.jsonl")  # as the glob that reads them


def unread_files(folder: Path) -> list[Problem]:
    """Files of a label folder that look like its cases or a label file but would not be read
    (``pipeline_label.jsonl``, ``groundedness_labels.json``, ``cases.json``): their labels would
    be left out without a word."""
    problems: list[Problem] = []
    for path in sorted(folder.iterdir()):
        name = path.name
        if name == "cases.jsonl" or _LABEL_FILE.fullmatch(name) or name.startswith("."):
            continue
        if not path.is_file():
            continue
        stem = name.split(".", 1)[0]
        suffix = path.suffix.lower()
        if "label" in stem.lower() and (suffix in _DATA_SUFFIXES or "_labels" in stem):
            base = re.sub(r"[-_ ]*labels?$", "", stem, flags=re.IGNORECASE) or "NAME"
            expected = f"{base}_labels.jsonl"
        elif suffix in _DATA_SUFFIXES and difflib.get_close_matches(stem.lower(), ["cases"]):
            expected = "cases.jsonl"
        else:
            continue
        if (folder / expected).exists():
            continue  # a second file beside the one read (cases_old.jsonl): not a misnaming
        problems.append(
            Problem(
                str(path),
                None,
                None,
                f"looks like a file of this label folder but is not read (only cases.jsonl and "
                f"NAME_labels.jsonl files are); rename it to {expected}, or move it out of "
                "the folder",
            )
        )
    return problems


def load_label_folder(folder: str | Path) -> list[Case]:
    folder = Path(folder)
    problems: list[Problem] = []
    base_file = folder / "cases.jsonl"
    if not base_file.is_file():
        raise DatasetError(
            [
                Problem(str(folder), None, None, "no cases.jsonl in this folder"),
                *unread_files(folder),
            ]
        )
    problems += unread_files(folder)
    base = read_jsonl_records(base_file, problems)
    merged: dict[str, dict[str, Any]] = {}
    # where each field of a case came from (file, line), for the problems of the merged case
    origin: dict[str, dict[str, tuple[str, int]]] = {}
    # where each label field was given, including the retrieval keys before they are merged
    given: dict[str, dict[str, tuple[str, int]]] = {}
    base_line: dict[str, int] = {}
    for line, record in base:
        case_id = case_id_of(record)
        if case_id is None:  # no usable id: the case's problems say what is wrong with it
            problems += validate_record(record, str(base_file), line)[1] or [
                Problem(str(base_file), line, "case_id", "required field is missing")
            ]
            continue
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
        given[case_id] = dict(origin[case_id])

    for label_file in sorted(folder.glob("*_labels.jsonl")):
        for line, label in read_jsonl_records(label_file, problems):
            here = (str(label_file), line)
            case_id = case_id_of(label)
            if case_id is None:
                problems.append(
                    Problem(str(label_file), line, "case_id", "required field is missing")
                )
                continue
            if case_id not in merged:
                problems.append(
                    Problem(
                        str(label_file),
                        line,
                        "case_id",
                        "no case with this case_id in cases.jsonl",
                        case_id,
                    )
                )
                continue
            fields = {k: v for k, v in label.items() if k not in ("case_id", "id")}
            clashes = [key for key in fields if key in given[case_id]]
            for key in clashes:
                problems.append(
                    Problem(
                        str(label_file),
                        line,
                        key,
                        f"already given for this case at {_where(given[case_id][key], folder)}",
                        case_id,
                    )
                )
            if clashes:
                continue
            given[case_id].update({key: here for key in fields})
            if any(key in fields for key in _RETRIEVAL_KEYS):
                passages, wrong = passages_from_retrieval_labels(fields)
                problems += [
                    Problem(str(label_file), line, field, message, case_id)
                    for field, message in wrong
                ]
                for key in _RETRIEVAL_KEYS:
                    fields.pop(key, None)
                own = "gold_supports" if "gold_supports" in merged[case_id] else "gold_passages"
                existing = merged[case_id].get(own)
                if existing is not None and not isinstance(existing, list):
                    continue  # the case's own gold_passages is wrong; reported when validated
                origin[case_id].setdefault(own, here)
                fields[own] = (existing or []) + passages
            for key, value in fields.items():
                merged[case_id][key] = value
                origin[case_id].setdefault(key, here)

    cases: list[Case] = []
    for case_id, record in merged.items():
        case, found = validate_record(record, str(base_file), base_line[case_id])
        for problem in found:
            top = (problem.field or "").split(".")[0]
            file, line = origin[case_id].get(top, (problem.file, problem.line or 0))
            problems.append(Problem(file, line, problem.field, problem.message, case_id))
        if case is None:
            continue
        if case.dataset is None:
            case.dataset = folder.name
        cases.append(case)
    if problems:
        raise DatasetError(problems)
    return cases

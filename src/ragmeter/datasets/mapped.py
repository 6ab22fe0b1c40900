"""Foreign JSONL/CSV files mapped onto the case schema by a field map.

``field_map`` maps a case field to a dotted path in the source record, e.g.
``{"question": "query", "reference_answer": "answers.0", "case_id": "qid"}``. Source fields
that are not mapped are kept under ``metadata``.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from ragmeter.datasets.native import RawRecord, build_cases, read_jsonl_records
from ragmeter.datasets.problems import DatasetError, Problem
from ragmeter.models import Case
from ragmeter.paths import MISSING, get_path

_LIST_FIELDS = {
    "tags",
    "user_roles",
    "expected_claims",
    "forbidden_claims",
    "expected_citations",
    "expected_list_items",
    "required_flags",
    "forbidden_flags",
}


def _read_csv(path: Path, problems: list[Problem]) -> list[RawRecord]:
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            return [(reader.line_num, dict(row)) for row in reader]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        problems.append(Problem(str(path), None, None, f"cannot read CSV: {exc}"))
        return []


def _coerce(field: str, value: Any) -> Any:
    if field in _LIST_FIELDS and isinstance(value, str):
        return [item.strip() for item in value.split(";") if item.strip()]
    if field == "answerable" and isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "y"}
    return value


def map_record(
    record: dict[str, Any],
    field_map: dict[str, str],
    line: int,
    stem: str,
    file: str,
    problems: list[Problem],
) -> dict[str, Any]:
    mapped: dict[str, Any] = {}
    used: set[str] = set()
    for field, source in field_map.items():
        value = get_path(record, source)
        if value is MISSING:
            problems.append(
                Problem(file, line, field, f"mapped source field '{source}' is missing")
            )
            continue
        used.add(source.split(".")[0])
        mapped[field] = _coerce(field, value)
    mapped.setdefault("case_id", f"{stem}-{line}")
    extra = {k: v for k, v in record.items() if k not in used and k not in field_map}
    if extra:
        mapped["metadata"] = {**extra, **mapped.get("metadata", {})}
    return mapped


def load_mapped(path: str | Path, field_map: dict[str, str]) -> list[Case]:
    path = Path(path)
    problems: list[Problem] = []
    raw = (
        _read_csv(path, problems)
        if path.suffix.lower() == ".csv"
        else read_jsonl_records(path, problems)
    )
    records = [
        (line, map_record(record, field_map, line, path.stem, str(path), problems))
        for line, record in raw
    ]
    cases = build_cases(records, str(path), path.stem, problems)
    if problems:
        raise DatasetError(problems)
    return cases

"""Foreign JSONL/CSV files mapped onto the case schema by a field map.

``field_map`` maps a case field to a dotted path in the source record, e.g.
``{"question": "query", "reference_answer": "answers.0", "case_id": "qid"}``. Source fields
that are not mapped are kept under ``metadata``.

CSV cells are text: a list field's cell is split on ``;``, and an empty cell is a value not
given (so the field keeps its default) except for ``case_id`` and ``question``, where it is a
problem. In JSONL a list field must be a JSON list: a string is a problem, never split.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from ragmeter.datasets.jsonl import read_text
from ragmeter.datasets.native import RawRecord, build_cases, read_jsonl_records
from ragmeter.datasets.problems import DatasetError, Problem, _short
from ragmeter.models import Case
from ragmeter.paths import MISSING, get_path

_LIST_FIELDS = {
    "tags",
    "user_roles",
    "expected_claims",
    "forbidden_claims",
    "expected_citations",
    "expected_chunks",
    "expected_list_items",
    "required_flags",
    "forbidden_flags",
}
_REQUIRED = {"case_id", "question"}


def _read_csv(path: Path, problems: list[Problem]) -> list[RawRecord]:
    """Each data row as (its first line, {column: cell}); the header is the first row."""
    text = read_text(path, problems)
    if text is None:
        return []
    file = str(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    records: list[RawRecord] = []
    end_of_previous = 0
    try:
        for row in reader:
            start, end_of_previous = end_of_previous + 1, reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if header is None:
                header = [name.strip() for name in row]
                seen: set[str] = set()
                for name in header:
                    if name in seen:
                        problems.append(
                            Problem(
                                file, start, None, f"column {name!r} appears twice in the header"
                            )
                        )
                    seen.add(name)
                continue
            if len(row) != len(header):
                problems.append(
                    Problem(
                        file,
                        start,
                        None,
                        f"{len(row)} cells, but the header has {len(header)} columns",
                    )
                )
                continue
            records.append((start, dict(zip(header, row, strict=True))))
    except csv.Error as exc:
        problems.append(Problem(file, reader.line_num or None, None, f"invalid CSV: {exc}"))
    return records


def map_record(
    record: dict[str, Any],
    field_map: dict[str, str],
    line: int,
    stem: str,
    file: str,
    problems: list[Problem],
    *,
    from_csv: bool = False,
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
        if from_csv and isinstance(value, str) and not value.strip():
            if field in _REQUIRED:
                problems.append(
                    Problem(file, line, field, f"mapped source field '{source}' is empty")
                )
            continue
        if field in _LIST_FIELDS and isinstance(value, str):
            if not from_csv:
                problems.append(
                    Problem(
                        file,
                        line,
                        field,
                        f"mapped source field '{source}' holds a string (got {_short(value)}); "
                        "this field needs a list (only CSV cells are split on ';')",
                    )
                )
                continue
            value = [item.strip() for item in value.split(";") if item.strip()]
        elif field == "answerable" and isinstance(value, str):
            value = value.strip()  # true/false, yes/no, 1/0; anything else is a problem
        mapped[field] = value
    mapped.setdefault("case_id", f"{stem}-{line}")
    extra = {k: v for k, v in record.items() if k not in used and k not in field_map}
    if extra:
        own = mapped.get("metadata", {})
        mapped["metadata"] = {**extra, **own} if isinstance(own, dict) else own
    return mapped


def load_mapped(path: str | Path, field_map: dict[str, str]) -> list[Case]:
    path = Path(path)
    problems: list[Problem] = []
    from_csv = path.suffix.lower() == ".csv"
    raw = _read_csv(path, problems) if from_csv else read_jsonl_records(path, problems)
    records = [
        (
            line,
            map_record(record, field_map, line, path.stem, str(path), problems, from_csv=from_csv),
        )
        for line, record in raw
    ]
    # a field the mapping already reported (missing or empty source) is not reported again
    reported = {(p.line, p.field) for p in problems if p.field}
    found: list[Problem] = []
    cases = build_cases(records, str(path), path.stem, found)
    problems += [p for p in found if (p.line, p.field) not in reported]
    if problems:
        problems.sort(key=lambda p: p.line or 0)
        raise DatasetError(problems)
    return cases

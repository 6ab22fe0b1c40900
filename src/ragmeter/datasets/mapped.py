"""Foreign JSONL/YAML/CSV/Parquet files mapped onto the case schema by a field map.

``field_map`` maps a case field, or a dotted path into one, to a dotted path in the source
record (:mod:`ragmeter.datasets.fieldmap`), e.g. ``{"question": "query", "reference_answer":
"answers.0", "gold_passages.0.doc_id": "source_file"}``. Every source field that is not mapped
is read by its own name when it is a case field (or another name of one); with a field map the
others are kept under ``metadata``, without one (a CSV or Parquet file in the case schema) they
are problems, as in a native JSONL file.

A mapped source that a record lacks (or holds null, or an empty CSV cell) leaves its field
absent, except ``case_id`` and ``question``, where it is a problem. Without a ``case_id`` the
id is ``FILESTEM-LINE``.

CSV cells are text: a list field's cell is split on ``;`` (so is a ``*`` source), a structured
field's cell (``gold_passages``, ``metadata``, ...) is JSON, and an empty cell is a value not
given. In JSONL and Parquet a list field must be a list: a string is a problem, never split.
For Parquet the line of a problem is the row number (1 for the first row).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from pathlib import Path
from typing import Any

from ragmeter.datasets.fieldmap import (
    REQUIRED,
    STAR,
    FieldMapError,
    Target,
    _unwrap,
    check_field_map,
    field_names,
    is_structured,
    is_text_list,
)
from ragmeter.datasets.jsonl import read_text
from ragmeter.datasets.native import (
    RawRecord,
    build_cases,
    read_jsonl_records,
    read_yaml_records,
)
from ragmeter.datasets.problems import DatasetError, Problem, _short
from ragmeter.models import Case
from ragmeter.paths import MISSING, get_path


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


class _ListNode(dict[int, Any]):
    """A list being built from indexed targets: position -> value (gaps are closed)."""


def _finish(node: Any) -> Any:
    if isinstance(node, _ListNode):
        return [_finish(node[k]) for k in sorted(node)]
    if isinstance(node, dict):
        return {k: _finish(v) for k, v in node.items()}
    return node


def _place(root: dict[Any, Any], parts: tuple[str | int, ...], value: Any) -> None:
    node = root
    for part, following in itertools.pairwise(parts):
        child = node.get(part)
        if not isinstance(child, dict):
            child = _ListNode() if isinstance(following, int) else {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def _without_nulls(value: Any) -> Any:
    """A Parquet value without the nulls its schema gives a struct's keys a row lacks."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _lookup(record: dict[str, Any], source: str) -> tuple[Any, str]:
    """The value of ``source`` (a key as is, else a dotted path) and the top key it reads."""
    if source in record:
        return record[source], source
    return get_path(record, source), source.split(".")[0]


class _Absent(Exception):
    """The value is not given (an empty CSV cell)."""


def _coerce(value: Any, annotation: Any, from_csv: bool, source: str) -> Any:
    """``value`` made ready for a field of type ``annotation``; raises :class:`_Absent`, or
    ValueError with the problem."""
    if not isinstance(value, str):
        return value
    if from_csv:
        if not value.strip():
            raise _Absent
        if is_text_list(annotation):
            return [item.strip() for item in value.split(";") if item.strip()]
        if is_structured(annotation) and value.lstrip()[:1] in ("[", "{"):
            try:
                return json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"source '{source}' holds JSON that does not parse: {exc.msg}"
                ) from None
        if _unwrap(annotation) is bool:
            return value.strip()  # true/false, yes/no, 1/0; anything else is a problem
        return value
    if is_text_list(annotation):
        raise ValueError(
            f"source '{source}' holds a string (got {_short(value)}); this field needs a list "
            "(only CSV cells are split on ';')"
        )
    return value


def map_record(
    record: dict[str, Any],
    field_map: dict[str, str],
    line: int,
    stem: str,
    file: str,
    problems: list[Problem],
    *,
    from_csv: bool = False,
    from_parquet: bool = False,
    targets: list[Target] | None = None,
) -> dict[str, Any]:
    """The case record of one source record (see the module docstring)."""
    if targets is None:
        targets = check_field_map(field_map)
    tree: dict[Any, Any] = {}
    used: set[str] = set()
    for target in targets:
        source = target.source
        value, top = _lookup(record, source)
        if value is not MISSING:
            used.add(top)
            if from_parquet:
                value = _without_nulls(value)
        required = target.field in REQUIRED and len(target.parts) == 1
        if value is MISSING or value is None:
            if required:
                why = "is missing" if value is MISSING else "is null"
                problems.append(
                    Problem(
                        file,
                        line,
                        target.path,
                        f"mapped source field '{source}' {why} (a required field)",
                    )
                )
            continue
        if STAR in target.parts:
            items = value
            if from_csv and isinstance(value, str):
                items = [item.strip() for item in value.split(";") if item.strip()]
            if not isinstance(items, list):
                problems.append(
                    Problem(
                        file,
                        line,
                        target.path,
                        f"source '{source}' holds {_short(value)}, not a list ('*' makes one "
                        "item per list item; only CSV cells are split on ';')",
                    )
                )
                continue
            where = target.parts.index(STAR)
            for index, item in enumerate(items):
                if item is None:
                    continue
                parts = (*target.parts[:where], index, *target.parts[where + 1 :])
                try:
                    _place(tree, parts, _coerce(item, target.leaf, from_csv, source))
                except _Absent:
                    continue
                except ValueError as exc:
                    problems.append(Problem(file, line, target.path, str(exc)))
            continue
        try:
            _place(tree, target.parts, _coerce(value, target.leaf, from_csv, source))
        except _Absent:
            if required:
                problems.append(
                    Problem(file, line, target.path, f"mapped source field '{source}' is empty")
                )
        except ValueError as exc:
            problems.append(Problem(file, line, target.path, str(exc)))
    mapped: dict[str, Any] = _finish(tree)
    names = field_names(Case)
    given = {t.field for t in targets}
    extra: dict[str, Any] = {}
    own_metadata: Any = None
    for key, value in record.items():
        if key in used:
            continue
        canonical = names.get(key)
        if key == "metadata" and "metadata" not in given:
            own_metadata = value
        elif canonical is not None and canonical not in given:
            if from_parquet:
                # a column (or a struct's key) this row has no value in
                value = _without_nulls(value)
                if value is None:
                    continue
            try:
                mapped[key] = _coerce(value, Case.model_fields[canonical].annotation, from_csv, key)
            except _Absent:
                if canonical in REQUIRED:
                    problems.append(Problem(file, line, key, "required field is empty"))
            except ValueError as exc:
                problems.append(Problem(file, line, key, str(exc)))
        elif not field_map:
            # no map: the case schema, so the schema names what is unknown (an empty cell is
            # no value, as for every column)
            if not (from_csv and isinstance(value, str) and not value.strip()):
                mapped[key] = value
        else:
            extra[key] = value
    if not any(names.get(k) == "case_id" for k in mapped):
        mapped["case_id"] = f"{stem}-{line}"
    if extra or own_metadata is not None:
        own = mapped.get("metadata", {})
        if own_metadata is not None and not isinstance(own_metadata, dict):
            mapped["metadata"] = own_metadata  # not a mapping: the schema says so
        elif isinstance(own, dict):
            mapped["metadata"] = {**extra, **(own_metadata or {}), **own}
    return mapped


def _read_parquet(path: Path, problems: list[Problem]) -> list[RawRecord]:
    from ragmeter.datasets.rows import read_parquet

    try:
        rows = read_parquet(path)
    except DatasetError as exc:
        problems.extend(exc.problems)
        return []
    return [(number, row) for number, row in enumerate(rows, start=1)]


def read_records(path: Path, problems: list[Problem]) -> list[RawRecord]:
    """The records of a CSV, Parquet, YAML or JSONL file, each with its line (row) number."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return _read_csv(path, problems)
    if suffix == ".parquet":
        return _read_parquet(path, problems)
    if suffix in (".yaml", ".yml"):
        return read_yaml_records(path, problems)
    return read_jsonl_records(path, problems)


def load_mapped(path: str | Path, field_map: dict[str, str]) -> list[Case]:
    path = Path(path)
    try:
        targets = check_field_map(field_map)
    except FieldMapError as exc:
        raise DatasetError([Problem(str(path), None, None, f"--field-map: {exc}")]) from None
    problems: list[Problem] = []
    suffix = path.suffix.lower()
    raw = read_records(path, problems)
    records = [
        (
            line,
            map_record(
                record,
                field_map,
                line,
                path.stem,
                str(path),
                problems,
                from_csv=suffix == ".csv",
                from_parquet=suffix == ".parquet",
                targets=targets,
            ),
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

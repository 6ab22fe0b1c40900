"""Native dataset formats: JSONL (one case per line) and YAML (a list of cases)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ragmeter.datasets.problems import DatasetError, Problem, problems_from_validation
from ragmeter.models import Case

RawRecord = tuple[int, dict[str, Any]]


def read_jsonl_records(path: Path, problems: list[Problem]) -> list[RawRecord]:
    """Each non-blank line as (line number, object); bad lines become problems."""
    records: list[RawRecord] = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(Problem(str(path), None, None, f"cannot read file: {exc}"))
        return records
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(str(path), number, None, f"invalid JSON: {exc.msg}"))
            continue
        if not isinstance(record, dict):
            problems.append(
                Problem(
                    str(path), number, None, f"expected a JSON object, got {type(record).__name__}"
                )
            )
            continue
        records.append((number, record))
    return records


def read_yaml_records(path: Path, problems: list[Problem]) -> list[RawRecord]:
    """Cases from a YAML list (or a mapping with a ``cases`` list), with their line numbers."""
    try:
        loader = yaml.SafeLoader(path.read_text(encoding="utf-8"))
        try:
            root = loader.get_single_node()
            if root is None:
                return []
            items = root.value if isinstance(root, yaml.SequenceNode) else None
            if isinstance(root, yaml.MappingNode):
                for key, value in root.value:
                    if key.value == "cases" and isinstance(value, yaml.SequenceNode):
                        items = value.value
            if items is None:
                problems.append(
                    Problem(str(path), 1, None, "expected a list of cases or a 'cases:' list")
                )
                return []
            records: list[RawRecord] = []
            for node in items:
                line = node.start_mark.line + 1
                record = loader.construct_object(node, deep=True)
                if isinstance(record, dict):
                    records.append((line, record))
                else:
                    problems.append(Problem(str(path), line, None, "expected a mapping for a case"))
            return records
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problems.append(Problem(str(path), line, None, f"invalid YAML: {exc}"))
    except OSError as exc:
        problems.append(Problem(str(path), None, None, f"cannot read file: {exc}"))
    return []


def build_cases(
    records: list[RawRecord], file: str, dataset: str, problems: list[Problem]
) -> list[Case]:
    """Validate records into cases; duplicates and schema errors become problems."""
    cases: list[Case] = []
    first_line: dict[str, int] = {}
    for line, record in records:
        raw_id = record.get("case_id", record.get("id"))
        case_id = str(raw_id) if raw_id is not None else None
        try:
            case = Case.model_validate(record)
        except ValidationError as exc:
            problems.extend(problems_from_validation(exc, file, line, case_id))
            continue
        if case.case_id in first_line:
            problems.append(
                Problem(
                    file,
                    line,
                    "case_id",
                    f"duplicate case_id (first defined at line {first_line[case.case_id]})",
                    case.case_id,
                )
            )
            continue
        first_line[case.case_id] = line
        if case.dataset is None:
            case.dataset = dataset
        cases.append(case)
    return cases


def _load(path: Path, records: list[RawRecord], problems: list[Problem]) -> list[Case]:
    cases = build_cases(records, str(path), path.stem, problems)
    if problems:
        raise DatasetError(problems)
    return cases


def load_jsonl(path: str | Path) -> list[Case]:
    problems: list[Problem] = []
    path = Path(path)
    return _load(path, read_jsonl_records(path, problems), problems)


def load_yaml(path: str | Path) -> list[Case]:
    problems: list[Problem] = []
    path = Path(path)
    return _load(path, read_yaml_records(path, problems), problems)

"""Native dataset formats: JSONL (one case per line) and YAML (a list of cases)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ragmeter.datasets.jsonl import case_id_of, inspect_value, read_jsonl, read_text
from ragmeter.datasets.problems import DatasetError, Problem, problems_from_validation
from ragmeter.datasets.readings import read_other_names
from ragmeter.models import Case
from ragmeter.yamlio import StrictSafeLoader, alias_problem, yaml_error_message

RawRecord = tuple[int, dict[str, Any]]

_INT_TAG = "tag:yaml.org,2002:int"


def read_jsonl_records(path: Path, problems: list[Problem]) -> list[RawRecord]:
    """Each non-blank line as (line number, object); bad lines become problems."""
    records: list[RawRecord] = []
    for number, value in read_jsonl(path, problems):
        if isinstance(value, dict):
            records.append((number, value))
        else:
            kind = "null" if value is None else type(value).__name__
            problems.append(Problem(str(path), number, None, f"expected a JSON object, got {kind}"))
    return records


def _node_paths(root: Node) -> dict[int, str | None]:
    """id(node) -> dotted path from ``root``, for every node under it."""
    paths: dict[int, str | None] = {}
    stack: list[tuple[Node, tuple[str, ...]]] = [(root, ())]
    while stack:
        node, parts = stack.pop()
        if id(node) in paths:
            continue  # an alias: reported where it is first defined
        paths[id(node)] = ".".join(parts) or None
        if isinstance(node, MappingNode):
            for key, value in node.value:
                stack.append((value, (*parts, str(key.value))))
        elif isinstance(node, SequenceNode):
            stack.extend((child, (*parts, str(i))) for i, child in enumerate(node.value))
    return paths


def _yaml_id_problem(loader: StrictSafeLoader, node: MappingNode, file: str) -> Problem | None:
    """A plain ``case_id: 010`` is the number 8 in YAML: the id would silently change."""
    for key, value in node.value:
        if not (isinstance(key, ScalarNode) and key.value in ("case_id", "id")):
            continue
        if isinstance(value, ScalarNode) and value.tag == _INT_TAG and value.style is None:
            number = loader.construct_object(value)
            if str(number) != value.value:
                return Problem(
                    file,
                    value.start_mark.line + 1,
                    str(key.value),
                    f"{value.value} reads as the number {number} in YAML; "
                    f"put the id in quotes ('{value.value}')",
                )
    return None


def read_yaml_records(path: Path, problems: list[Problem]) -> list[RawRecord]:
    """Cases from a YAML list (or a mapping with a ``cases`` list), with their line numbers."""
    text = read_text(path, problems)
    if text is None:
        return []
    file = str(path)
    loader = StrictSafeLoader(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.YAMLError as exc:
            line, message = yaml_error_message(exc)
            problems.append(Problem(file, line, None, message))
            return []
        except RecursionError:
            problems.append(Problem(file, None, None, "invalid YAML: nested too deeply to read"))
            return []
        if root is None:
            return []
        items: list[Node] | None = root.value if isinstance(root, SequenceNode) else None
        if isinstance(root, MappingNode):
            for key, value in root.value:
                if isinstance(key, ScalarNode) and key.value == "cases":
                    if isinstance(value, SequenceNode):
                        items = value.value
                    elif isinstance(value, ScalarNode) and value.tag.endswith(":null"):
                        items = []
        if items is None:
            problems.append(
                Problem(
                    file,
                    root.start_mark.line + 1,
                    None,
                    "expected a list of cases or a 'cases:' list",
                )
            )
            return []
        records: list[RawRecord] = []
        placed: set[int] = set()
        for node in items:
            line = node.start_mark.line + 1
            if not isinstance(node, MappingNode):
                problems.append(Problem(file, line, None, "expected a mapping for a case"))
                continue
            expansion = alias_problem(node)
            if expansion is not None:
                problems.append(Problem(file, line, None, f"this case {expansion}"))
                continue
            paths = _node_paths(node)
            try:
                record = loader.construct_object(node, deep=True)
            except yaml.YAMLError as exc:
                error_line, message = yaml_error_message(exc)
                problems.append(Problem(file, error_line or line, None, message))
                continue
            case_id = case_id_of(record)
            for duplicate in loader.duplicate_keys:
                if id(duplicate.mapping) in paths:
                    placed.add(id(duplicate))
                    parent = paths[id(duplicate.mapping)]
                    field = f"{parent}.{duplicate.key}" if parent else duplicate.key
                    problems.append(
                        Problem(file, duplicate.line, field, duplicate.message, case_id)
                    )
            id_problem = _yaml_id_problem(loader, node, file)
            if id_problem is not None:
                problems.append(id_problem)
            records.append((line, record))
        unplaced = [d for d in loader.duplicate_keys if id(d) not in placed]
        if unplaced:  # outside every case read, e.g. two 'cases:' keys
            root_paths = _node_paths(root)
            for duplicate in unplaced:
                parent = root_paths.get(id(duplicate.mapping))
                field = f"{parent}.{duplicate.key}" if parent else duplicate.key
                problems.append(Problem(file, duplicate.line, field, duplicate.message))
        return records
    finally:
        loader.dispose()


def validate_record(
    record: dict[str, Any], file: str, line: int
) -> tuple[Case | None, list[Problem]]:
    """The case of one raw record, or None and the problems that name what is wrong."""
    case_id = case_id_of(record)
    record, _ = read_other_names(record)
    try:
        case = Case.model_validate(record)
    except ValidationError as exc:
        return None, problems_from_validation(exc, file, line, case_id, Case)
    except RecursionError:
        return None, [Problem(file, line, None, "nested too deeply to read", case_id)]
    findings = inspect_value(record)
    if findings:
        return None, [Problem(file, line, f.field, f.message, case.case_id) for f in findings]
    wrong = label_problems(case)
    if wrong:
        return None, [Problem(file, line, field, message, case.case_id) for field, message in wrong]
    return case, []


def label_problems(case: Case) -> list[tuple[str, str]]:
    """(field, message) for labels the schema accepts but no metric can use: a negative
    latency budget (every ``pipeline_latency_ok`` score would fail)."""
    wrong: list[tuple[str, str]] = []
    for key, budget in case.latency_budget_ms.items():
        if budget < 0:
            wrong.append(
                (
                    f"latency_budget_ms.{key}",
                    f"a latency budget is a number of ms >= 0 (got {budget:g})",
                )
            )
    return wrong


def build_cases(
    records: list[RawRecord], file: str, dataset: str, problems: list[Problem]
) -> list[Case]:
    """Validate records into cases; duplicates and schema errors become problems."""
    cases: list[Case] = []
    first_line: dict[str, int] = {}
    for line, record in records:
        case, found = validate_record(record, file, line)
        problems.extend(found)
        if case is None:
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
        problems.sort(key=lambda p: p.line or 0)
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

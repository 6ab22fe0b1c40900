"""Datasets read in batches: :func:`load_datasets`, but a native JSONL file is read one line at
a time and its cases come out ``size`` at a time, so a run of a million cases never holds
them all. Other formats are loaded whole (they are rarely large) and cut into batches.

Every problem of every dataset is still collected before :class:`DatasetError` is raised, at
the end of the iteration; once one is found no further batch is yielded, so the consumer
(the engine, which stores the batches of a new run) has only to undo what it stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ragmeter.datasets import (
    DATASET_SPEC_KEY,
    DatasetError,
    Problem,
    load_dataset,
    resolve_dataset_path,
)
from ragmeter.datasets.jsonl import iter_jsonl
from ragmeter.datasets.native import load_jsonl, validate_record
from ragmeter.models import Case
from ragmeter.registry import registry


def streamed_file(spec: str, field_map: dict[str, str] | None) -> Path | None:
    """The native JSONL file ``spec`` names, read line by line; None for any other dataset."""
    if field_map or spec == "demo" or registry.get("loaders", "jsonl") is not load_jsonl:
        return None
    path = Path(spec)
    try:
        if path.is_file() and path.suffix.lower() in (".jsonl", ".ndjson"):
            return path
    except (OSError, ValueError):
        return None
    return None


def _file_cases(path: Path, problems: list[Problem]) -> Iterator[tuple[int, Case]]:
    where = str(path)
    for line, _, record in iter_jsonl(path, problems):
        if not isinstance(record, dict):
            kind = "null" if record is None else type(record).__name__
            problems.append(Problem(where, line, None, f"expected a JSON object, got {kind}"))
            continue
        case, found = validate_record(record, where, line)
        problems.extend(found)
        if case is None:
            continue
        if case.dataset is None:
            case.dataset = path.stem
        yield line, case


def default_name(spec: str) -> str:
    """The dataset name a spec's cases get when they name none: a file's stem, a folder's
    name, ``golden`` for a golden file, else the spec itself (``ragbench:covidqa``)."""
    if spec == "demo":
        return "demo"
    name, sep, argument = spec.partition(":")
    if sep and name in registry.names("loaders") and not Path(spec).exists():
        if name == "golden":
            return "golden"
        if name not in ("jsonl", "yaml", "labels", "mapped"):
            return spec
        spec = argument
    path = Path(spec)
    return path.name if path.is_dir() else path.stem


def _same_name(name: str, first: str, second: str) -> Problem:
    return Problem(
        second,
        None,
        None,
        f"its cases get the dataset name {name!r}, as do those of {first}; results by dataset "
        "would mix the two: rename one of the files (or folders), or give its cases a "
        "'dataset' field with another name",
    )


def iter_dataset_batches(
    specs: list[str], field_map: dict[str, str] | None = None, size: int = 2_000
) -> Iterator[list[Case]]:
    """The cases of several datasets in batches of ``size``, in order; raises
    :class:`DatasetError` with every problem at the end."""
    problems: list[Problem] = []
    width = len(specs) + 1
    seen: dict[str, int] = {}  # case id -> its line x width + the index of its dataset
    given: set[Path] = set()
    named: dict[str, int] = {}  # a dataset name a spec's cases got by default -> that spec
    clashed: set[str] = set()
    batch: list[Case] = []
    for index, spec in enumerate(specs):
        try:
            resolved: Path | None = resolve_dataset_path(spec).resolve()
        except (OSError, ValueError):
            resolved = None
        if resolved is not None and resolved in given:
            problems.append(Problem(spec, None, None, "this dataset is given twice"))
            continue
        if resolved is not None:
            given.add(resolved)
        path = streamed_file(spec, field_map)
        if path is None:
            try:
                found: Iterator[tuple[int, Case]] = ((0, c) for c in load_dataset(spec, field_map))
            except DatasetError as exc:
                problems.extend(exc.problems)
                continue
        else:
            found = _file_cases(path, problems)
        before = len(problems)
        count = 0
        own_name = default_name(spec)
        for line, case in found:
            count += 1
            known = seen.get(case.case_id)
            if known is not None:
                first_line, source = divmod(known, width)
                problems.append(
                    Problem(
                        str(path),
                        line,
                        "case_id",
                        f"duplicate case_id (first defined at line {first_line})",
                        case.case_id,
                    )
                    if source == index and path is not None
                    else Problem(
                        str(path) if path is not None else spec,
                        line or None,
                        "case_id",
                        f"case_id also used in dataset {specs[source]}",
                        case.case_id,
                    )
                )
                continue
            seen[case.case_id] = line * width + index
            if case.dataset == own_name:
                first = named.setdefault(own_name, index)
                if first != index and own_name not in clashed:
                    clashed.add(own_name)
                    problems.append(_same_name(own_name, specs[first], spec))
            case.metadata.setdefault(DATASET_SPEC_KEY, spec)
            if problems:
                continue  # read on for the problems, store nothing more
            batch.append(case)
            if len(batch) >= size:
                yield batch
                batch = []
        if path is not None and count == 0 and len(problems) == before:
            problems.append(
                Problem(str(path), None, None, "holds no cases; a dataset needs at least one")
            )
    if problems:
        raise DatasetError(problems)
    if batch:
        yield batch

"""Load and validate datasets; every problem names file:line and field."""

from __future__ import annotations

from pathlib import Path

from ragmeter.datasets.corpus import detect_corpus_folder
from ragmeter.datasets.declarations import FILE_LOADERS, NAMED_DATASETS
from ragmeter.datasets.problems import DatasetError, Problem
from ragmeter.demo import DEMO_DATASET
from ragmeter.models import Case
from ragmeter.registry import registry

__all__ = [
    "DatasetError",
    "Problem",
    "load_dataset",
    "load_datasets",
    "resolve_dataset_path",
    "validate_dataset",
]


DATASET_SPEC_KEY = "dataset_spec"  # the --dataset a case came from (metadata)


def resolve_dataset_path(spec: str) -> Path:
    return DEMO_DATASET if spec == "demo" else Path(spec)


def load_dataset(spec: str, field_map: dict[str, str] | None = None) -> list[Case]:
    """Cases from ``demo``, a JSONL/YAML file, a seed-003 label folder, a CSV/Parquet file or a
    mapped JSONL/YAML/CSV/Parquet file (``field_map``: :mod:`ragmeter.datasets.fieldmap`), or
    ``NAME:ARG`` where NAME is a registered loader (a plugin's, or a built-in one forcing its
    format: ``jsonl:FILE``, ``yaml:FILE``, ``labels:DIR``)."""
    loaded = _from_named_loader(spec, field_map)
    if loaded is not None:
        return _checked(loaded, spec, Path(spec.partition(":")[2]))
    path = resolve_dataset_path(spec)
    try:
        exists = path.exists()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte
        raise DatasetError([Problem(spec, None, None, f"cannot use this path: {exc}")]) from None
    if not exists:
        hint = (
            ""
            if any(c in spec for c in "/\\.")
            else (
                f"; not a dataset name either (named: demo, {', '.join(NAMED_DATASETS)}; a local "
                "copy: NAME:PATH; `ragmeter datasets list` shows every form)"
            )
        )
        raise DatasetError([Problem(spec, None, None, f"no such file or folder{hint}")])
    detected = detect_corpus_folder(path) if path.is_dir() else None
    if detected is not None:  # a BEIR or Cranfield folder, recognised by its files
        name, _, argument = detected.partition(":")
        cases: list[Case] = registry.get("loaders", name)(argument)
    elif path.is_dir():
        cases = registry.get("loaders", "labels")(path)
    elif field_map or path.suffix.lower() in (".csv", ".parquet"):
        # without a map, CSV and Parquet columns are read by their own names
        cases = registry.get("loaders", "mapped")(path, field_map or {})
    elif path.suffix.lower() in (".yaml", ".yml"):
        cases = registry.get("loaders", "yaml")(path)
    elif path.suffix.lower() in (".jsonl", ".ndjson"):
        cases = registry.get("loaders", "jsonl")(path)
    else:
        raise DatasetError(
            [
                Problem(
                    str(path),
                    None,
                    None,
                    "unknown dataset format (use .jsonl, .yaml, .csv, .parquet or a folder)",
                )
            ]
        )
    if spec == "demo":
        for case in cases:
            case.dataset = "demo"
    where = path / "cases.jsonl" if path.is_dir() and detected is None else path
    return _checked(cases, spec, where)


def _from_named_loader(spec: str, field_map: dict[str, str] | None) -> list[Case] | None:
    """The cases of ``NAME:ARG`` when NAME is a registered loader and ``spec`` is not itself an
    existing path; else None."""
    name, sep, argument = spec.partition(":")
    if not sep and spec in NAMED_DATASETS:
        name = spec  # a named dataset by bare name: the hub (or its default local file)
    elif not sep or not name or name not in registry.names("loaders"):
        return None
    try:
        if Path(spec).exists():
            return None
    except (OSError, ValueError):
        pass
    loader = registry.get("loaders", name)
    if name == "mapped":
        return list(loader(Path(argument), field_map or {}))
    if name in FILE_LOADERS:
        if not Path(argument).exists():
            raise DatasetError([Problem(argument, None, None, "no such file or folder")])
        return list(loader(Path(argument)))
    cases = loader(argument)
    if not isinstance(cases, list) or not all(isinstance(c, Case) for c in cases):
        raise DatasetError(
            [Problem(spec, None, None, f"loader {name!r} did not return a list of cases")]
        )
    for case in cases:
        case.dataset = case.dataset or spec
    return cases


def _checked(cases: list[Case], spec: str, where: Path) -> list[Case]:
    if not cases:
        raise DatasetError(
            [Problem(str(where), None, None, "holds no cases; a dataset needs at least one")]
        )
    return cases


def load_datasets(specs: list[str], field_map: dict[str, str] | None = None) -> list[Case]:
    """All cases of several datasets; collects every dataset's problems before raising (the
    batches of ``datasets.stream``, joined)."""
    from ragmeter.datasets.stream import iter_dataset_batches

    return [case for batch in iter_dataset_batches(specs, field_map) for case in batch]


def validate_dataset(spec: str, field_map: dict[str, str] | None = None) -> list[Problem]:
    try:
        load_dataset(spec, field_map)
    except DatasetError as exc:
        return exc.problems
    return []

"""Rows of a dataset in its native format: from local files (parquet, a JSON array, JSON
objects one after another, JSONL) or, by bare name, from the Hugging Face hub through the
``datasets`` library (an optional extra, imported only then).

The hub path never hangs: with ``HF_HUB_OFFLINE``/``HF_DATASETS_OFFLINE`` set, or when
``huggingface.co`` does not answer within :data:`HUB_CHECK_TIMEOUT_S`, only the local cache is
tried, and a miss fails at once with the local-file form (``--dataset NAME:/path/to/file``).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import threading
from pathlib import Path
from typing import Any

from ragmeter.datasets.jsonl import read_jsonl
from ragmeter.datasets.problems import DatasetError, Problem

HUB_HOST = "huggingface.co"
HUB_CHECK_TIMEOUT_S = 3.0
ROW_SUFFIXES = (".parquet", ".json", ".jsonl", ".ndjson")
DATASETS_HINT = "pip install datasets (or: pip install 'ragmeter[hub]')"


def cache_root() -> Path:
    """ragmeter's cache folder: ``$RAGMETER_CACHE``, else ``$XDG_CACHE_HOME/ragmeter``, else
    ``~/.cache/ragmeter``."""
    given = os.environ.get("RAGMETER_CACHE")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragmeter"


def read_parquet(path: Path) -> list[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]
    except ModuleNotFoundError:
        raise DatasetError(
            [Problem(str(path), None, None, "reading parquet needs pyarrow: pip install pyarrow")]
        ) from None
    try:
        rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow raises its own error types for a bad file
        raise DatasetError(
            [Problem(str(path), None, None, f"not a readable parquet file: {exc}")]
        ) from None
    return rows


def read_json_file(path: Path) -> Any:
    """The parsed JSON of ``path``: one value, or a list when several are concatenated; a key
    given twice in one object is a problem at its line."""
    from ragmeter.datasets.jsondoc import duplicate_problems, read_json_document

    document = read_json_document(path)
    if document.duplicates:
        raise DatasetError(duplicate_problems(document))
    values = [value for _, value in document.values]
    if not values:
        raise DatasetError([Problem(str(path), None, None, "holds no JSON value")])
    return values[0] if len(values) == 1 else values


def read_rows(path: Path, *, list_key: str | None = None) -> list[dict[str, Any]]:
    """The rows of a parquet, JSON (an array, an object holding ``list_key``, or objects one
    after another) or JSONL file; a folder gives the rows of every such file below it."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix.lower() in ROW_SUFFIXES)
        if not files:
            raise DatasetError(
                [Problem(str(path), None, None, "no .parquet, .json or .jsonl file in this folder")]
            )
        return [row for file in files for row in read_rows(file, list_key=list_key)]
    if not path.exists():
        raise DatasetError([Problem(str(path), None, None, "no such file or folder")])
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return read_parquet(path)
    if suffix in (".jsonl", ".ndjson"):
        problems: list[Problem] = []
        values = read_jsonl(path, problems)
        if problems:
            raise DatasetError(problems)
        rows = [value for _, value in values]
    elif suffix == ".json":
        value = read_json_file(path)
        if isinstance(value, dict) and list_key and isinstance(value.get(list_key), list):
            value = value[list_key]
        rows = value if isinstance(value, list) else [value]
    else:
        raise DatasetError(
            [Problem(str(path), None, None, "unknown format (use .parquet, .json or .jsonl)")]
        )
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise DatasetError(
                [Problem(str(path), None, f"row {number}", "expected a JSON object for a row")]
            )
    return rows


def hub_offline_reason() -> str | None:
    """Why the hub cannot be used now (None when it answers): an offline variable is set, or
    ``huggingface.co`` does not answer within the timeout (the name lookup included)."""
    for variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "RAGMETER_OFFLINE"):
        if os.environ.get(variable, "").strip().lower() in ("1", "true", "yes", "on"):
            return f"{variable} is set"
    outcome: list[str] = []

    def probe() -> None:
        try:
            with socket.create_connection((HUB_HOST, 443), timeout=HUB_CHECK_TIMEOUT_S):
                outcome.append("")
        except OSError as exc:
            outcome.append(f"{HUB_HOST} does not answer ({exc.__class__.__name__})")

    thread = threading.Thread(target=probe, daemon=True)  # a name lookup ignores timeouts
    thread.start()
    thread.join(HUB_CHECK_TIMEOUT_S + 0.5)
    if not outcome:
        return f"{HUB_HOST} does not answer within {HUB_CHECK_TIMEOUT_S:g} s"
    return outcome[0] or None


def hub_rows(
    name: str, repo: str, config: str | None, split: str, local_form: str
) -> list[dict[str, Any]]:
    """The rows of ``repo`` (``config``, ``split``) through the ``datasets`` library, cached
    under :func:`cache_root` ``/hf``; offline, only that cache is read."""
    where = f"{name} (hub: {repo}{'/' + config if config else ''}, split {split})"
    if importlib.util.find_spec("datasets") is None:
        raise DatasetError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"loading by name needs the 'datasets' library ({DATASETS_HINT}); or read "
                    f"local files in the native format: --dataset {local_form}",
                )
            ]
        )
    reason = hub_offline_reason()
    import datasets  # type: ignore[import-not-found,unused-ignore]

    # offline: this call reads the local cache only (passed to the call, never set for the
    # rest of the process)
    options: dict[str, Any] = {}
    if reason is not None and hasattr(datasets, "DownloadConfig"):
        options["download_config"] = datasets.DownloadConfig(local_files_only=True)
    try:
        loaded = datasets.load_dataset(
            repo, config, split=split, cache_dir=str(cache_root() / "hf"), **options
        )
    except Exception as exc:  # offline cache miss, unknown config, ...
        why = f"offline ({reason}) and not in the local cache" if reason else str(exc)
        raise DatasetError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"cannot load from the hub: {why}; read local files in the native format "
                    f"instead: --dataset {local_form}",
                )
            ]
        ) from None
    return [dict(row) for row in loaded]

"""JSON lines read strictly: the one reader behind every JSONL dataset and replay file.

- lines are split on ``"\\n"`` only (a trailing ``"\\r"`` is dropped), so U+2028, U+2029 and
  U+0085 inside a string stay part of it (``str.splitlines`` would cut the line there);
- a line that is not JSON, nested too deeply, or holds a number too long to convert is a
  problem naming file:line, never a traceback;
- a key given twice in one object is a problem naming the field (JSON keeps the last one
  silently);
- :func:`inspect_value` finds what JSON parses but ragmeter cannot keep: NaN and Infinity
  (Python's ``json`` accepts these non-standard tokens), unpaired surrogates (``"\\ud800"``,
  not storable as UTF-8) and nesting deeper than :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.datasets.problems import Problem
from ragmeter.errors import InputError

DUPLICATE_KEY = "key given twice in one object (JSON would silently keep the last)"

# no case needs deeper data, and the JSON serialiser of the run store refuses ~250 levels
MAX_DEPTH = 100

__all__ = [
    "MAX_DEPTH",
    "Finding",
    "JsonLineError",
    "inspect_value",
    "iter_jsonl",
    "loads_line",
    "read_jsonl",
    "read_text",
    "split_lines",
]


@dataclass(frozen=True)
class Finding:
    """Something wrong inside a parsed value: the dotted path to it and what is wrong."""

    field: str | None
    message: str


class JsonLineError(InputError):
    """A line that is not usable JSON; ``str()`` says why."""


def split_lines(text: str) -> list[str]:
    """The lines of a JSONL text: split on ``"\\n"`` only, one trailing ``"\\r"`` dropped."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def read_text(path: Path, problems: list[Problem]) -> str | None:
    """The UTF-8 text of ``path`` (a leading BOM dropped), or None with a problem."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        problems.append(Problem(str(path), None, None, "no such file"))
    except IsADirectoryError:
        problems.append(Problem(str(path), None, None, "is a folder, not a file"))
    except UnicodeDecodeError as exc:
        problems.append(
            Problem(str(path), None, None, f"not UTF-8 text (byte {exc.start}: {exc.reason})")
        )
    except OSError as exc:
        problems.append(Problem(str(path), None, None, f"cannot read file: {exc.strerror or exc}"))
    return None


def loads_line(line: str) -> tuple[Any, list[Finding]]:
    """The value of one JSON line and its duplicate keys; raises :class:`JsonLineError`."""
    duplicates: dict[int, list[str]] = {}

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in pairs:
            if key in obj:
                duplicates.setdefault(id(obj), []).append(key)
            obj[key] = value
        return obj

    try:
        value = json.loads(line, object_pairs_hook=pairs_hook)
    except json.JSONDecodeError as exc:
        raise JsonLineError(f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise JsonLineError("invalid JSON: nested too deeply to read") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise JsonLineError(f"invalid JSON: {exc}") from None
    findings: list[Finding] = []
    if duplicates:
        for where, node in _walk(value):
            for key in duplicates.get(id(node), []) if isinstance(node, dict) else []:
                findings.append(
                    Finding(
                        _path(where, key),
                        DUPLICATE_KEY,
                    )
                )
    return value, findings


# where a node sits: None for the root, else (where its parent sits, its key or index, depth)
_Where = tuple[Any, str | int, int] | None


def _path(where: _Where, last: str | int | None = None) -> str | None:
    parts: list[str] = [] if last is None else [str(last)]
    while where is not None:
        where, key, _ = where
        parts.append(str(key))
    return ".".join(reversed(parts)) or None


def _depth(where: _Where) -> int:
    return 0 if where is None else where[2]


def _walk(value: Any, max_depth: int | None = None) -> list[tuple[_Where, Any]]:
    """Every (where, node) of a parsed value, parents first; iterative, so depth is no limit.
    With ``max_depth``, children deeper than that are not listed. A list or dict met twice
    (YAML aliases share them) is listed once."""
    out: list[tuple[_Where, Any]] = []
    seen: set[int] = set()
    stack: list[tuple[_Where, Any]] = [(None, value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, dict | list):
            if id(node) in seen:
                continue
            seen.add(id(node))
        out.append((where, node))
        depth = _depth(where)
        if max_depth is not None and depth >= max_depth:
            continue
        if isinstance(node, dict):
            stack.extend(((where, str(k), depth + 1), v) for k, v in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend(((where, i, depth + 1), v) for i, v in reversed(list(enumerate(node))))
    return out


def _json_name(number: float) -> str:
    if math.isnan(number):
        return "NaN"
    return "Infinity" if number > 0 else "-Infinity"


def _has_surrogate(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def inspect_value(value: Any, *, finite: bool = True, max_depth: int = MAX_DEPTH) -> list[Finding]:
    """What a parsed value holds that ragmeter cannot keep (see the module docstring).
    ``finite=False`` leaves NaN/Infinity alone (a replayed response is checked when used)."""
    findings: list[Finding] = []
    for where, node in _walk(value, max_depth):
        if isinstance(node, str):
            if _has_surrogate(node):
                findings.append(
                    Finding(_path(where), "holds an unpaired surrogate (\\ud800-\\udfff escape)")
                )
        elif isinstance(node, float):
            if finite and not math.isfinite(node):
                findings.append(
                    Finding(
                        _path(where),
                        f"{_json_name(node)} is not a finite number (NaN and Infinity cannot "
                        "be scored or stored); give a finite number",
                    )
                )
        elif isinstance(node, dict | list) and node:
            if _depth(where) >= max_depth:
                findings.append(Finding(_path(where), f"nested more than {max_depth} levels deep"))
            elif isinstance(node, dict):
                findings.extend(
                    Finding(_path(where, key), "the key holds an unpaired surrogate")
                    for key in node
                    if isinstance(key, str) and _has_surrogate(key)
                )
    return findings


def case_id_of(record: Any) -> str | None:
    """The case id a record names (``case_id`` or another name of it), for messages; None if
    it has none."""
    if not isinstance(record, dict):
        return None
    raw = next(
        (record[k] for k in ("case_id", "id", "qid", "query_id", "question_id") if k in record),
        None,
    )
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        return None
    return str(raw)


def iter_jsonl(path: Path, problems: list[Problem]) -> Iterator[tuple[int, int, Any]]:
    """:func:`read_jsonl` one line at a time, as (line number, byte offset, value), so a file
    larger than memory can be read; a byte that is not UTF-8 ends the reading with a problem
    naming its offset."""
    where = str(path)
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        problems.append(Problem(where, None, None, "no such file"))
        return
    except IsADirectoryError:
        problems.append(Problem(where, None, None, "is a folder, not a file"))
        return
    except OSError as exc:
        problems.append(Problem(where, None, None, f"cannot read file: {exc.strerror or exc}"))
        return
    with handle:
        offset = 0
        for number, raw in enumerate(handle, start=1):
            start, skip = offset, 3 if number == 1 and raw.startswith(b"\xef\xbb\xbf") else 0
            offset += len(raw)
            try:
                line = raw[skip:].decode("utf-8").removesuffix("\n").removesuffix("\r")
            except UnicodeDecodeError as exc:
                byte = start + skip + exc.start
                problems.append(
                    Problem(where, None, None, f"not UTF-8 text (byte {byte}: {exc.reason})")
                )
                return
            if not line.strip():
                continue
            try:
                value, findings = loads_line(line)
            except JsonLineError as exc:
                problems.append(Problem(where, number, None, str(exc)))
                continue
            case_id = case_id_of(value)
            problems.extend(Problem(where, number, f.field, f.message, case_id) for f in findings)
            yield number, start, value


def read_jsonl(path: Path, problems: list[Problem]) -> list[tuple[int, Any]]:
    """Every non-blank line of ``path`` as (line number, value); a line that is not JSON is a
    problem (and left out), a duplicate key is a problem (the value is kept)."""
    return [(number, value) for number, _, value in iter_jsonl(path, problems)]

"""JSON files read strictly, with the line of every value a problem names.

A JSON file (one document, or several placed one after another, as Qasper's dump) is parsed
once at C speed; a key given twice in one object is a problem at the line of its second
occurrence (JSON would silently keep the last), found by a second, position-aware walk that
runs only when the parser saw a duplicate. :func:`json_records` gives the records of a list of
cases (a JSON list, an object holding the list under one key, or objects one after another)
each with the line of its opening brace, so a problem names the real file:line.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.datasets.jsonl import DUPLICATE_KEY, case_id_of, read_text
from ragmeter.datasets.problems import DatasetError, Problem

__all__ = ["JsonDocument", "json_records", "read_json_document"]

_SPACE = re.compile(r"[ \t\n\r]*")
_PLAIN = json.JSONDecoder()


@dataclass
class JsonDocument:
    """A parsed JSON file: its text, its values with their start offsets, and where a key is
    given twice (offset of the second key, path of keys and indexes from the value's root)."""

    path: Path
    text: str
    values: list[tuple[int, Any]]
    duplicates: list[tuple[int, int, list[str | int]]]  # (value index, offset, path)
    _newlines: list[int] | None = None

    def line_of(self, offset: int) -> int:
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer("\n", self.text)]
        return bisect.bisect_left(self._newlines, offset) + 1


def _skip(text: str, position: int) -> int:
    match = _SPACE.match(text, position)
    return match.end() if match else position


def _find_duplicates(
    text: str, position: int, path: list[str | int], out: list[tuple[int, list[str | int]]]
) -> int:
    """Walk the JSON value at ``position`` (already known to parse), appending every key given
    twice in one object; returns the offset after the value."""
    opening = text[position]
    if opening not in "{[":
        return int(_PLAIN.raw_decode(text, position)[1])
    closing = "}" if opening == "{" else "]"
    position = _skip(text, position + 1)
    if text[position] == closing:
        return position + 1
    seen: set[str] = set()
    index = 0
    while True:
        if opening == "{":
            key, after = _PLAIN.raw_decode(text, position)
            if key in seen:
                out.append((position, [*path, key]))
            seen.add(key)
            position = _skip(text, _skip(text, after) + 1)  # past the ':'
            step: str | int = key
        else:
            step, index = index, index + 1
        position = _skip(text, _find_duplicates(text, position, [*path, step], out))
        if text[position] == ",":
            position = _skip(text, position + 1)
            continue
        return position + 1


def read_json_document(path: Path) -> JsonDocument:
    """The JSON values of ``path`` (a problem for invalid JSON, none for duplicates: see
    :attr:`JsonDocument.duplicates`)."""
    problems: list[Problem] = []
    text = read_text(path, problems)
    if text is None:
        raise DatasetError(problems)
    twice = False

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal twice
        obj = dict(pairs)
        if len(obj) != len(pairs):
            twice = True
        return obj

    decoder = json.JSONDecoder(object_pairs_hook=pairs_hook)
    values: list[tuple[int, Any]] = []
    position = _skip(text, 0)
    while position < len(text):
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            message = f"invalid JSON: {exc.msg} (column {exc.colno})"
            raise DatasetError([Problem(str(path), exc.lineno, None, message)]) from None
        except RecursionError:
            message = "invalid JSON: nested too deeply to read"
            raise DatasetError([Problem(str(path), None, None, message)]) from None
        except ValueError as exc:  # e.g. an integer with more digits than Python converts
            raise DatasetError([Problem(str(path), None, None, f"invalid JSON: {exc}")]) from None
        values.append((position, value))
        position = _skip(text, end)
    document = JsonDocument(path, text, values, [])
    if twice:
        for number, (start, _) in enumerate(values):
            found: list[tuple[int, list[str | int]]] = []
            try:
                _find_duplicates(text, start, [], found)
            except RecursionError:  # too deep to walk: the duplicate is named without a line
                document.duplicates.append((number, -1, []))
                continue
            document.duplicates.extend((number, offset, keys) for offset, keys in found)
    return document


def duplicate_problems(document: JsonDocument) -> list[Problem]:
    """Every key given twice, as a problem at its line, the field the path from the root."""
    problems: list[Problem] = []
    for _, offset, keys in document.duplicates:
        line = document.line_of(offset) if offset >= 0 else None
        field = ".".join(str(key) for key in keys) or None
        problems.append(Problem(str(document.path), line, field, DUPLICATE_KEY))
    return problems


def _member(text: str, start: int, wanted: str) -> int | None:
    """The offset of the value of key ``wanted`` in the object at ``start`` (its last one)."""
    position = _skip(text, start + 1)
    found = None
    while text[position] != "}":
        key, after = _PLAIN.raw_decode(text, position)
        position = _skip(text, _skip(text, after) + 1)
        if key == wanted:
            found = position
        position = _skip(text, _PLAIN.raw_decode(text, position)[1])
        if text[position] == ",":
            position = _skip(text, position + 1)
    return found


def _elements(text: str, start: int) -> list[int]:
    """The offsets of the elements of the list at ``start``."""
    offsets: list[int] = []
    position = _skip(text, start + 1)
    while text[position] != "]":
        offsets.append(position)
        position = _skip(text, _PLAIN.raw_decode(text, position)[1])
        if text[position] == ",":
            position = _skip(text, position + 1)
    return offsets


def json_records(path: Path, list_keys: tuple[str, ...]) -> list[tuple[int, Any]]:
    """The records of a JSON file of cases, each with the line its value starts on: a list,
    an object holding the list under one of ``list_keys``, or objects one after another. A key
    given twice is a problem naming the record's line, case and field."""
    document = read_json_document(path)
    text, values = document.text, document.values
    if not values:
        raise DatasetError([Problem(str(path), None, None, "holds no JSON value")])
    prefix: list[str | int] | None = None  # the path to the list; None: records are values
    offsets: list[int]
    if len(values) == 1 and isinstance(values[0][1], dict):
        start, value = values[0]
        key = next((k for k in list_keys if isinstance(value.get(k), list)), None)
        if key is not None:
            member = _member(text, start, key)
            assert member is not None
            prefix, offsets, records = [key], _elements(text, member), value[key]
        else:
            offsets, records = [start], [value]
    elif len(values) == 1 and isinstance(values[0][1], list):
        prefix, offsets, records = [], _elements(text, values[0][0]), values[0][1]
    else:
        offsets, records = [start for start, _ in values], [value for _, value in values]
    lines = [document.line_of(offset) for offset in offsets]
    problems: list[Problem] = []
    for number, offset, keys in document.duplicates:
        line = document.line_of(offset) if offset >= 0 else None
        case_id = None
        if prefix is None:  # a record per value: the path starts inside the record
            inside: list[str | int] = keys
            case_id = case_id_of(records[number])
        elif len(keys) > len(prefix) and keys[: len(prefix)] == prefix:
            index, *inside = keys[len(prefix) :]
            if isinstance(index, int) and index < len(records):
                case_id = case_id_of(records[index])
        else:  # outside every record (e.g. two 'cases' keys)
            inside = keys
        field = ".".join(str(key) for key in inside) or None
        problems.append(Problem(str(path), line, field, DUPLICATE_KEY, case_id))
    if problems:
        raise DatasetError(problems)
    return list(zip(lines, records, strict=True))

"""Field maps: which case field is read from which part of a foreign record.

A field map is ``{TARGET: SOURCE}``. ``TARGET`` is a case field or a dotted path into one
(``reference_answer``, ``gold_passages.0.doc_id``, ``gold_passages.*.doc_id``,
``metadata.team``); another name of a field (``ground_truth``) is read as the field. ``SOURCE``
is a column or key of the record, or a dotted path into it (``answers.text.0``); a key that
itself holds a dot is read as is first.

A ``*`` in a target spreads a list: ``gold_passages.*.doc_id=relevant_docs`` makes one gold
passage per item of ``relevant_docs``. One ``*`` per target; a list is either spread or indexed
(``gold_passages.*`` and ``gold_passages.0`` in one map is a problem).

On the command line (:func:`parse_field_map`) each ``--field-map`` value holds one or more
``TARGET=SOURCE`` entries separated by commas; ``\\,`` is a comma inside a name. Every problem
names the entry it is about.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import AliasChoices, BaseModel

from ragmeter.errors import InputError
from ragmeter.models import Case

STAR = "*"
MAX_INDEX = 99  # gold_passages.99.doc_id at most: an index is a column of a flat file
REQUIRED = ("case_id", "question")

__all__ = [
    "STAR",
    "FieldMapError",
    "Target",
    "check_field_map",
    "field_names",
    "parse_field_map",
    "parse_target",
]


class FieldMapError(InputError):
    """A field map that cannot be used; ``str()`` names the entry and why."""


@dataclass(frozen=True)
class Target:
    """A parsed target: its parts (``str`` keys, ``int`` indexes, ``STAR``) from the case's
    top level, the entry as given, the type of the value it receives and its source."""

    parts: tuple[str | int, ...]
    entry: str
    leaf: Any
    source: str = ""

    @property
    def field(self) -> str:
        return str(self.parts[0])

    @property
    def path(self) -> str:
        return ".".join(str(p) for p in self.parts)


def field_names(model: type[BaseModel]) -> dict[str, str]:
    """Every input name of ``model``'s fields (the name and its aliases) -> the field's name."""
    names: dict[str, str] = {}
    for name, info in model.model_fields.items():
        names[name] = name
        alias = info.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
        for choice in choices:
            if isinstance(choice, str):
                names.setdefault(choice, name)
    return names


def _unwrap(annotation: Any) -> Any:
    """``X | None`` and ``Annotated[X, ...]`` as ``X``."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        else:
            return annotation


def is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def is_list(annotation: Any) -> bool:
    return typing.get_origin(_unwrap(annotation)) is list


def is_text_list(annotation: Any) -> bool:
    """A list of plain values (strings): what a CSV cell gives as ``a;b;c``."""
    inner = _unwrap(annotation)
    if typing.get_origin(inner) is not list:
        return False
    args = typing.get_args(inner)
    item = _unwrap(args[0]) if args else Any
    return not (is_model(item) or typing.get_origin(item) in (list, dict))


def is_structured(annotation: Any) -> bool:
    """A field whose value is a mapping or a list of mappings (JSON text in a CSV cell)."""
    inner = _unwrap(annotation)
    return (
        is_model(inner)
        or typing.get_origin(inner) is dict
        or (is_list(inner) and not is_text_list(inner))
    )


def _describe(annotation: Any) -> str:
    inner = _unwrap(annotation)
    if inner is str:
        return "a string"
    if inner is bool:
        return "true/false"
    if inner in (int, float):
        return "a number"
    return "a single value"


def parse_target(target: str, entry: str | None = None) -> Target:
    """``target`` checked against the case schema; raises :class:`FieldMapError`."""
    entry = entry if entry is not None else target
    text = target.strip()
    if not text:
        raise FieldMapError(f"{entry!r}: the case field (before '=') is empty")
    raw = text.split(".")
    names = field_names(Case)
    top = raw[0]
    if top not in names:
        close = difflib.get_close_matches(top, list(names), n=1, cutoff=0.75)
        hint = f"; did you mean '{names[close[0]]}'?" if close else ""
        raise FieldMapError(
            f"{entry!r}: '{top}' is not a case field{hint} (the case field comes first: "
            "FIELD=SOURCE; `ragmeter datasets schema` lists them)"
        )
    parts: list[str | int] = [names[top]]
    annotation: Any = Case.model_fields[names[top]].annotation
    where = names[top]
    stars = 0
    for part in raw[1:]:
        inner = _unwrap(annotation)
        origin = typing.get_origin(inner)
        if part == "":
            raise FieldMapError(
                f"{entry!r}: an empty part in '{text}' (two dots, or one at an end)"
            )
        if origin is list:
            if part == STAR:
                stars += 1
                if stars > 1:
                    raise FieldMapError(f"{entry!r}: only one '*' per field")
                parts.append(STAR)
            elif part.isdigit() and part.isascii():
                if int(part) > MAX_INDEX:
                    raise FieldMapError(f"{entry!r}: index {part} is over {MAX_INDEX}")
                parts.append(int(part))
            else:
                raise FieldMapError(
                    f"{entry!r}: '{where}' is a list: the next part is a position (0, 1, ...) "
                    f"or '*' (one item per list item), not '{part}'"
                )
            args = typing.get_args(inner)
            annotation = args[0] if args else Any
        elif origin is dict:
            args = typing.get_args(inner)
            annotation = args[1] if len(args) == 2 else Any
            parts.append(part)
        elif is_model(inner):
            fields = field_names(inner)
            if part not in fields:
                close = difflib.get_close_matches(part, list(fields), n=1, cutoff=0.6)
                hint = f"; did you mean '{fields[close[0]]}'?" if close else ""
                raise FieldMapError(
                    f"{entry!r}: '{part}' is not a field of '{where}' "
                    f"(its fields: {', '.join(inner.model_fields)}){hint}"
                )
            parts.append(fields[part])
            annotation = inner.model_fields[fields[part]].annotation
        elif inner is Any:
            parts.append(part)
        else:
            raise FieldMapError(
                f"{entry!r}: '{where}' holds {_describe(inner)}; there is nothing inside it to map"
            )
        where = f"{where}.{part}"
    return Target(tuple(parts), entry, annotation)


def check_field_map(field_map: Mapping[str, str]) -> list[Target]:
    """The targets of ``field_map``, checked one against another; raises
    :class:`FieldMapError` naming every bad entry."""
    errors: list[str] = []
    targets: list[Target] = []
    for target, source in field_map.items():
        entry = f"{target}={source}"
        if not isinstance(source, str) or not source.strip():
            errors.append(f"{entry!r}: the source (after '=') is empty")
            continue
        try:
            parsed = parse_target(target, entry)
            targets.append(Target(parsed.parts, entry, parsed.leaf, source.strip()))
        except FieldMapError as exc:
            errors.append(str(exc))
    seen: list[Target] = []
    for one in targets:
        for other in seen:
            shorter, longer = sorted((one.parts, other.parts), key=len)
            if longer[: len(shorter)] == shorter:
                errors.append(
                    f"{one.entry!r}: maps the same field as {other.entry!r}"
                    if len(shorter) == len(longer)
                    else f"{one.entry!r} and {other.entry!r}: one maps a part of the other"
                )
                break
            if _star_and_index(one.parts, other.parts):
                errors.append(
                    f"{one.entry!r} and {other.entry!r}: a list is either spread ('*') or "
                    "given by positions, not both"
                )
                break
        seen.append(one)
    if errors:
        raise FieldMapError("; ".join(errors))
    return targets


def _star_and_index(first: tuple[str | int, ...], second: tuple[str | int, ...]) -> bool:
    for a, b in zip(first, second, strict=False):
        if a != b:
            return (a == STAR and isinstance(b, int)) or (b == STAR and isinstance(a, int))
    return False


def _split_entries(value: str) -> list[str]:
    """``a=b,c=d`` as its entries; ``\\,`` is a comma inside an entry."""
    entries: list[str] = []
    current: list[str] = []
    escaped = False
    for char in value:
        if escaped:
            current.append(char if char == "," else "\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            entries.append("".join(current))
            current = []
        else:
            current.append(char)
    if escaped:
        current.append("\\")
    entries.append("".join(current))
    return entries


def parse_field_map(values: Iterable[str]) -> dict[str, str]:
    """``--field-map`` values (each ``TARGET=SOURCE[,TARGET=SOURCE...]``) as a checked field
    map; raises :class:`FieldMapError` naming every bad entry."""
    found: dict[str, str] = {}
    errors: list[str] = []
    for value in values:
        for raw in _split_entries(value):
            entry = raw.strip()
            if not entry:
                if not value.strip():
                    errors.append(f"{value!r}: an empty entry (expected FIELD=SOURCE)")
                continue
            target, present, source = entry.partition("=")
            if not present:
                errors.append(
                    f"{entry!r}: expected FIELD=SOURCE (a comma separates entries; write '\\,' "
                    "for a comma inside a name)"
                )
                continue
            target, source = target.strip(), source.strip()
            if not target or not source:
                side = "case field (before '=')" if not target else "source (after '=')"
                errors.append(f"{entry!r}: the {side} is empty")
                continue
            if target in found:
                errors.append(f"{entry!r}: '{target}' is mapped twice")
                continue
            found[target] = source
    try:
        check_field_map(found)
    except FieldMapError as exc:
        errors.append(str(exc))
    if errors:
        raise FieldMapError("; ".join(errors))
    return found

"""Breakdowns: the scorecard recomputed within groups of cases (seed 004).

A field is a Case attribute (``category``, ``tags``, ``difficulty``, ``answerable``,
``query_type``, ``dataset``, ...) or ``metadata.FIELD``. List values (tags) put a case in every
group it names; a case with no value goes to the group ``(none)``.
"""

from __future__ import annotations

from typing import Any

from ragmeter.errors import InputError
from ragmeter.models import Case

NONE_LABEL = "(none)"
BUILTIN_FIELDS = ("category", "tags", "difficulty", "answerable", "query_type", "dataset")


class BreakdownFieldError(InputError):
    pass


def _label(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def check_field(field: str) -> None:
    """Raise a BreakdownFieldError naming the fields that can be used."""
    if field.startswith("metadata.") and len(field) > len("metadata."):
        return
    if field in Case.model_fields and field != "metadata":
        return
    raise BreakdownFieldError(
        f"cannot break down by {field!r}: use a case field such as "
        f"{', '.join(BUILTIN_FIELDS)}, or metadata.FIELD"
    )


def case_labels(case: Case, field: str) -> list[str]:
    """The group labels of one case for ``field``."""
    if field[:9] != "metadata.":
        direct = getattr(case, field)
        if isinstance(direct, str) and direct:
            return [direct]
    if field.startswith("metadata."):
        value: Any = case.metadata
        for part in field.split(".")[1:]:
            value = value.get(part) if isinstance(value, dict) else None
    else:
        value = getattr(case, field)
    if value is None or value == "":
        return [NONE_LABEL]
    if isinstance(value, list | tuple | set):
        labels = [_label(item) for item in value]
        return sorted(set(labels)) or [NONE_LABEL]
    if isinstance(value, dict):
        return [NONE_LABEL] if not value else [_label(key) for key in sorted(value)]
    return [_label(value)]


def labels_by_case(cases: list[Case], field: str) -> list[list[str]]:
    check_field(field)
    if not field.startswith("metadata."):
        values = [getattr(case, field) for case in cases]
        if all(isinstance(v, str | bool) or v is None for v in values):
            return [[NONE_LABEL] if v is None or v == "" else [_label(v)] for v in values]
    return [case_labels(case, field) for case in cases]

"""Dotted-path access into parsed JSON: ``a.b.0.c``."""

from __future__ import annotations

from typing import Any

MISSING: Any = object()


def get_path(data: Any, path: str) -> Any:
    """The value at ``path`` in nested dicts/lists, or ``MISSING``; ``""`` is the whole value."""
    current = data
    for part in path.split(".") if path else []:
        if isinstance(current, dict):
            if part not in current:
                return MISSING
            current = current[part]
        elif isinstance(current, list) and part.lstrip("-").isdigit():
            index = int(part)
            if not -len(current) <= index < len(current):
                return MISSING
            current = current[index]
        else:
            return MISSING
    return current

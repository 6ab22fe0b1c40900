"""Details dicts shared by the scores whose details are equal.

Many metrics give every case one of a few details (``{"class": "CORRECT"}``,
``{"detected_by": "field"}``, ``{"error_type": None}``). A :class:`SharedDetails` makes each
distinct one once and hands the same dict to every score that has it, as the retrieval metrics
do with ``{"level": ...}``: a score's details are never changed once made, and the run store
turns a dict shared by several scores into JSON once (``store.sqlite.score_rows``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any


class SharedDetails:
    """One details dict per key: ``make()`` the first time a key is asked, then the same dict.

    A key must tell apart every details it stands for, values' types included (``True`` and
    ``1`` are equal keys): callers build keys of values whose type is fixed. At most ``limit``
    dicts are kept; past it, each call makes a fresh dict (equal, not shared)."""

    __slots__ = ("_limit", "_made")

    def __init__(self, limit: int = 1024) -> None:
        self._made: dict[Hashable, dict[str, Any]] = {}
        self._limit = limit

    def get(self, key: Hashable, make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        found = self._made.get(key)
        if found is None:
            found = make()
            if len(self._made) < self._limit:
                self._made[key] = found
        return found

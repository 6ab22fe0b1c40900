"""One lazy registry for metrics, targets, judges and loaders.

Entries are ``"module:attribute"`` strings, imported only when asked for. Third-party packages
add entries through the entry-point groups ``ragmeter.metrics``, ``ragmeter.targets``,
``ragmeter.judges`` and ``ragmeter.loaders``. Unknown names fail with a "did you mean".
"""

from __future__ import annotations

import difflib
import importlib
from importlib.metadata import entry_points
from typing import Any, Literal

Kind = Literal["metrics", "targets", "judges", "loaders"]
KINDS: tuple[Kind, ...] = ("metrics", "targets", "judges", "loaders")


class UnknownNameError(KeyError):
    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        available = ", ".join(sorted(known))
        self.message = f"unknown {kind[:-1]} {name!r}{hint} (available: {available})"
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


_BUILTINS: dict[Kind, dict[str, str]] = {
    "metrics": {
        "retrieval": "ragmeter.metrics.retrieval:retrieval_metrics",
        "lexical": "ragmeter.metrics.lexical:lexical_metrics",
        "abstention": "ragmeter.metrics.abstention:abstention_metrics",
        "performance": "ragmeter.metrics.performance:performance_metrics",
        "context": "ragmeter.metrics.context:context_metrics",
        "assertions": "ragmeter.metrics.assertions:assertion_metrics",
        "citation": "ragmeter.metrics.citation:citation_metrics",
        "grounding": "ragmeter.metrics.grounding:grounding_metrics",
        "semantic": "ragmeter.metrics.semantic:semantic_metrics",
        "judged": "ragmeter.metrics.judged:judged_metrics",
    },
    "targets": {
        "http": "ragmeter.targets.http:HttpTarget",
        "python": "ragmeter.targets.python:PythonTarget",
        "replay": "ragmeter.targets.replay:ReplayTarget",
        "reference": "ragmeter.targets.reference.target:ReferenceTarget",
    },
    "judges": {},
    "loaders": {
        "jsonl": "ragmeter.datasets.native:load_jsonl",
        "yaml": "ragmeter.datasets.native:load_yaml",
        "labels": "ragmeter.datasets.labels:load_label_folder",
        "mapped": "ragmeter.datasets.mapped:load_mapped",
    },
}


class Registry:
    def __init__(self) -> None:
        self._entries: dict[Kind, dict[str, str | Any]] = {
            kind: dict(_BUILTINS[kind]) for kind in KINDS
        }
        self._plugins_loaded = False

    def register(self, kind: Kind, name: str, target: str | Any) -> None:
        """Add ``name`` under ``kind``: a ``"module:attr"`` string or the object itself."""
        self._entries[kind][name] = target

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for kind in KINDS:
            for entry in entry_points(group=f"ragmeter.{kind}"):
                self._entries[kind].setdefault(entry.name, entry.value)

    def names(self, kind: Kind) -> list[str]:
        self._load_plugins()
        return sorted(self._entries[kind])

    def get(self, kind: Kind, name: str) -> Any:
        self._load_plugins()
        entries = self._entries[kind]
        if name not in entries:
            raise UnknownNameError(kind, name, list(entries))
        entry = entries[name]
        if isinstance(entry, str):
            module_name, _, attribute = entry.partition(":")
            entry = getattr(importlib.import_module(module_name), attribute)
            entries[name] = entry
        return entry


registry = Registry()

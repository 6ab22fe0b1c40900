"""One lazy registry for every extension point: metric families, targets, judge providers,
embedders and dataset loaders.

Entries are ``"module:attribute"`` strings, imported only when asked for. Third-party packages
add entries through the entry-point groups ``ragmeter.metrics``, ``ragmeter.targets``,
``ragmeter.judges``, ``ragmeter.embedders`` and ``ragmeter.loaders``; an entry whose import
fails for a missing package raises :class:`PluginImportError` with the install hint registered
for it. Unknown names fail with a "did you mean".

What each point's object is called with:

- ``metrics``: a ``MetricFamily`` (its build function and the parameters ``-P`` sets,
  :mod:`ragmeter.metrics.family`), or a plain ``family(settings: MetricSettings) ->
  list[Metric]``;
- ``targets``: a class built as ``cls(config: TargetConfig, concurrency=N)``;
- ``judges``: ``provider(model, *, api_key_env, timeout_s, max_retries) -> Judge`` (the spec
  ``NAME:MODEL``), best a ``JudgeProviderSpec`` that also declares its pre-flight check (see
  :mod:`ragmeter.judges.providers`);
- ``embedders``: ``factory(argument: str) -> Embedder`` (the spec ``NAME`` or ``NAME:ARG``);
- ``loaders``: ``loader(argument) -> list[Case]`` (the dataset ``NAME:ARG``; the built-in file
  loaders are given a ``Path``).
"""

from __future__ import annotations

import difflib
import importlib
import threading
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Literal

from ragmeter.errors import InputError

ExtensionPoint = Literal["metrics", "targets", "judges", "embedders", "loaders"]
EXTENSION_POINTS: tuple[ExtensionPoint, ...] = (
    "metrics",
    "targets",
    "judges",
    "embedders",
    "loaders",
)


class UnknownNameError(InputError, KeyError):
    def __init__(self, point: str, name: str, known: list[str]) -> None:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        available = ", ".join(sorted(known))
        self.message = f"unknown {_singular(point)} {name!r}{hint} (available: {available})"
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class PluginImportError(InputError):
    """A registered entry whose module cannot be imported (a package it needs is missing)."""


def _singular(point: str) -> str:
    return {"metrics": "metric family", "judges": "judge provider"}.get(point, point[:-1])


@dataclass
class Entry:
    target: str | Any  # "module:attribute" until first use, then the object itself
    install_hint: str | None = None  # what to install when the import fails
    origin: str = "built-in"  # or the distribution of the plugin that registered it


_SEMANTIC = "pip install 'ragmeter[semantic]'"
_BUILTINS: dict[ExtensionPoint, dict[str, str | tuple[str, str]]] = {
    "metrics": {
        "retrieval": "ragmeter.metrics.retrieval:retrieval_family",
        "lexical": "ragmeter.metrics.lexical:lexical_metrics",
        "abstention": "ragmeter.metrics.abstention:abstention_family",
        "performance": "ragmeter.metrics.performance:performance_metrics",
        "pipeline": "ragmeter.metrics.pipeline:pipeline_metrics",
        "context": "ragmeter.metrics.context:context_metrics",
        "assertions": "ragmeter.metrics.assertions:assertion_metrics",
        "citation": "ragmeter.metrics.citation:citation_family",
        "grounding": "ragmeter.metrics.grounding.family:grounding_family",
        "semantic": "ragmeter.metrics.semantic:semantic_family",
        "judged": "ragmeter.metrics.judged:judged_family",
        "trec": "ragmeter.metrics.ir.case_metrics:trec_family",
        "leakage": "ragmeter.metrics.leakage:leakage_family",
        "injection": "ragmeter.metrics.injection:injection_family",
    },
    "targets": {
        "http": "ragmeter.targets.http:HttpTarget",
        "python": "ragmeter.targets.python:PythonTarget",
        "replay": "ragmeter.targets.replay:ReplayTarget",
        "reference": "ragmeter.targets.reference.target:ReferenceTarget",
    },
    "judges": {
        "openai": "ragmeter.judges.providers:OPENAI",
        "anthropic": "ragmeter.judges.providers:ANTHROPIC",
        "http": "ragmeter.judges.providers:HTTP",
        "local": (
            "ragmeter.judges.providers:LOCAL",
            "pip install 'ragmeter[judge-local]' (python scripts/setup_llama.py builds it)",
        ),
    },
    "embedders": {
        "minilm": ("ragmeter.embedders.providers:minilm_embedder", _SEMANTIC),
        "openai": "ragmeter.embedders.providers:openai_embedder",
        "http": "ragmeter.embedders.providers:http_embedder",
    },
    # every dataset ragmeter knows by name and the file formats: ragmeter.datasets.declarations
    "loaders": {},
}


def _entry(value: str | tuple[str, str]) -> Entry:
    if isinstance(value, tuple):
        return Entry(value[0], install_hint=value[1])
    return Entry(value)


def _builtin_loaders() -> dict[str, str]:
    # imported when first needed: the datasets package imports this module
    from ragmeter.datasets.declarations import DATASETS, FILE_LOADERS

    return {**FILE_LOADERS, **{dataset.name: dataset.loader for dataset in DATASETS}}


class Registry:
    def __init__(self) -> None:
        self._entries: dict[ExtensionPoint, dict[str, Entry]] = {
            point: {name: _entry(value) for name, value in _BUILTINS[point].items()}
            for point in EXTENSION_POINTS
        }
        self._plugins_loaded = False
        self._loaders_added = False
        self._lock = threading.Lock()
        self.shadowed: list[str] = []  # plugin entries ignored because their name was taken

    def register(
        self,
        point: ExtensionPoint,
        name: str,
        target: str | Any,
        *,
        install_hint: str | None = None,
        origin: str = "registered",
    ) -> None:
        """Add ``name`` under ``point``: a ``"module:attr"`` string or the object itself."""
        if point not in EXTENSION_POINTS:
            raise InputError(
                f"unknown extension point {point!r}; the points: {', '.join(EXTENSION_POINTS)}"
            )
        self._entries[point][name] = Entry(target, install_hint, origin)

    def _add_builtin_loaders(self) -> None:
        if not self._loaders_added:
            for name, value in _builtin_loaders().items():  # an earlier register() wins
                self._entries["loaders"].setdefault(name, _entry(value))
            self._loaders_added = True

    def snapshot(self) -> dict[ExtensionPoint, dict[str, Entry]]:
        """A copy of every entry, for ``restore`` (a test's registrations undone after it)."""
        self._add_builtin_loaders()
        return {point: dict(entries) for point, entries in self._entries.items()}

    def restore(self, snapshot: dict[ExtensionPoint, dict[str, Entry]]) -> None:
        with self._lock:
            for point, entries in snapshot.items():
                self._entries[point] = dict(entries)

    def _load_plugins(self) -> None:
        with self._lock:
            if self._plugins_loaded:
                return
            self._add_builtin_loaders()
            for point in EXTENSION_POINTS:
                for found in entry_points(group=f"ragmeter.{point}"):
                    origin = found.dist.name if found.dist is not None else "plugin"
                    if found.name in self._entries[point]:  # a built-in (or earlier) name wins
                        held = self._entries[point][found.name].origin
                        self.shadowed.append(
                            f"{_singular(point)} {found.name!r} of {origin} is ignored: "
                            f"the name is taken by {held}"
                        )
                        continue
                    self._entries[point][found.name] = Entry(found.value, origin=origin)
            self._plugins_loaded = True

    def names(self, point: ExtensionPoint, *, built_in: bool | None = None) -> list[str]:
        """The names under ``point``: all, or (``built_in``) only ragmeter's own or only the
        others (registered, or from a package's entry points)."""
        self._load_plugins()
        return sorted(
            name
            for name, entry in self._entries[point].items()
            if built_in is None or (entry.origin == "built-in") == built_in
        )

    def origin(self, point: ExtensionPoint, name: str) -> str:
        """``built-in``, or the distribution that registered ``name`` through an entry point."""
        self._load_plugins()
        return self._entries[point][name].origin if name in self._entries[point] else "unknown"

    def get(self, point: ExtensionPoint, name: str) -> Any:
        self._load_plugins()
        entries = self._entries[point]
        if name not in entries:
            raise UnknownNameError(point, name, list(entries))
        entry = entries[name]
        if isinstance(entry.target, str):
            module_name, _, attribute = entry.target.partition(":")
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError as exc:
                hint = entry.install_hint or f"install the package that provides {module_name}"
                raise PluginImportError(
                    f"{_singular(point)} {name!r} cannot be loaded: {exc}; {hint}"
                ) from exc
            except Exception as exc:  # a plugin broken on import (an API it uses is gone, ...)
                raise PluginImportError(
                    f"{_singular(point)} {name!r} ({entry.origin}) failed to import "
                    f"{module_name}: {type(exc).__name__}: {exc}"
                ) from exc
            try:
                entry.target = getattr(module, attribute)
            except AttributeError:
                raise PluginImportError(
                    f"{_singular(point)} {name!r}: {module_name} has no {attribute!r}"
                ) from None
        return entry.target


registry = Registry()

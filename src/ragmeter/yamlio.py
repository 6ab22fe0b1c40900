"""YAML reading that refuses what PyYAML lets slip, with errors that name ``source:line``.

PyYAML keeps the last of two equal keys in a mapping without a word, so a config or a case
that says ``question:`` twice silently loses one of them. :class:`StrictSafeLoader` records
every duplicate key while it composes the document (before ``<<`` merges are applied, so a
key that overrides a merged one is fine) and :func:`load_yaml` refuses the document with
``source:line: duplicate key 'x' (first at line N)``. Every other YAML error, and nesting too
deep to read, becomes a :class:`YamlError` of the same form, never a traceback.

``<<`` merge keys follow the YAML merge-key spec (yaml.org/type/merge.html) with every PyYAML
version: a mapping's own keys win over merged ones, and of several merged mappings the earlier
wins. PyYAML 6.0.4 keeps the first pair it meets instead, and since it flattens an anchored
mapping in place, ``{<<: *m}`` of ``m: &m {<<: {x: 1}, x: 2}`` read ``x: 1`` there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ragmeter.errors import InputError

__all__ = [
    "MAX_EXPANDED_VALUES",
    "DuplicateKey",
    "StrictSafeLoader",
    "YamlError",
    "alias_problem",
    "expanded_size",
    "load_yaml",
    "yaml_error_message",
]

_MERGE_TAG = "tag:yaml.org,2002:merge"
_VALUE_TAG = "tag:yaml.org,2002:value"
_STR_TAG = "tag:yaml.org,2002:str"

# aliases let a few lines stand for billions of values ("billion laughs"); no config or case
# needs more than this many once they are expanded
MAX_EXPANDED_VALUES = 100_000


class YamlError(InputError):
    """A YAML file or text that cannot be used; ``str()`` is ``source:line: message``."""

    def __init__(self, source: str, line: int | None, message: str) -> None:
        self.source = source
        self.line = line
        self.message = message
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class DuplicateKey:
    """A key given twice in one mapping: ``key`` as written; lines are 1-based."""

    key: str
    line: int
    first_line: int
    mapping: MappingNode

    @property
    def message(self) -> str:
        return f"duplicate key {self.key!r} (first at line {self.first_line})"


class StrictSafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that records duplicate mapping keys in ``duplicate_keys``.

    :func:`load_yaml` turns the first one into a :class:`YamlError`; a caller that composes
    nodes itself (the dataset reader, to report a duplicate against its case) reads the list.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicate_keys: list[DuplicateKey] = []

    def compose_mapping_node(self, anchor: Any) -> MappingNode:
        node: MappingNode = super().compose_mapping_node(anchor)
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
                continue  # complex keys are refused later by the constructor
            # the constructed key, so `yes`/`true` and `1`/`0x1` count as equal (a dict would
            # fold them into one entry just the same)
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
            except TypeError:
                continue
            if first is not None:
                self.duplicate_keys.append(DuplicateKey(key_node.value, line, first, node))
            else:
                seen[key] = line
        return node

    def flatten_mapping(self, node: MappingNode) -> None:
        """Replace ``node``'s ``<<`` keys by the pairs they merge, each key once: the node's own
        pairs first in priority, then the merged mappings in the order written (their own
        merges flattened first). PyYAML's constructor reads ``node.value`` afterwards."""
        own: list[tuple[Node, Node]] = []
        sources: list[MappingNode] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                sources.extend(self._merge_sources(node, value_node))
            else:
                if key_node.tag == _VALUE_TAG:
                    key_node.tag = _STR_TAG
                own.append((key_node, value_node))
        if not sources:
            node.value = own
            return
        taken = {self._merge_identity(key_node) for key_node, _ in own}
        merged: list[tuple[Node, Node]] = []
        for source in sources:
            self.flatten_mapping(source)
            for key_node, value_node in source.value:
                identity = self._merge_identity(key_node)
                if identity not in taken:
                    taken.add(identity)
                    merged.append((key_node, value_node))
        node.value = merged + own

    def _merge_sources(self, node: MappingNode, value_node: Node) -> list[MappingNode]:
        if isinstance(value_node, MappingNode):
            return [value_node]
        if isinstance(value_node, SequenceNode):
            sources = []
            for item in value_node.value:
                if not isinstance(item, MappingNode):
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"expected a mapping for merging, but found {_kind(item)}",
                        item.start_mark,
                    )
                sources.append(item)
            return sources
        raise yaml.constructor.ConstructorError(
            "while constructing a mapping",
            node.start_mark,
            f"expected a mapping or list of mappings for merging, but found {_kind(value_node)}",
            value_node.start_mark,
        )

    def _merge_identity(self, key_node: Node) -> Any:
        """What makes two keys the same key: the constructed scalar (``1`` and ``0x1`` are one
        key, as in a dict); a complex key is its own (the constructor refuses it later)."""
        if isinstance(key_node, ScalarNode):
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                return ("node", id(key_node))
            return ("key", key)
        return ("node", id(key_node))


def _kind(node: Node) -> str:
    kinds = {ScalarNode: "scalar", SequenceNode: "sequence", MappingNode: "mapping"}
    return kinds.get(type(node), "node")


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def expanded_size(root: Node, limit: int = MAX_EXPANDED_VALUES) -> int | None:
    """How many values ``root`` holds once its aliases are expanded (counting stops a little
    past ``limit``); None if it contains itself through an alias."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, closing = stack.pop()
        if closing:
            open_nodes.discard(id(node))
            total = 1 + sum(sizes[id(child)] for child in _children(node))
            sizes[id(node)] = min(total, limit + 1)
            continue
        if id(node) in sizes:
            continue
        if id(node) in open_nodes:
            return None
        open_nodes.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
    return sizes[id(root)]


def alias_problem(node: Node) -> str | None:
    """Why ``node`` cannot be read once its aliases are expanded, or None."""
    size = expanded_size(node)
    if size is None:
        return "contains itself through a YAML alias"
    if size > MAX_EXPANDED_VALUES:
        return f"expands to more than {MAX_EXPANDED_VALUES} values through YAML aliases"
    return None


def yaml_error_message(exc: yaml.YAMLError) -> tuple[int | None, str]:
    """(1-based line or None, readable message) of a PyYAML error."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        message = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem:
            context_line = (
                f" at line {exc.context_mark.line + 1}"
                if exc.context_mark is not None and exc.context_mark.line + 1 != line
                else ""
            )
            message = f"{message} ({exc.context}{context_line})"
        return line, f"invalid YAML: {message}"
    return None, f"invalid YAML: {exc}"


def load_yaml(text_or_path: str | Path, source: str) -> Any:
    """The data of one YAML document: ``text_or_path`` is the text itself (a ``str``) or the
    file to read (a ``Path``); ``source`` names it in errors. Raises :class:`YamlError` for an
    unreadable file, invalid YAML, a duplicate key or nesting too deep to read. An empty
    document is ``None``."""
    if isinstance(text_or_path, Path):
        try:
            text = text_or_path.read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise YamlError(source, None, "no such file") from None
        except IsADirectoryError:
            raise YamlError(source, None, "is a folder, not a YAML file") from None
        except UnicodeDecodeError as exc:
            raise YamlError(source, None, f"not UTF-8 text ({exc.reason})") from None
        except OSError as exc:
            raise YamlError(source, None, f"cannot read file: {exc.strerror or exc}") from None
    else:
        text = text_or_path
    loader = StrictSafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        problem = alias_problem(node)
        if problem is not None:
            raise YamlError(source, node.start_mark.line + 1, problem)
        data = loader.construct_document(node)
    except yaml.YAMLError as exc:
        line, message = yaml_error_message(exc)
        raise YamlError(source, line, message) from None
    except RecursionError:
        raise YamlError(source, None, "nested too deeply to read") from None
    finally:
        loader.dispose()
    if loader.duplicate_keys:
        first = loader.duplicate_keys[0]
        more = len(loader.duplicate_keys) - 1
        extra = f"; {more} more duplicate key(s) after it" if more else ""
        raise YamlError(source, first.line, first.message + extra)
    return data

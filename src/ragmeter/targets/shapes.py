"""What a reply looks like: objects made plain, and a reply's shape described for an error.

``to_plain`` turns what a Python target returned (a LlamaIndex ``Response``, LangChain
``Document`` objects, a Haystack dataclass, an OpenAI SDK object, ...) into JSON-like dicts and
lists by duck typing: pydantic models (v1 and v2) by their fields, dataclasses by theirs, other
objects by their public attributes. No framework is imported.

``describe_shape`` is the reply's keys and value types (never its values), cut short and with
secrets masked; ``suggest_mapping`` the ``--response-map`` flags that would read it.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from ragmeter.redaction import redact_text

_MAX_DEPTH = 24
_MAX_SHAPE = 600
_SHAPE_KEYS = 12
_SUGGEST_DEPTH = 5
_ANSWER_KEYS = (
    "answer",
    "response",
    "result",
    "output_text",
    "output",
    "text",
    "content",
    "reply",
    "completion",
    "generated_text",
    "message",
    "data",
)
_TEXT_KEYS = ("text", "content", "page_content", "chunk", "passage", "snippet", "body")
_ID_KEYS = ("chunk_id", "id", "node_id", "id_", "_id", "uuid")
_SCORE_KEYS = ("score", "similarity", "relevance_score")
_DOC_KEYS = ("doc_id", "document_id", "file_name", "filename", "source", "file_path", "path", "url")


def _key(key: Any) -> str:
    if isinstance(key, enum.Enum):  # LlamaIndex's relationships: NodeRelationship.SOURCE -> "1"
        key = key.value
    return key if isinstance(key, str) else str(key)


def _fields(value: Any) -> dict[str, Any] | None:
    """The named fields of an object (shallow), or None when it has none to read."""
    kind = type(value)
    model_fields = getattr(kind, "model_fields", None)  # pydantic v2
    if isinstance(model_fields, dict) and model_fields:
        found = {name: getattr(value, name, None) for name in model_fields}
        extra = getattr(value, "__pydantic_extra__", None)
        if isinstance(extra, dict):
            found.update(extra)
        return found
    v1_fields = getattr(kind, "__fields__", None)  # pydantic v1
    if isinstance(v1_fields, dict) and v1_fields:
        return {name: getattr(value, name, None) for name in v1_fields}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        found = {}
        for field in dataclasses.fields(value):
            # Haystack's ChatMessage keeps _role, _content: read as role, content
            name = field.name.lstrip("_") or field.name
            found.setdefault(name, getattr(value, field.name, None))
        return found
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        return {
            name: item
            for name, item in attributes.items()
            if not name.startswith("_") and not callable(item)
        }
    return None


def to_plain(value: Any, _depth: int = 0, _seen: frozenset[int] = frozenset()) -> Any:
    """``value`` as JSON-like data (dicts with str keys, lists, str, numbers, bool, None)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, enum.Enum):
        return to_plain(value.value, _depth + 1, _seen)
    if _depth >= _MAX_DEPTH or id(value) in _seen:
        return f"<{type(value).__name__}>"
    seen = _seen | {id(value)}
    if isinstance(value, dict):
        return {_key(k): to_plain(v, _depth + 1, seen) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_plain(item, _depth + 1, seen) for item in value]
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    tolist = getattr(value, "tolist", None)  # a numpy array or scalar
    if callable(tolist) and type(value).__module__.startswith("numpy"):
        try:
            return to_plain(tolist(), _depth + 1, seen)
        except Exception:
            return f"<{type(value).__name__}>"
    fields = _fields(value)
    if fields is None:
        return f"<{type(value).__name__}>"
    return {name: to_plain(item, _depth + 1, seen) for name, item in fields.items()}


def _short(key: str, limit: int = 40) -> str:
    return key if len(key) <= limit else key[: limit - 1] + "\u2026"


def _sketch(value: Any, depth: int) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if depth <= 0:
        return "{...}" if isinstance(value, dict) else "[...]"
    if isinstance(value, list):
        if not value:
            return "[]"
        more = f", ... ({len(value)} items)" if len(value) > 1 else ""
        return f"[{_sketch(value[0], depth - 1)}{more}]"
    if isinstance(value, dict):
        keys = list(value)[:_SHAPE_KEYS]
        parts = [f'"{_short(_key(k))}": {_sketch(value[k], depth - 1)}' for k in keys]
        if len(value) > _SHAPE_KEYS:
            parts.append(f"... ({len(value)} keys)")
        return "{" + ", ".join(parts) + "}"
    return f"<{type(value).__name__}>"


def describe_shape(value: Any, limit: int = _MAX_SHAPE) -> str:
    """``{"response": string, "source_nodes": [{"node_id": string, ...}, ... (3 items)]}``:
    keys and value types of a (plain) reply, never its values; at most ``limit`` characters,
    secrets masked (a key may hold one)."""
    shape = redact_text(" ".join(_sketch(value, 5).split()))
    return shape if len(shape) <= limit else shape[: limit - 1] + "\u2026"


def _walk(value: Any, path: str, depth: int) -> list[tuple[str, Any]]:
    """(path, value) of every value under ``value``, breadth first, lists through item 0."""
    found: list[tuple[str, Any]] = []
    level = [(path, value)]
    for _ in range(depth):
        below: list[tuple[str, Any]] = []
        for where, item in level:
            children: list[tuple[str, Any]] = []
            if isinstance(item, dict):
                children = [(_join(where, _key(k)), v) for k, v in item.items()]
            elif isinstance(item, list) and item:
                children = [(_join(where, "0"), item[0])]
            found.extend(children)
            below.extend(children)
        level = below
    return found


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _pick(item: dict[str, Any], names: tuple[str, ...], number: bool = False) -> str | None:
    for name in names:
        value = item.get(name)
        if (number and isinstance(value, int | float) and not isinstance(value, bool)) or (
            not number and isinstance(value, str)
        ):
            return name
    return None


def suggest_mapping(value: Any) -> list[str]:
    """``answer=PATH``, ``retrieved=PATH``, ``retrieved.text=FIELD``, ...: a mapping that
    would read ``value`` (a guess for the error message: the user checks it)."""
    if not isinstance(value, dict):
        return []
    everything = _walk(value, "", _SUGGEST_DEPTH)
    strings = [(p, v) for p, v in everything if isinstance(v, str) and ".0" not in f".{p}"]
    answer = next(
        (p for name in _ANSWER_KEYS for p, _ in strings if p.rsplit(".", 1)[-1] == name), None
    )
    if answer is None and strings:
        answer = max(strings, key=lambda pair: len(pair[1]))[0]
    suggested = [f"answer={answer}"] if answer else []
    lists = [
        (p, v)
        for p, v in everything
        if isinstance(v, list) and v and isinstance(v[0], dict) and ".0" not in f".{p}"
    ]
    if lists:
        path, items = lists[0]
        suggested.append(f"retrieved={path}")
        first = items[0]
        for field, names in (("text", _TEXT_KEYS), ("id", _ID_KEYS), ("doc_id", _DOC_KEYS)):
            found = _pick(first, names)
            if found is not None and found != field:
                suggested.append(f"retrieved.{field}={found}")
        score = _pick(first, _SCORE_KEYS, number=True)
        if score is not None and score != "score":
            suggested.append(f"retrieved.score={score}")
    return suggested

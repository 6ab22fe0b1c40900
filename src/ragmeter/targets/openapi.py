"""The request body a service declares in its OpenAPI schema (``GET /openapi.json``, which
FastAPI serves by default), so a service that reads ``query`` is asked right the first time.

Used only when the target has no request template: ragmeter's default body is ``{"question",
"top_k"}``. When the schema's JSON body for ``POST QUERY_PATH`` has no ``question`` property
but exactly one required string property (or, with none required, exactly one string
property), the question goes there; an integer property named like a result count (``top_k``,
``k``, ``similarity_top_k``, ``n_results``) gets ``top_k``. Anything else (no schema, another
shape, two candidate fields) keeps the default body: nothing is guessed.
"""

from __future__ import annotations

from typing import Any

COUNT_NAMES = ("top_k", "k", "similarity_top_k", "n_results", "limit")
MAX_REF_DEPTH = 8

__all__ = ["template_from_openapi"]


def _resolve(document: dict[str, Any], schema: Any) -> Any:
    """``schema`` with ``$ref``s to ``#/components/schemas/NAME`` followed."""
    for _ in range(MAX_REF_DEPTH):
        if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)):
            return schema
        node: Any = document
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node.get(part) if isinstance(node, dict) else None
        schema = node
    return None


def _body_schema(document: dict[str, Any], query_path: str) -> dict[str, Any] | None:
    paths = document.get("paths")
    operation = paths.get(query_path, {}).get("post") if isinstance(paths, dict) else None
    if not isinstance(operation, dict):
        return None
    body = _resolve(document, operation.get("requestBody"))
    content = body.get("content") if isinstance(body, dict) else None
    media = content.get("application/json") if isinstance(content, dict) else None
    schema = _resolve(document, media.get("schema") if isinstance(media, dict) else None)
    return schema if isinstance(schema, dict) else None


def _type(document: dict[str, Any], schema: Any) -> str | None:
    schema = _resolve(document, schema)
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind
    # Optional[str] in FastAPI: anyOf [{type: string}, {type: null}]
    kinds = {_type(document, s) for s in schema.get("anyOf", []) if isinstance(s, dict)}
    kinds.discard("null")
    return kinds.pop() if len(kinds) == 1 else None


def template_from_openapi(document: Any, query_path: str) -> dict[str, str] | None:
    """The request template the schema in ``document`` asks for, or None (the default body
    fits, or the schema does not say which field holds the question)."""
    if not isinstance(document, dict):
        return None
    schema = _body_schema(document, query_path)
    properties = schema.get("properties") if schema is not None else None
    if not isinstance(properties, dict) or not properties or "question" in properties:
        return None
    required = schema.get("required") if schema is not None else None
    names = [n for n in required if n in properties] if isinstance(required, list) else []
    strings = [n for n in (names or properties) if _type(document, properties[n]) == "string"]
    if len(strings) != 1 or any(
        n not in strings and _type(document, properties[n]) != "integer" for n in names
    ):
        return None  # two candidates, or a required field ragmeter cannot fill
    template = {strings[0]: "{question}"}
    for name in COUNT_NAMES:
        if name in properties and _type(document, properties[name]) == "integer":
            template[name] = "{top_k}"
            break
    if any(n not in template for n in names):
        return None
    return template

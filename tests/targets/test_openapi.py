"""The request body a service's OpenAPI schema asks for (``targets.openapi``): FastAPI-shaped
schemas written out by hand, a property test over any JSON, and a 127.0.0.1 service that reads
``query`` asked right on the first try through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from ragmeter.cli.main import main
from ragmeter.targets.openapi import template_from_openapi
from tests.targets.servers import Reply, Request, Server


def fastapi_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """What FastAPI serves for ``@app.post("/query") def query(body: Query)``."""
    return {
        "openapi": "3.1.0",
        "paths": {
            "/query": {
                "post": {
                    "requestBody": {
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Query"}}
                        },
                        "required": True,
                    }
                }
            }
        },
        "components": {
            "schemas": {"Query": {"type": "object", "properties": properties, "required": required}}
        },
    }


STRING = {"type": "string"}
INTEGER = {"type": "integer"}
OPTIONAL_STRING = {"anyOf": [{"type": "string"}, {"type": "null"}]}


def test_the_field_the_schema_asks_for() -> None:
    assert template_from_openapi(fastapi_schema({"query": STRING}, ["query"]), "/query") == {
        "query": "{question}"
    }
    with_k = fastapi_schema({"query": STRING, "similarity_top_k": INTEGER}, ["query"])
    assert template_from_openapi(with_k, "/query") == {
        "query": "{question}",
        "similarity_top_k": "{top_k}",
    }
    # nothing required: the one string property
    optional = fastapi_schema({"input": OPTIONAL_STRING, "k": INTEGER}, [])
    assert template_from_openapi(optional, "/query") == {"input": "{question}", "k": "{top_k}"}


def test_nothing_is_guessed() -> None:
    cases = [
        fastapi_schema({"question": STRING, "top_k": INTEGER}, ["question"]),  # default fits
        fastapi_schema({"query": STRING, "user": STRING}, ["query", "user"]),  # two strings
        fastapi_schema({"query": STRING, "user": STRING}, []),
        fastapi_schema({"messages": {"type": "array"}}, ["messages"]),  # a chat body
        fastapi_schema({"query": STRING, "filters": {"type": "object"}}, ["query", "filters"]),
        fastapi_schema({}, []),
    ]
    for document in cases:
        assert template_from_openapi(document, "/query") is None, document
    assert template_from_openapi(fastapi_schema({"query": STRING}, ["query"]), "/ask") is None
    assert template_from_openapi({"paths": {"/query": {"get": {}}}}, "/query") is None
    loop = {"paths": {"/query": {"post": {"requestBody": {"$ref": "#/a"}}}}, "a": {"$ref": "#/a"}}
    assert template_from_openapi(loop, "/query") is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)
names = st.sampled_from(["query", "question", "input", "top_k", "k", "$ref", "type", "anyOf"])


@given(
    st.dictionaries(names, json_values, max_size=4),
    st.lists(names, max_size=3),
    json_values,
)
def test_any_document_gives_none_or_one_question_field(
    properties: dict[str, Any], required: list[str], noise: Any
) -> None:
    for document in (fastapi_schema(properties, required), noise):
        template = template_from_openapi(document, "/query")
        if template is None:
            continue
        assert list(template.values()).count("{question}") == 1
        assert set(template.values()) <= {"{question}", "{top_k}"}
        assert "question" not in template and set(template) <= set(properties)


def test_a_service_that_reads_query_is_asked_right_the_first_time(tmp_path: Path) -> None:
    schema = fastapi_schema({"query": STRING, "top_k": INTEGER}, ["query"])

    def script(request: Request) -> Reply | None:
        if request.method == "GET" and request.path == "/openapi.json":
            return 200, {"Content-Type": "application/json"}, json.dumps(schema).encode()
        if request.method != "POST":
            return None
        body = json.loads(request.body)
        if "query" not in body:
            detail = {"detail": [{"type": "missing", "loc": ["body", "query"]}]}
            return 422, {"Content-Type": "application/json"}, json.dumps(detail).encode()
        return 200, {}, json.dumps({"answer": f"About: {body['query']}"}).encode()

    server = Server(script)
    try:
        result = CliRunner().invoke(
            main,
            ["eval", "--no-progress", "--target", server.url, "--metrics", "lexical",
             "--samples", "3", "--store", str(tmp_path / "r.db"),
             "--output-dir", str(tmp_path / "out")],
        )  # fmt: skip
    finally:
        server.stop()
    assert result.exit_code == 0, result.output
    posts = [json.loads(r.body) for r in server.posts()]
    assert len(posts) == 3 and all(set(body) == {"query", "top_k"} for body in posts)
    assert all(body["top_k"] == 5 for body in posts)
    said = (
        "requests as the service's /openapi.json asks: "
        """{"query": "{question}", "top_k": "{top_k}"}"""
    )
    assert said in " ".join(result.output.split())

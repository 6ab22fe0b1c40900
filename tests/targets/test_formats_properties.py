"""The response-format recogniser never crashes (targets/formats.py): arbitrary JSON, and the
framework replies of tests/targets/test_formats.py with any part replaced, are either read into a
Response or refused with the typed error that shows the reply's shape."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.models import Response
from ragmeter.targets.base import TargetError
from ragmeter.targets.formats import ReplyShapeError, build_response, recognise
from ragmeter.targets.shapes import to_plain
from tests.targets.test_formats import (
    FIXTURES,
    HAYSTACK_1,
    HAYSTACK_2,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
)

# -- the recogniser never crashes ---------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(
        st.sampled_from(
            [
                "answer", "response", "source_nodes", "node", "id_", "node_id", "text", "score",
                "metadata", "file_name", "context", "source_documents", "page_content", "result",
                "answers", "documents", "data", "replies", "content", "meta", "choices",
                "message", "annotations", "citations", "output", "object", "type",
                "retrieved_contexts", "retrieved_context_ids", "user_input", "actual_output",
                "retrieval_context", "retrieved", "usage", "lc", "kwargs", "init_parameters",
                "relationships", "1", "results", "search_results", "abstained", "x",
            ]
        ) | st.text(max_size=5),
        children,
        max_size=6,
    ),
    max_leaves=30,
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(body=json_values, response_format=st.sampled_from(["auto", "llamaindex", "langchain",
       "haystack", "openai", "ragas", "deepeval", "native"]))  # fmt: skip
def test_the_recogniser_maps_or_raises_the_typed_error_with_the_shape(
    body: Any, response_format: str
) -> None:
    try:
        response = build_response(body, response_format)
    except ReplyShapeError as exc:
        assert exc.error_type == "invalid_response" and exc.shape in exc.message
    except TargetError as exc:  # read, but a field does not fit the contract
        assert exc.error_type == "invalid_response" and "does not fit the contract" in exc.message
    else:
        assert isinstance(response, Response) and response.response_format is not None
        json.dumps(response.model_dump(mode="json"))


@settings(max_examples=200, deadline=None)
@given(body=json_values)
def test_recognise_and_to_plain_agree_on_plain_data(body: Any) -> None:
    assert to_plain(body) == body
    try:
        fields, name = recognise(body)
    except ReplyShapeError:
        return
    assert isinstance(fields, dict) and name


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replaced(value[path[0]], path[1:], new)
    return copy


SAMPLES = [
    *(v for k, v in FIXTURES.items() if not k.startswith("_")),
    HAYSTACK_1,
    HAYSTACK_2,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
]


ODD_VALUES = [5, -1, 2.5, "s", "", None, True, [], {}, [5], ["s"], {"x": 5}, [{"x": None}]]


def _read_or_typed_error(body: Any, response_format: str) -> None:
    try:
        response = build_response(body, response_format)
    except ReplyShapeError as exc:
        assert exc.shape in exc.message
    except TargetError as exc:
        assert exc.error_type == "invalid_response" and "does not fit the contract" in exc.message
    else:
        json.dumps(response.model_dump(mode="json"))


def test_framework_replies_with_any_one_part_replaced_map_or_raise_the_typed_error() -> None:
    """Every value of every sample reply, replaced by each odd value in turn (5,000 replies)."""
    for sample in SAMPLES:
        for path in _paths(sample):
            for value in ODD_VALUES:
                _read_or_typed_error(_replaced(sample, path, value), "auto")


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_framework_replies_with_parts_replaced_by_any_json(data: st.DataObject) -> None:
    body: Any = data.draw(st.sampled_from(SAMPLES))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(body)))
        body = _replaced(body, path, data.draw(json_values))
    fmt = data.draw(st.sampled_from(["auto", "llamaindex", "langchain", "haystack", "openai"]))
    _read_or_typed_error(body, fmt)

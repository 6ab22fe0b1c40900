"""Response formats: the reply shapes of the frameworks RAG engineers use, read as they are.

``native`` is ragmeter's own contract (``{"answer", "retrieved", "citations", ...}``). The
others are read into it without configuration:

- ``llamaindex``: ``Response`` / its JSON, ``{"response", "source_nodes": [...]}``, each node
  ``{"node": {"id_", "text", "metadata"}, "score"}`` or flat ``{"node_id", "text", "score",
  "metadata"}``; the document is ``metadata.file_name`` (else ``file_path``, ``source``, ...);
- ``langchain``: ``{"answer" | "result", "context" | "source_documents": [Document]}`` with
  ``page_content``, ``metadata`` (the document: ``metadata.source``) and ``id``, serialised
  (``{"lc": 1, "kwargs": {...}}``) or not; a LangServe ``{"output": {...}}`` too;
- ``haystack``: ``{"answers": [...], "documents": [...]}``, also per component
  (``{"answer_builder": {"answers": ...}, "retriever": {"documents": ...}}``), 1.x and 2.x;
- ``openai``: a chat completion (``choices[0].message.content`` with ``annotations``, a
  ``citations`` list, Azure's ``message.context.citations``) or a Responses API reply;
- ``ragas``: ``{"response", "retrieved_contexts", "retrieved_context_ids"}`` (or ``answer`` /
  ``contexts``); ``deepeval``: ``{"actual_output", "retrieval_context"}``.

``auto`` (the default) takes the first format that fits, native first when the reply has
ragmeter's own fields. When nothing fits, :class:`ReplyShapeError` shows the reply's shape and
a ``--response-map`` that would read it.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ragmeter.models import Response
from ragmeter.redaction import redact_text
from ragmeter.targets.base import TargetError
from ragmeter.targets.readers import AUTO_ORDER, READERS
from ragmeter.targets.shapes import describe_shape, suggest_mapping
from ragmeter.text import replace_lone_surrogates

FORMATS = ("native", "llamaindex", "langchain", "haystack", "openai", "ragas", "deepeval")
RESPONSE_FORMATS = ("auto", *FORMATS)
MAPPED = "mapping"  # the format recorded for a reply read through response_mapping
_NATIVE_ONLY = ("retrieved", "retrieved_chunks", "citations", "references")


class ReplyShapeError(TargetError):
    """A reply no response format reads (``invalid_response``); ``shape`` is its keys and
    value types, ``suggested`` a mapping that would read it."""

    def __init__(self, message: str, shape: str, suggested: list[str]) -> None:
        super().__init__("invalid_response", message)
        self.shape = shape
        self.suggested = suggested


def _unwrap(body: Any) -> Any:
    """A LangServe ``/invoke`` reply (``{"output": {...}, "metadata": {...}}``) as its output."""
    if (
        isinstance(body, dict)
        and isinstance(body.get("output"), dict)
        and set(body) <= {"output", "metadata", "callback_events"}
    ):
        return body["output"]
    return body


def recognise(
    body: Any, response_format: str = "auto", what: str = "the reply"
) -> tuple[dict[str, Any], str]:
    """(the reply's fields in ragmeter's contract, the name of the format that read it).

    Raises :class:`ReplyShapeError` when ``response_format`` (or, for ``auto``, every format)
    does not fit ``body``."""
    if isinstance(body, str):  # a bare answer text
        return {"answer": body}, "native"
    inner = _unwrap(body)
    if isinstance(inner, dict):
        if response_format == "auto":
            order: tuple[str, ...] = AUTO_ORDER
            if any(key in inner for key in _NATIVE_ONLY) and "answer" in inner:
                order = ("native",)
        else:
            order = (response_format,)
        for name in order:
            matches, read = READERS[name]
            if matches(inner):
                return read(inner), name
    raise shape_error(body, response_format, what)


def shape_error(body: Any, response_format: str, what: str = "the reply") -> ReplyShapeError:
    shape = describe_shape(body)
    suggested = suggest_mapping(_unwrap(body))
    fits = (
        f"fits none of the response formats ({', '.join(FORMATS)})"
        if response_format == "auto"
        else f"is not in the {response_format} format"
    )
    flags = " ".join(f"--response-map {pair}" for pair in suggested) or "--response-map answer=PATH"
    return ReplyShapeError(
        redact_text(
            f"{what} {fits}; its shape: {shape}; read it with a mapping, e.g. {flags} "
            "(response_mapping in a config file), or pass --response-format NAME"
        ),
        shape,
        suggested,
    )


def build_response(
    body: Any,
    response_format: str = "auto",
    mapping: dict[str, str] | None = None,
    what: str = "the reply",
) -> Response:
    """The Response a (plain, JSON-like) reply ``body`` stands for, read by ``mapping`` when
    one is given, else by ``response_format``; ``response.response_format`` names what read
    it. Raises TargetError (``invalid_response``) and nothing else."""
    from ragmeter.targets.http import apply_mapping
    from ragmeter.targets.python import describe_validation_error

    if mapping:
        name = MAPPED
        fields: Any = apply_mapping(body, mapping)
    else:
        fields, name = recognise(body, response_format, what)
    try:
        response = Response.from_target(fields)
    except ValidationError as exc:
        if name == "native" and any(e["type"] == "missing_answer" for e in exc.errors()):
            raise shape_error(body, response_format, what) from exc
        raise TargetError(
            "invalid_response",
            f"{what} does not fit the contract"
            + (f" (read as {name})" if name != "native" else "")
            + f": {describe_validation_error(exc)}",
        ) from exc
    except (TypeError, ValueError) as exc:  # a reply pydantic cannot even look at
        raise shape_error(body, response_format, what) from exc
    response.raw = replace_lone_surrogates(body)[0]  # its repairs are counted in the fields'
    response.response_format = name
    return response


def check_format(name: str) -> str:
    """``name`` if it is a response format, else a ValueError that lists them."""
    if name not in RESPONSE_FORMATS:
        raise ValueError(
            f"unknown response format {name!r}; use one of {', '.join(RESPONSE_FORMATS)}"
        )
    return name

"""The readers of the response formats (``targets/formats.py``): for each framework, whether a
plain reply is in its shape and the reply's fields in ragmeter's response contract. Only
``dict``/``list``/``str``/number values are looked at (``targets/shapes.py`` made them plain).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_DOC_KEYS = (
    "doc_id",
    "document_id",
    "file_name",
    "filename",
    "source",
    "file_path",
    "url",
    "path",
)


def _text(value: Any) -> str | None:
    """The text of an answer-like value: a string, a message ``{"content": ...}``, a list of
    content parts, a Haystack ``GeneratedAnswer`` (``data``) or 1.x answer."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [_text(item) for item in value]
        texts = [part for part in parts if part]
        return "".join(texts) if texts else None
    if isinstance(value, dict):
        if isinstance(value.get("kwargs"), dict):  # LangChain's serialised form
            return _text(value["kwargs"])
        for key in ("content", "text", "data", "answer", "value"):
            if key in value:
                found = _text(value[key])
                if found is not None:
                    return found
    return None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str | int | float):
        return str(value) or None
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _doc_id(metadata: dict[str, Any]) -> str | None:
    return next((_str(metadata[k]) for k in _DOC_KEYS if _str(metadata.get(k))), None)


def _chunk(
    chunk_id: Any, text: Any, metadata: Any, score: Any = None, doc_id: Any = None
) -> dict[str, Any]:
    meta = metadata if isinstance(metadata, dict) else {}
    found: dict[str, Any] = {"id": _str(chunk_id), "text": text if isinstance(text, str) else ""}
    found["doc_id"] = _str(doc_id) or _doc_id(meta)
    if _number(score) is not None:
        found["score"] = _number(score)
    if meta:
        found["metadata"] = meta
    return found


def _answer_fields(answer: Any) -> dict[str, Any]:
    text = _text(answer)
    return {"answer": text if text is not None else ""}


# -- llamaindex ----------------------------------------------------------------------------


def _is_llamaindex(body: dict[str, Any]) -> bool:
    if isinstance(body.get("source_nodes"), list):
        return "response" in body or set(body) <= {"source_nodes", "metadata"}
    return "response" in body and set(body) <= {"response", "metadata"}


def _llamaindex_node(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        return None
    inner = item.get("node")
    node: dict[str, Any] = inner if isinstance(inner, dict) else item
    metadata = node.get("metadata") or node.get("extra_info")
    text = node.get("text")
    if not isinstance(text, str) and isinstance(node.get("text_resource"), dict):
        text = node["text_resource"].get("text")  # llama-index-core 0.12's Node
    relationships = node.get("relationships")
    source = relationships.get("1") if isinstance(relationships, dict) else None  # SOURCE
    ref_doc = source.get("node_id") if isinstance(source, dict) else node.get("ref_doc_id")
    chunk = _chunk(
        node.get("id_") or node.get("node_id") or node.get("id"),
        text,
        metadata,
        item.get("score"),
    )
    if chunk["doc_id"] is None:
        chunk["doc_id"] = _str(ref_doc)
    return chunk


def _read_llamaindex(body: dict[str, Any]) -> dict[str, Any]:
    fields = _answer_fields(body.get("response"))
    nodes = body.get("source_nodes")
    if isinstance(nodes, list):
        fields["retrieved"] = [c for c in map(_llamaindex_node, nodes) if c is not None]
    return fields


# -- langchain -----------------------------------------------------------------------------

_LC_ANSWERS = ("answer", "result", "output_text", "output")
_LC_DOCS = ("context", "source_documents", "documents", "docs")


def _lc_unwrap(item: Any) -> Any:
    """A LangChain object from ``dumpd`` (``{"lc": 1, "type": "constructor", "kwargs"}``) as its
    fields; anything else as it is."""
    if isinstance(item, dict) and item.get("lc") == 1 and isinstance(item.get("kwargs"), dict):
        return item["kwargs"]
    return item


def _is_document(item: Any) -> bool:
    item = _lc_unwrap(item)
    if isinstance(item, list) and len(item) == 2:  # (Document, score) pairs
        item = _lc_unwrap(item[0])
    return isinstance(item, dict) and isinstance(item.get("page_content"), str)


def _lc_docs(body: dict[str, Any]) -> tuple[str, list[Any]] | None:
    for key in _LC_DOCS:
        docs = body.get(key)
        if isinstance(docs, list) and (
            (docs and all(_is_document(d) for d in docs))
            or (not docs and (key == "source_documents" or "input" in body))
        ):
            return key, docs
    return None


def _is_langchain(body: dict[str, Any]) -> bool:
    has_answer = any(_text(body.get(k)) is not None for k in _LC_ANSWERS if k in body)
    return has_answer and _lc_docs(body) is not None


def _lc_document(item: Any) -> dict[str, Any]:
    score = None
    item = _lc_unwrap(item)
    if isinstance(item, list):
        item, score = _lc_unwrap(item[0]), item[1]
    metadata = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
    chunk_id = item.get("id") or metadata.get("chunk_id") or metadata.get("id")
    if score is None:
        score = metadata.get("score", metadata.get("relevance_score"))
    return _chunk(chunk_id, item.get("page_content"), metadata, score)


def _read_langchain(body: dict[str, Any]) -> dict[str, Any]:
    answer = next(_text(body[k]) for k in _LC_ANSWERS if k in body and _text(body[k]) is not None)
    found = _lc_docs(body)
    fields: dict[str, Any] = {"answer": answer}
    fields["retrieved"] = [_lc_document(d) for d in found[1]] if found else []
    return fields


# -- haystack ------------------------------------------------------------------------------

_HS_DOC_FIELDS = ("id", "content", "meta", "score", "embedding", "sparse_embedding", "blob")


def _hs_unwrap(item: Any) -> Any:
    """A Haystack ``to_dict()`` (``{"type": "haystack...", "init_parameters": {...}}``) as its
    fields; anything else as it is."""
    if isinstance(item, dict) and isinstance(item.get("init_parameters"), dict):
        return item["init_parameters"]
    return item


def _haystack_parts(body: dict[str, Any]) -> dict[str, list[Any]]:
    """``answers``, ``documents`` and ``replies`` of a Haystack result, at the top level or in
    a component's output (the first found of each)."""
    parts: dict[str, list[Any]] = {}
    for holder in [body, *(v for v in body.values() if isinstance(v, dict))]:
        for key in ("answers", "documents", "replies"):
            if key not in parts and isinstance(holder.get(key), list):
                parts[key] = [_hs_unwrap(item) for item in holder[key]]
    return parts


def _is_haystack(body: dict[str, Any]) -> bool:
    parts = _haystack_parts(body)
    answers = parts.get("answers")
    first = answers[0] if answers else None
    if isinstance(first, dict) and ("data" in first or "answer" in first):
        return True
    return "documents" in parts and bool(parts.get("replies"))


def _hs_document(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        return None
    meta = item.get("meta")
    if not isinstance(meta, dict):  # Document.to_dict() puts meta at the top level
        meta = {k: v for k, v in item.items() if k not in _HS_DOC_FIELDS}
    return _chunk(item.get("id"), item.get("content"), meta, item.get("score"))


def _read_haystack(body: dict[str, Any]) -> dict[str, Any]:
    parts = _haystack_parts(body)
    answers = parts.get("answers") or []
    first = answers[0] if answers and isinstance(answers[0], dict) else {}
    text = _text(first.get("data", first.get("answer"))) if first else None
    if text is None and parts.get("replies"):
        text = _text(parts["replies"][0])
    fields: dict[str, Any] = {"answer": text or ""}
    documents = parts.get("documents")
    if documents is None and isinstance(first.get("documents"), list):
        documents = [_hs_unwrap(d) for d in first["documents"]]  # a GeneratedAnswer's own
    if documents is not None:
        fields["retrieved"] = [c for c in map(_hs_document, documents) if c is not None]
    meta = first.get("meta")
    cited = first.get("document_ids") or (
        meta.get("document_ids") if isinstance(meta, dict) else None
    )
    if isinstance(cited, list):  # Haystack 1.x: the documents an answer was read from
        fields["citations"] = [{"chunk_id": i} for i in map(_str, cited) if i]
    return fields


# -- openai --------------------------------------------------------------------------------


def _is_openai(body: dict[str, Any]) -> bool:
    choices = body.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return isinstance(choices[0].get("message"), dict) or "text" in choices[0]
    return body.get("object") == "response" and isinstance(body.get("output"), list)


def _annotation(note: Any) -> dict[str, Any] | None:
    if not isinstance(note, dict):
        return None
    inner = note.get(str(note.get("type")))  # {"type": "url_citation", "url_citation": {...}}
    data = {**note, **inner} if isinstance(inner, dict) else note
    where = _str(data.get("url")) or _str(data.get("filename")) or _str(data.get("file_id"))
    if where is None:
        return None
    quote = data.get("quote") if isinstance(data.get("quote"), str) else None
    return {"doc_id": where, "quote": quote}


def _usage(body: dict[str, Any]) -> dict[str, Any] | None:
    usage = body.get("usage")
    if not isinstance(usage, dict):
        return None
    found = {
        "prompt_tokens": usage.get("prompt_tokens", usage.get("input_tokens")),
        "completion_tokens": usage.get("completion_tokens", usage.get("output_tokens")),
        "total_tokens": usage.get("total_tokens"),
        "model": _str(body.get("model")),
    }
    return {k: v for k, v in found.items() if isinstance(v, int | str) and not isinstance(v, bool)}


def _read_openai(body: dict[str, Any]) -> dict[str, Any]:
    notes: list[Any] = []
    retrieved: list[dict[str, Any]] | None = None
    if isinstance(body.get("choices"), list):
        choice = body["choices"][0]
        message = choice.get("message") if isinstance(choice.get("message"), dict) else choice
        text = _text(message.get("content", message.get("text")))
        notes = _list(message.get("annotations"))
        context = message.get("context")  # Azure OpenAI "on your data"
        if isinstance(context, dict) and isinstance(context.get("citations"), list):
            retrieved = [
                _chunk(c.get("chunk_id"), c.get("content"), c, doc_id=_doc_of(c))
                for c in context["citations"]
                if isinstance(c, dict)
            ]
    else:
        texts: list[str] = []
        for item in body["output"]:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "message":
                for part in _list(item.get("content")):
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        texts.append(part["text"])
                        notes.extend(_list(part.get("annotations")))
            elif item.get("type") == "file_search_call" and isinstance(item.get("results"), list):
                retrieved = (retrieved or []) + [
                    _chunk(r.get("file_id"), r.get("text"), r.get("attributes"), r.get("score"),
                           doc_id=r.get("filename") or r.get("file_id"))
                    for r in item["results"]
                    if isinstance(r, dict)
                ]  # fmt: skip
        text = "".join(texts) if texts else None
    fields: dict[str, Any] = {"answer": text or ""}
    citations = [c for c in map(_annotation, notes) if c is not None]
    for url in _list(body.get("citations")):  # Perplexity: a list of URLs
        if isinstance(url, str):
            citations.append({"doc_id": url})
    if citations:
        fields["citations"] = citations
    results = body.get("search_results")
    if retrieved is None and isinstance(results, list):
        retrieved = [
            _chunk(None, r.get("snippet"), r, doc_id=r.get("url"))
            for r in results
            if isinstance(r, dict)
        ]
    if retrieved is not None:
        fields["retrieved"] = retrieved
    usage = _usage(body)
    if usage:
        fields["usage"] = usage
    return fields


def _doc_of(citation: dict[str, Any]) -> str | None:
    return _str(citation.get("filepath")) or _str(citation.get("url")) or _doc_id(citation)


# -- ragas, deepeval -----------------------------------------------------------------------


def _is_ragas(body: dict[str, Any]) -> bool:
    return ("response" in body and ("retrieved_contexts" in body or "user_input" in body)) or (
        "answer" in body and isinstance(body.get("contexts"), list)
    )


def _contexts(texts: Any, ids: Any) -> list[dict[str, Any]]:
    if not isinstance(texts, list):
        texts = []
    id_list = ids if isinstance(ids, list) else []
    if not texts and id_list:  # ids alone (ragas' ID-based context precision)
        return [_chunk(i, "", None) for i in id_list]
    return [
        _chunk(id_list[n] if n < len(id_list) else None, t if isinstance(t, str) else "", None)
        for n, t in enumerate(texts)
    ]


def _read_ragas(body: dict[str, Any]) -> dict[str, Any]:
    fields = _answer_fields(body.get("response", body.get("answer")))
    texts = body.get("retrieved_contexts", body.get("contexts"))
    ids = body.get("retrieved_context_ids")
    if texts is not None or ids is not None:
        fields["retrieved"] = _contexts(texts, ids)
    return fields


def _is_deepeval(body: dict[str, Any]) -> bool:
    return "actual_output" in body


def _read_deepeval(body: dict[str, Any]) -> dict[str, Any]:
    fields = _answer_fields(body.get("actual_output"))
    if body.get("retrieval_context") is not None:
        fields["retrieved"] = _contexts(body["retrieval_context"], None)
    cost = _number(body.get("token_cost"))
    if cost is not None and cost >= 0:
        fields["usage"] = {"cost_usd": cost}
    return fields


# -- native --------------------------------------------------------------------------------


def _is_native(body: dict[str, Any]) -> bool:
    flags = body.get("policy_flags")
    return (
        "answer" in body
        or body.get("abstained") is True
        or bool(body.get("guardrail_scores"))
        or (isinstance(flags, list) and "guardrail_blocked" in flags)
    )


def _read_native(body: dict[str, Any]) -> dict[str, Any]:
    return body


Reader = tuple[Callable[[dict[str, Any]], bool], Callable[[dict[str, Any]], dict[str, Any]]]
READERS: dict[str, Reader] = {
    "native": (_is_native, _read_native),
    "llamaindex": (_is_llamaindex, _read_llamaindex),
    "langchain": (_is_langchain, _read_langchain),
    "haystack": (_is_haystack, _read_haystack),
    "openai": (_is_openai, _read_openai),
    "ragas": (_is_ragas, _read_ragas),
    "deepeval": (_is_deepeval, _read_deepeval),
}
# auto: native first when the reply holds native-only fields, else the frameworks, native last
AUTO_ORDER = ("llamaindex", "langchain", "haystack", "openai", "ragas", "deepeval", "native")

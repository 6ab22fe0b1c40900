"""What an unknown field of a case probably is: the column names of other tools.

A name with one meaning everywhere is an alias of its case field (``models.Case``:
``gold_answer``, ``qid``, ``user_input``, ...) and is read silently. A name that means
different things in different tools is never guessed: it is an unknown field whose message
says what it may be and how to map it (``answer`` is the expected answer in a hand-written
file, but the system's own answer in a RAGAS 0.1 file; ``contexts`` are what a system
retrieved, not gold evidence).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable

from pydantic import BaseModel

from ragmeter.datasets.fieldmap import field_names

UNKNOWN = "unknown field"
_FREE = "not part of the case schema; put free data under 'metadata'"
_RECORDED = (
    "an answer your system gave is not a label: to score recorded answers, import the file "
    "(ragmeter datasets import ragas|deepeval FILE OUT/) and replay OUT/responses.jsonl"
)
_RETRIEVED = (
    "what a system retrieved is not a label: to score recorded contexts, import the file "
    "(ragmeter datasets import ragas|deepeval FILE OUT/); gold evidence goes in 'gold_passages'"
)


def _reference(name: str) -> str:
    return (
        f"if it holds the expected answer, name it 'reference_answer' or map it "
        f"(--field-map reference_answer={name}); {_RECORDED}"
    )


def _gold_document(name: str) -> str:
    return (
        f"if it names the document holding the answer, map it to a gold passage: --field-map "
        f"gold_passages.0.doc_id={name} (gold_passages.0.rel_path={name} when it is a file path "
        "under the corpus)"
    )


def _gold_chunk(name: str) -> str:
    return (
        f"if it names the chunk holding the answer, map it to a gold passage: --field-map "
        f"gold_passages.0.chunk_id={name} (with gold_passages.0.doc_id=... for its document)"
    )


def _gold_list(kind: str) -> Callable[[str], str]:
    def hint(name: str) -> str:
        return (
            f"if it lists the relevant {kind}s' ids, map it: --field-map "
            f"'gold_passages.*.{kind}_id={name}' (one gold passage per id; or put it in "
            "retrieval_labels.jsonl beside cases.jsonl)"
        )

    return hint


# an unknown top-level name (lower case) -> what it may be
_HINTS: dict[str, Callable[[str], str]] = {
    "answer": _reference,
    "output": _reference,
    "reference": lambda n: (
        f"RAGAS calls the expected answer 'reference': name it 'reference_answer', map it "
        f"(--field-map reference_answer={n}), or read the file with --dataset ragas:FILE"
    ),
    "answers": lambda n: (
        f"map one of them as the expected answer: --field-map reference_answer={n}.0 "
        f"(SQuAD-style {{'text': [...]}}: reference_answer={n}.text.0)"
    ),
    "ground_truths": lambda n: (
        f"map one of them as the expected answer: --field-map reference_answer={n}.0"
    ),
    "response": lambda n: _RECORDED,
    "actual_output": lambda n: _RECORDED,
    "generated_answer": lambda n: _RECORDED,
    "prediction": lambda n: _RECORDED,
    "contexts": lambda n: _RETRIEVED,
    "retrieved_contexts": lambda n: _RETRIEVED,
    "retrieval_context": lambda n: _RETRIEVED,
    "context": lambda n: (
        "ideal context texts: a gold passage needs an id, so give gold_passages "
        "[{doc_id, snippets: [TEXT]}], or read the file with --dataset deepeval:FILE (contexts "
        "named by their text's hash)"
    ),
    "reference_contexts": lambda n: (
        "gold context texts: read the file with --dataset ragas:FILE (contexts named by their "
        "text's hash), or give gold_passages [{doc_id, snippets: [TEXT]}]"
    ),
    "relevant_docs": _gold_list("doc"),
    "relevant_doc_ids": _gold_list("doc"),
    "relevant_documents": _gold_list("doc"),
    "gold_docs": _gold_list("doc"),
    "gold_doc_ids": _gold_list("doc"),
    "doc_ids": _gold_list("doc"),
    "document_ids": _gold_list("doc"),
    "relevant_chunks": _gold_list("chunk"),
    "relevant_chunk_ids": _gold_list("chunk"),
    "chunk_ids": _gold_list("chunk"),
    "source": _gold_document,
    "sources": _gold_list("doc"),
    "source_file": _gold_document,
    "source_doc": _gold_document,
    "source_document": _gold_document,
    "doc_id": _gold_document,
    "document_id": _gold_document,
    "document": _gold_document,
    "doc": _gold_document,
    "file": _gold_document,
    "file_name": _gold_document,
    "filename": _gold_document,
    "file_path": _gold_document,
    "path": _gold_document,
    "rel_path": _gold_document,
    "source_node": _gold_chunk,
    "source_chunk": _gold_chunk,
    "node_id": _gold_chunk,
    "chunk_id": _gold_chunk,
    "passage_id": _gold_chunk,
    "input": lambda n: (
        f"if it is the question, name it 'question' or map it (--field-map question={n}); in "
        "instruction data 'input' is the text the instruction works on, so it is not read as "
        "the question without a word"
    ),
    "prompt": lambda n: (
        f"if it is the question, name it 'question' or map it (--field-map question={n})"
    ),
    "instruction": lambda n: (
        f"if it is the question, name it 'question' or map it (--field-map question={n})"
    ),
    "unanswerable": lambda n: (
        "the case field is 'answerable' (the opposite: \"answerable\": false for a question the "
        "corpus cannot answer)"
    ),
    "is_impossible": lambda n: (
        "the case field is 'answerable' (the opposite: \"answerable\": false for a question the "
        "corpus cannot answer); --dataset squad_v2:FILE reads SQuAD files as they are"
    ),
    "is_answerable": lambda n: f"the case field is 'answerable' (--field-map answerable={n})",
    "type": lambda n: (
        f"for breakdowns, name it 'category' or 'query_type' (--field-map category={n})"
    ),
    "question_type": lambda n: f"for breakdowns: --field-map query_type={n} (or category={n})",
    "level": lambda n: f"for breakdowns: --field-map difficulty={n}",
}


def unknown_field_message(name: str, model: type[BaseModel] | None = None) -> str:
    """The message of an unknown field ``name`` of ``model``: for a case, what it may be (the
    names of other tools); else the closest field name; else where free data goes."""
    from ragmeter.models import Case

    if model is None:
        return f"{UNKNOWN} ({_FREE})"
    hint = _HINTS.get(name.lower()) if model is Case else None
    if hint is not None:
        return f"{UNKNOWN}: {hint(name)}"
    names = field_names(model)
    close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.75)
    if close:
        return f"{UNKNOWN}; did you mean '{close[0]}'?"
    if model is Case:
        return f"{UNKNOWN} ({_FREE})"
    return f"{UNKNOWN} (its fields: {', '.join(model.model_fields)})"

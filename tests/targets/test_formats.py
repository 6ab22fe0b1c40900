"""Response formats: the replies of LlamaIndex, LangChain, Haystack, OpenAI, ragas and deepeval
read into ragmeter's Response without configuration (targets/formats.py), duck-typed objects
made plain (targets/shapes.py), and a reply nothing reads named by its shape.

The LlamaIndex and LangChain replies in tests/fixtures/framework_replies.json were serialised
from real objects (llama-index-core 0.14.25, langchain-core 1.8.3: ``model_dump``, ``to_dict``,
``dumpd``); the Haystack, OpenAI, ragas and deepeval ones are copied from their documented
shapes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from ragmeter.config import ConfigError, TargetConfig, load_config
from ragmeter.models import Response
from ragmeter.targets import build_target
from ragmeter.targets.base import TargetError
from ragmeter.targets.formats import ReplyShapeError, build_response
from ragmeter.targets.python import to_response
from ragmeter.targets.shapes import describe_shape

FIXTURES = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "framework_replies.json").read_text(encoding="utf-8")
)
ANSWER = "You get 25 days of paid leave."


def ids(response: Response) -> list[tuple[str | None, str | None]]:
    return [(chunk.id, chunk.doc_id) for chunk in response.retrieved]


@pytest.mark.parametrize(
    "name",
    ["llamaindex_response_model_dump", "llamaindex_response_to_dict", "llamaindex_fastapi_natural"],
)
def test_llamaindex_replies_from_real_serialisations(name: str) -> None:
    body = FIXTURES[name]
    response = build_response(body)
    assert response.response_format == "llamaindex"
    assert response.answer == ANSWER
    node_ids = [n.get("node_id") or n["node"]["id_"] for n in body["source_nodes"]]
    assert ids(response) == list(zip(node_ids, ["leave-policy.md", "expenses.md"], strict=True))
    assert [c.score for c in response.retrieved] == [3.1, 1.2]
    assert response.retrieved[0].text.startswith("Employees get 25 days")
    assert response.has("retrieved") and response.raw == body
    assert build_response(body, "llamaindex").retrieved == response.retrieved


@pytest.mark.parametrize(
    "name",
    ["langchain_retrieval_chain_model_dump", "langchain_retrievalqa_dumpd", "langserve_invoke"],
)
def test_langchain_replies_from_real_serialisations(name: str) -> None:
    response = build_response(FIXTURES[name])
    assert response.response_format == "langchain"
    assert response.answer == ANSWER
    assert ids(response) == [
        ("chunk-0", "docs/leave-policy.md"),
        ("chunk-1", "docs/expenses.md"),
    ]


def test_langchain_document_score_pairs_and_message_answers() -> None:
    doc = {"page_content": "text", "metadata": {"source": "a.md"}, "type": "Document"}
    body = {"answer": {"content": "from a message", "type": "ai"}, "context": [[doc, 0.7]]}
    response = build_response(body)
    assert response.answer == "from a message"
    assert response.retrieved[0].score == 0.7 and response.retrieved[0].doc_id == "a.md"


HAYSTACK_2 = {
    "retriever": {
        "documents": [
            {
                "id": "h1",
                "content": "Leave: 25 days.",
                "meta": {"file_path": "leave.md"},
                "score": 0.9,
            },
            {"id": "h2", "content": "Expenses.", "meta": {"file_path": "exp.md"}, "score": 0.4},
        ]
    },
    "answer_builder": {
        "answers": [
            {
                "type": "haystack.dataclasses.answer.GeneratedAnswer",
                "init_parameters": {"data": ANSWER, "query": "q", "documents": [], "meta": {}},
            }
        ]
    },
}
HAYSTACK_1 = {
    "query": "How much leave?",
    "answers": [
        {
            "answer": "25 days",
            "type": "extractive",
            "score": 0.93,
            "context": "Employees get 25 days",
            "document_ids": ["d-17"],
            "meta": {},
        }
    ],
    "documents": [
        {
            "content": "Employees get 25 days",
            "id": "d-17",
            "score": 0.8,
            "meta": {"name": "leave.md"},
        }
    ],
}


def test_haystack_pipeline_results() -> None:
    two = build_response(HAYSTACK_2)
    assert two.response_format == "haystack" and two.answer == ANSWER
    assert ids(two) == [("h1", "leave.md"), ("h2", "exp.md")]
    one = build_response(HAYSTACK_1)
    assert one.answer == "25 days" and ids(one) == [("d-17", None)]
    assert [c.chunk_id for c in one.citations] == ["d-17"]
    replies = {"llm": {"replies": [{"role": "assistant", "content": [{"text": "hi"}]}]},
               "retriever": {"documents": []}}  # fmt: skip
    assert build_response(replies).answer == "hi"


OPENAI_CHAT = {
    "id": "chatcmpl-123",
    "object": "chat.completion",
    "model": "gpt-4o-search-preview",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": ANSWER,
                "annotations": [
                    {
                        "type": "url_citation",
                        "url_citation": {
                            "end_index": 30,
                            "start_index": 0,
                            "title": "Leave policy",
                            "url": "https://hr.example.com/leave",
                        },
                    }
                ],
            },
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129},
}
OPENAI_RESPONSES = {
    "id": "resp_1",
    "object": "response",
    "output": [
        {
            "type": "file_search_call",
            "results": [
                {"file_id": "file-1", "filename": "leave.md", "score": 0.8, "text": "25 days"}
            ],
        },
        {
            "type": "message",
            "content": [
                {
                    "type": "output_text",
                    "text": ANSWER,
                    "annotations": [
                        {
                            "type": "file_citation",
                            "file_id": "file-1",
                            "filename": "leave.md",
                            "index": 10,
                        }
                    ],
                }
            ],
        },
    ],
    "usage": {"input_tokens": 50, "output_tokens": 9, "total_tokens": 59},
}


def test_openai_chat_completion_and_responses_api() -> None:
    chat = build_response(OPENAI_CHAT)
    assert chat.response_format == "openai" and chat.answer == ANSWER
    assert [c.doc_id for c in chat.citations] == ["https://hr.example.com/leave"]
    assert chat.usage is not None and chat.usage.total_tokens == 129
    assert chat.usage.model == "gpt-4o-search-preview" and not chat.has("retrieved")
    responses = build_response(OPENAI_RESPONSES)
    assert responses.answer == ANSWER and ids(responses) == [("file-1", "leave.md")]
    assert [c.doc_id for c in responses.citations] == ["leave.md"]
    perplexity = {"choices": [{"message": {"content": "x"}}], "citations": ["https://a.example"]}
    assert [c.doc_id for c in build_response(perplexity).citations] == ["https://a.example"]
    azure = {
        "choices": [
            {
                "message": {
                    "content": "x [doc1]",
                    "context": {
                        "citations": [{"content": "c", "filepath": "leave.md", "chunk_id": "0"}]
                    },
                }
            }
        ]
    }  # fmt: skip
    assert ids(build_response(azure)) == [("0", "leave.md")]


def test_ragas_and_deepeval_test_case_fields() -> None:
    ragas = build_response(
        {
            "user_input": "q",
            "response": ANSWER,
            "retrieved_contexts": ["Employees get 25 days", "Expenses"],
            "retrieved_context_ids": ["leave#1", "exp#1"],
        }
    )
    assert ragas.response_format == "ragas" and ids(ragas) == [("leave#1", None), ("exp#1", None)]
    assert ragas.retrieved[1].text == "Expenses"
    old = build_response({"question": "q", "answer": "a", "contexts": ["c"]})
    assert old.response_format == "ragas" and [c.text for c in old.retrieved] == ["c"]
    deepeval = build_response(
        {"input": "q", "actual_output": ANSWER, "retrieval_context": ["c1"], "token_cost": 0.002}
    )
    assert deepeval.response_format == "deepeval" and deepeval.retrieved[0].text == "c1"
    assert deepeval.usage is not None and deepeval.usage.cost_usd == 0.002


def test_the_native_contract_is_read_unchanged() -> None:
    body = {"answer": "a", "retrieved": [{"id": "c1", "doc_id": "d"}], "citations": ["c1"]}
    response = build_response(body)
    assert response.response_format == "native"
    assert response.model_dump(exclude={"response_format", "raw"}) == Response.from_target(
        body
    ).model_dump(exclude={"response_format", "raw"})
    # native-only fields win over a framework's: a native reply with an extra context list
    mixed = {"answer": "a", "retrieved": [{"id": "c1"}], "context": [{"page_content": "x"}]}
    assert build_response(mixed).response_format == "native"
    assert build_response({"abstained": True}).response_format == "native"
    assert build_response("just text").answer == "just text"
    # a reply cannot set how it was read
    assert build_response({"answer": "a", "response_format": "evil"}).response_format == "native"


def test_a_named_format_that_does_not_fit_shows_the_shape() -> None:
    with pytest.raises(ReplyShapeError) as caught:
        build_response({"answer": "a", "retrieved": []}, "llamaindex")
    assert "is not in the llamaindex format" in caught.value.message
    assert '{"answer": string, "retrieved": []}' in caught.value.message


def test_an_unknown_shape_names_its_keys_types_and_a_mapping_secrets_masked() -> None:
    body = {
        "data": {"text": "the answer", "hits": [{"body": "chunk", "uuid": "u1", "file": "a"}]},
        "api_key": "sk-live-0123456789abcdefghij",
        "note": "Bearer sk-live-0123456789abcdefghij",
    }
    with pytest.raises(ReplyShapeError) as caught:
        build_response(body)
    error = caught.value
    assert error.error_type == "invalid_response"
    assert "fits none of the response formats" in error.message
    assert '"hits": [{"body": string, "uuid": string, "file": string}]' in error.message
    assert "sk-live" not in error.message and "the answer" not in error.message
    assert error.suggested == [
        "answer=data.text",
        "retrieved=data.hits",
        "retrieved.text=body",
        "retrieved.id=uuid",
    ]
    # the mapping it suggests reads the reply
    mapping = dict(pair.split("=", 1) for pair in error.suggested)
    mapped = build_response(body, mapping=mapping)
    assert mapped.response_format == "mapping" and ids(mapped) == [("u1", None)]


def test_describe_shape_is_cut_and_never_shows_values() -> None:
    deep: Any = "secret-value"
    for _ in range(40):
        deep = {"k": [deep]}
    shape = describe_shape(deep)
    assert "secret-value" not in shape and len(shape) <= 600
    wide = {f"key{i}": i for i in range(50)}
    assert "... (50 keys)" in describe_shape(wide)


# -- duck-typed objects: the frameworks' classes' shapes, without importing them ----------------


class TextNode(BaseModel):  # llama_index.core.schema.TextNode's fields (pydantic v2)
    id_: str
    text: str
    metadata: dict[str, Any] = {}
    relationships: dict[str, Any] = {}
    embedding: list[float] | None = None


class NodeWithScore(BaseModel):
    node: TextNode
    score: float | None = None

    @property
    def node_id(self) -> str:
        return self.node.id_


@dataclass
class LlamaResponse:  # llama_index.core.base.response.schema.Response is a dataclass
    response: str | None
    source_nodes: list[NodeWithScore] = field(default_factory=list)
    metadata: dict[str, Any] | None = None

    def __str__(self) -> str:
        return self.response or "None"


class Document(BaseModel):  # langchain_core.documents.Document
    page_content: str
    metadata: dict[str, Any] = {}
    id: str | None = None
    type: str = "Document"


@dataclass
class HaystackDocument:
    id: str
    content: str
    meta: dict[str, Any] = field(default_factory=dict)
    score: float | None = None


@dataclass
class GeneratedAnswer:
    data: str
    query: str
    documents: list[HaystackDocument]
    meta: dict[str, Any] = field(default_factory=dict)


def llama_response() -> LlamaResponse:
    first = TextNode(
        id_="9a1e-uuid", text="Employees get 25 days", metadata={"file_name": "leave.md"}
    )
    second = TextNode(id_="77b0-uuid", text="Expenses", metadata={"file_name": "exp.md"})
    nodes = [NodeWithScore(node=first, score=2.5), NodeWithScore(node=second)]
    return LlamaResponse(response=ANSWER, source_nodes=nodes, metadata={})


def test_python_results_may_be_the_frameworks_objects() -> None:
    llama = to_response(llama_response())
    assert llama.response_format == "llamaindex" and llama.answer == ANSWER
    assert ids(llama) == [("9a1e-uuid", "leave.md"), ("77b0-uuid", "exp.md")]
    assert llama.retrieved[0].score == 2.5 and llama.retrieved[1].score is None
    json.dumps(llama.raw)  # stored with the run: plain JSON
    docs = [Document(page_content="x", metadata={"source": "a.md"}, id="c1")]
    chain = to_response({"input": "q", "context": docs, "answer": "A"})
    assert chain.response_format == "langchain" and ids(chain) == [("c1", "a.md")]
    answer = GeneratedAnswer(
        ANSWER, "q", [HaystackDocument("h1", "25 days", {"file_name": "l.md"})]
    )
    hay = to_response({"answers": [answer]})
    assert hay.response_format == "haystack" and ids(hay) == [("h1", "l.md")]


def test_a_python_target_applies_its_response_mapping_and_format() -> None:
    mapped = TargetConfig(
        type="python",
        callable="x:y",
        response_mapping={"answer": "out.text", "retrieved": "out.hits"},
    )
    target = build_target(mapped, function=lambda q: {"out": {"text": "A", "hits": [{"id": "c"}]}})
    response = to_response(target.function("q"), target.response_format, target.response_mapping)  # type: ignore[attr-defined]
    assert response.answer == "A" and ids(response) == [("c", None)]
    assert response.response_format == "mapping"
    with pytest.raises(TargetError, match="not in the langchain format"):
        to_response(llama_response(), "langchain")
    with pytest.raises(TargetError, match="response_mapping does not apply"):
        to_response(Response(answer="a"), "auto", {"answer": "x"})
    with pytest.raises(ReplyShapeError, match="returned object"):
        to_response(object())


def test_config_checks_the_format_and_refuses_it_beside_a_mapping() -> None:
    with pytest.raises(ConfigError, match="unknown response format 'llama'"):
        load_config(
            overrides={"target": {"type": "http", "url": "http://x", "response_format": "llama"}}
        )
    with pytest.raises(ConfigError, match="give one of them"):
        load_config(
            overrides={
                "target": {
                    "type": "http",
                    "url": "http://x",
                    "response_format": "llamaindex",
                    "response_mapping": {"answer": "a"},
                }
            }
        )
    with pytest.raises(ValueError, match="reference target answers in ragmeter's own format"):
        build_target(TargetConfig(response_mapping={"answer": "a"}))


def test_real_llamaindex_and_langchain_objects_when_installed() -> None:
    """The frameworks' own objects, when their packages are installed (they are not test
    dependencies: llama-index-core and langchain-core take ~320 MB)."""
    schema = pytest.importorskip("llama_index.core.schema", reason="llama-index-core not installed")
    response_schema = pytest.importorskip("llama_index.core.base.response.schema")
    documents = pytest.importorskip(
        "langchain_core.documents", reason="langchain-core not installed"
    )
    node = schema.TextNode(text="Employees get 25 days", metadata={"file_name": "leave.md"})
    reply = response_schema.Response(
        response=ANSWER, source_nodes=[schema.NodeWithScore(node=node, score=1.5)]
    )
    llama = to_response(reply)
    assert llama.response_format == "llamaindex" and ids(llama) == [(node.node_id, "leave.md")]
    doc = documents.Document(page_content="x", metadata={"source": "a.md"}, id="c1")
    chain = to_response({"input": "q", "context": [doc], "answer": "A"})
    assert chain.response_format == "langchain" and ids(chain) == [("c1", "a.md")]

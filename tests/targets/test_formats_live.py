"""A LlamaIndex-style service evaluated with at most one flag, through the real CLI: an HTTP
server on 127.0.0.1 answering with LlamaIndex's natural reply (random UUID node ids, file names
in the metadata), and a Python function returning a duck-typed LlamaIndex ``Response`` object.
Gold passages are given as file names, so retrieval is matched by ``doc_id``; every value is
checked against a hand computation."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from ragmeter.cli.main import main
from ragmeter.store import RunStore
from tests.targets.servers import Reply, Request, Server, on_post

# question -> the files of the nodes the service retrieves, in its order
RETRIEVED = {
    "How much leave do I get?": ["expenses.md", "leave-policy.md", "leave-policy.md"],
    "When are expenses due?": ["expenses.md", "holidays.md"],
    "Which days are holidays and how is leave booked?": [
        "security.md",
        "holidays.md",
        "security.md",
        "leave-policy.md",
    ],
}
FILES = {name for files in RETRIEVED.values() for name in files}
CASES = [
    {"id": "c1", "question": "How much leave do I get?", "gold": ["leave-policy.md"]},
    {"id": "c2", "question": "When are expenses due?", "gold": ["expenses.md"]},
    {
        "id": "c3",
        "question": "Which days are holidays and how is leave booked?",
        "gold": ["holidays.md", "leave-policy.md"],
    },
]
# by hand, documents counted once at their first rank:
#   c1: expenses, leave-policy           -> first relevant at 2; 1 of 1 gold in the top 3
#   c2: expenses, holidays               -> first relevant at 1; 1 of 1
#   c3: security, holidays, leave-policy -> first relevant at 2; 2 of 2 in the top 3
EXPECTED = {
    "hit_rate_at_1": (0 + 1 + 0) / 3,
    "recall_at_1": (0 + 1 + 0) / 3,
    "recall_at_3": (1 + 1 + 1) / 3,
    "precision_at_3": (1 / 3 + 1 / 3 + 2 / 3) / 3,
    "mrr": (1 / 2 + 1 + 1 / 2) / 3,
}


def natural_reply(question: str) -> dict[str, Any]:
    """What a FastAPI endpoint around a LlamaIndex query engine returns: default (random)
    node ids, the file name in each node's metadata."""
    files = RETRIEVED[question]
    return {
        "response": f"An answer to: {question}",
        "source_nodes": [
            {
                "node_id": str(uuid.uuid4()),
                "text": f"A chunk of {name}.",
                "score": round(10.0 - rank, 2),
                "metadata": {"file_name": name, "file_path": f"/srv/docs/{name}"},
            }
            for rank, name in enumerate(files)
        ],
    }


@pytest.fixture
def llamaindex_service() -> Iterator[str]:
    def reply(request: Request) -> Reply:
        body = json.loads(request.body or b"{}")
        if request.path != "/query" or "question" not in body:
            status, payload = 422, {"detail": [{"loc": ["body", "question"], "msg": "missing"}]}
        else:
            status, payload = 200, natural_reply(body["question"])
        return status, {"Content-Type": "application/json"}, json.dumps(payload).encode()

    server = Server(on_post(reply))  # GET /health: 200
    yield server.url
    server.stop()


def write_dataset(folder: Path) -> Path:
    path = folder / "cases.jsonl"
    rows = [
        {
            "case_id": case["id"],
            "question": case["question"],
            "gold_passages": [{"doc_id": name} for name in case["gold"]],
        }
        for case in CASES
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def evaluate(
    tmp_path: Path, target: str, *flags: str, out_name: str = "out", checked: bool = True
) -> tuple[Result, dict[str, Any]]:
    out = tmp_path / out_name
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--no-progress",
            "--dataset",
            str(write_dataset(tmp_path)),
            "--target",
            target,
            "--metrics",
            "retrieval",
            "--store",
            str(tmp_path / f"{out_name}.db"),
            "--output-dir",
            str(out),
            *flags,
        ],
    )
    # a run whose every case failed exits non-zero (with the failures' summary)
    assert result.exit_code == 0 or not checked, result.output
    [path] = out.glob("*.json")
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return result, document


def check_values(document: dict[str, Any], store: Path, source: str = "llamaindex") -> None:
    values = {m["name"]: m for m in document["scorecard"]["metrics"]}
    for name, expected in EXPECTED.items():
        assert values[name]["value"] == pytest.approx(expected), name
        assert values[name]["n_scored"] == 3, name
    results = RunStore(str(store)).get_results(document["id"])
    for result in results:
        assert result.response is not None and result.response.response_format == source
        for chunk in result.response.retrieved:  # the service's own random ids, kept
            assert uuid.UUID(str(chunk.id)) and chunk.doc_id in FILES
    assert document["performance"]["response_formats"] == {source: 3}


@pytest.mark.parametrize(
    "flags", [("--response-format", "llamaindex"), ("--response-format", "auto"), ()]
)
def test_a_llamaindex_http_service_with_at_most_one_flag(
    tmp_path: Path, llamaindex_service: str, flags: tuple[str, ...]
) -> None:
    result, document = evaluate(tmp_path, llamaindex_service, *flags)
    check_values(document, tmp_path / "out.db")
    chosen = flags[1] if flags else "auto"
    assert f"replies read as llamaindex (3) · response format {chosen}" in result.output
    shown = CliRunner().invoke(main, ["show", document["id"], "--store", str(tmp_path / "out.db")])
    assert shown.exit_code == 0, shown.output
    assert "replies read as llamaindex (3)" in shown.output


LLAMA_MODULE = """
from dataclasses import dataclass, field
import uuid

from pydantic import BaseModel

RETRIEVED = {retrieved!r}


class TextNode(BaseModel):  # llama_index.core.schema.TextNode's fields
    id_: str
    text: str
    metadata: dict = {{}}
    relationships: dict = {{}}


class NodeWithScore(BaseModel):
    node: TextNode
    score: float | None = None


@dataclass
class Response:  # llama_index.core.base.response.schema.Response
    response: str | None
    source_nodes: list = field(default_factory=list)
    metadata: dict | None = None


def answer(question):
    nodes = [
        NodeWithScore(
            node=TextNode(id_=str(uuid.uuid4()), text="chunk", metadata={{"file_name": name}}),
            score=1.0 / (rank + 1),
        )
        for rank, name in enumerate(RETRIEVED[question])
    ]
    return Response(response="an answer", source_nodes=nodes, metadata={{}})


def as_dict(question):
    reply = answer(question)
    return {{"result": {{"text": reply.response, "nodes": [
        {{"uid": n.node.id_, "file": n.node.metadata["file_name"]}} for n in reply.source_nodes
    ]}}}}
"""


def test_a_python_function_returning_a_llamaindex_response_object(tmp_path: Path) -> None:
    module = tmp_path / "rag_objects.py"
    module.write_text(LLAMA_MODULE.format(retrieved=RETRIEVED), encoding="utf-8")
    _, document = evaluate(tmp_path, f"{module}:answer")
    check_values(document, tmp_path / "out.db")


def test_a_python_target_applies_response_map_flags(tmp_path: Path) -> None:
    module = tmp_path / "rag_dicts.py"
    module.write_text(LLAMA_MODULE.format(retrieved=RETRIEVED), encoding="utf-8")
    maps = [
        "answer=result.text",
        "retrieved=result.nodes",
        "retrieved.id=uid",
        "retrieved.doc_id=file",
    ]
    flags = [flag for pair in maps for flag in ("--response-map", pair)]
    _, document = evaluate(tmp_path, f"{module}:as_dict", *flags)
    check_values(document, tmp_path / "out.db", "mapping")


def test_an_http_request_template_flag_and_an_unreadable_reply_named_by_its_shape(
    tmp_path: Path, llamaindex_service: str
) -> None:
    # the service reads "question": a template without it gets a 422 on every case
    template = json.dumps({"query": "{question}", "k": "{top_k}"})
    _, bad = evaluate(tmp_path, llamaindex_service, "--request-template", template,
                      out_name="bad", checked=False)  # fmt: skip
    assert {c["error_type"] for c in bad["cases"]} == {"http_4xx"}
    # with the right template the same flag works
    good = json.dumps({"question": "{question}"})
    _, document = evaluate(tmp_path, llamaindex_service, "--request-template", good)
    check_values(document, tmp_path / "out.db")
    # a named format that does not fit: every case says the reply's shape and the mapping
    _, wrong = evaluate(tmp_path, llamaindex_service, "--response-format", "langchain",
                        out_name="wrong", checked=False)  # fmt: skip
    message = wrong["cases"][0]["error_message"]
    assert "is not in the langchain format" in message
    assert '"source_nodes": [{"node_id": string, "text": string, "score": number' in message
    assert "--response-map answer=response --response-map retrieved=source_nodes" in message


# the user's own dataset shape (issue 29): their expected answer under 'answer', the gold file
# and their own pinned node id in flat columns, an unanswerable question without a source
OWN_CASES = [
    {"id": "c1", "question": "How much leave do I get?", "answer": "25 days.",
     "source_file": "leave-policy.md", "source_node": "leave-policy#allowance"},
    {"id": "c2", "question": "When are expenses due?", "answer": "Within 30 days.",
     "source_file": "expenses.md", "source_node": "expenses#deadline"},
    {"id": "c3", "question": "Which days are holidays and how is leave booked?",
     "answer": "Public holidays; leave is booked in the portal.",
     "source_file": "holidays.md", "source_node": "holidays#list"},
    {"id": "c4", "question": "What is the CEO's shoe size?",
     "answer": "The documents do not say.", "answerable": False},
]  # fmt: skip
OWN_RETRIEVED = {**RETRIEVED, "What is the CEO's shoe size?": ["security.md"]}
# by hand, documents counted once at their first rank (c4 has no gold: not scored):
#   c1: expenses, leave-policy           -> first relevant at 2
#   c2: expenses, holidays               -> first relevant at 1
#   c3: security, holidays, leave-policy -> first relevant at 2
# the gold node ids never match the service's random UUIDs: matched through doc_id
OWN_EXPECTED = {
    "hit_rate_at_1": (0 + 1 + 0) / 3,
    "recall_at_3": (1 + 1 + 1) / 3,
    "precision_at_3": (1 / 3 + 1 / 3 + 1 / 3) / 3,
    "mrr": (1 / 2 + 1 + 1 / 2) / 3,
}
READ_LINE = (
    "read answer -> reference_answer, source_file -> gold_passages.0.doc_id, "
    "source_node -> gold_passages.0.chunk_id"
)


@pytest.mark.parametrize("as_function", [False, True])
def test_the_users_own_dataset_shape_with_one_flag(tmp_path: Path, as_function: bool) -> None:
    dataset = tmp_path / "own.jsonl"
    dataset.write_text("".join(json.dumps(c) + "\n" for c in OWN_CASES), encoding="utf-8")
    if as_function:
        module = tmp_path / "rag_own.py"
        module.write_text(LLAMA_MODULE.format(retrieved=OWN_RETRIEVED), encoding="utf-8")
        target, server = f"{module}:answer", None
    else:

        def reply(request: Request) -> Reply:
            files = OWN_RETRIEVED[json.loads(request.body or b"{}")["question"]]
            payload = {**natural_reply("How much leave do I get?"), "source_nodes": [
                {"node_id": str(uuid.uuid4()), "text": "t", "metadata": {"file_name": name}}
                for name in files
            ]}  # fmt: skip
            return 200, {"Content-Type": "application/json"}, json.dumps(payload).encode()

        server = Server(on_post(reply))
        target = server.url
    try:
        result = CliRunner().invoke(
            main,
            ["eval", "--no-progress", "--dataset", str(dataset), "--target", target,
             "--metrics", "retrieval", "--store", str(tmp_path / "own.db"),
             "--output-dir", str(tmp_path / "own"), "--response-format", "auto"],
        )  # fmt: skip
    finally:
        if server is not None:
            server.stop()
    assert result.exit_code == 0, result.output
    flat_output = " ".join(result.output.split())
    assert f"{dataset}: {READ_LINE}" in flat_output
    # the scorecard says how retrieval was matched: the gold node ids never match
    assert "retrieval: retrieved chunk ids never match gold chunk ids (example: retrieved " in (
        flat_output
    )
    gold_nodes = "|".join(re.escape(c["source_node"]) for c in OWN_CASES if "source_node" in c)
    assert re.search(rf"vs gold '({gold_nodes})'\): matched by doc_id", flat_output)
    [markdown] = (tmp_path / "own").glob("*.md")  # the report says the same
    report = markdown.read_text(encoding="utf-8")
    assert "- replies read as llamaindex \\(4\\) · response format auto" in report
    assert "- retrieval: retrieved chunk ids never match gold chunk ids \\(example: " in report
    [path] = (tmp_path / "own").glob("*.json")
    document = json.loads(path.read_text(encoding="utf-8"))
    values = {m["name"]: m for m in document["scorecard"]["metrics"]}
    for name, expected in OWN_EXPECTED.items():
        assert values[name]["value"] == pytest.approx(expected), name
        assert values[name]["n_scored"] == 3, name
    [unanswerable] = [c for c in document["cases"] if c["case_id"] == "c4"]
    assert {unanswerable["scores"][name]["reason"] for name in OWN_EXPECTED} == {
        "case has no gold passages"
    }

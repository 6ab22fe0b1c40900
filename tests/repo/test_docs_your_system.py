"""docs/your-system.md as a user follows it: its cases file, its LangChain chain (run with the
real langchain-core), its `ragmeter` command lines as written, and its LlamaIndex service's
reply served on 127.0.0.1. Expected values are worked out by hand from the page."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from ragmeter.cli.main import main
from ragmeter.store import RunStore
from tests.targets.servers import Reply, Request, Server, on_post

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "your-system.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", PAGE, flags=re.DOTALL)


def block(language: str, first_line: str) -> str:
    [found] = [text for lang, text in BLOCKS if lang == language and text.startswith(first_line)]
    return found


def commands(target_prefix: str) -> list[list[str]]:
    found = []
    for language, text in BLOCKS:
        for line in text.splitlines() if language == "bash" else []:
            if line.startswith("ragmeter ") and f"--target {target_prefix}" in line:
                found.append(shlex.split(line)[1:])
    return found


def cases_file(folder: Path) -> Path:
    path = folder / "cases.jsonl"
    path.write_text(block("json", '{"id": "q1"'), encoding="utf-8")
    return path


def run(folder: Path, arguments: list[str]) -> tuple[Result, dict[str, Any]]:
    result = CliRunner().invoke(
        main,
        [*arguments, "--no-progress", "--store", str(folder / "runs.db"),
         "--output-dir", str(folder / "out")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [path] = (folder / "out").glob("*.json")
    return result, json.loads(path.read_text(encoding="utf-8"))


def values(document: dict[str, Any]) -> dict[str, tuple[float | None, int]]:
    return {m["name"]: (m["value"], m["n_scored"]) for m in document["scorecard"]["metrics"]}


def test_the_cases_validate_as_the_page_says(tmp_path: Path) -> None:
    path = cases_file(tmp_path)
    result = CliRunner().invoke(main, ["datasets", "validate", str(path)])
    assert result.exit_code == 0, result.output
    said = "ok: 4 cases; read answer -> reference_answer, source_file -> gold_passages.0.doc_id"
    assert said in PAGE
    assert result.output.strip() == said


def test_the_langchain_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("langchain_core", reason="langchain-core is in the test extra")
    monkeypatch.chdir(tmp_path)
    cases_file(tmp_path)
    (tmp_path / "rag_chain.py").write_text(block("python", "# rag_chain.py"), encoding="utf-8")
    [arguments] = commands("rag_chain.py")
    result, document = run(tmp_path, arguments)
    assert "replies read as langchain (4) · response format auto" in result.output
    assert "replies read as langchain (4) · response format auto" in PAGE
    # the compact view shows the unanswerable case's own accuracy: q4 refused, 1 of 1
    [row] = [line for line in result.output.splitlines() if "abstention_accuracy" in line]
    assert "1.000" in row and "1/3/0" in row
    # by hand, words shared with each document (the retriever keeps the best 2, ties in order):
    #   q1 leave 5, expenses 2, holidays 0 -> [leave, expenses]: gold at 1
    #   q2 expenses 4, others 0            -> [expenses, leave]: gold at 1
    #   q3 holidays 3 (boxing, day, public), leave 1 (a) -> [holidays, leave]: gold at 1
    #   q4 no gold: skipped; its answer is the chain's refusal
    found = values(document)
    for name in ("hit_rate_at_1", "mrr", "recall_at_5"):
        assert found[name] == (pytest.approx(1.0), 3), name
    assert found["precision_at_5"] == (pytest.approx(1 / 5), 3)
    scores = {c["case_id"]: c["scores"] for c in document["cases"]}
    assert scores["q4"]["mrr"]["reason"] == "case has no gold passages"
    # the refusal is skipped by the claim metrics, saying which rule decided
    support = scores["q4"]["claim_support_rate"]
    assert support["status"] == "skipped" and "abstained (phrase:" in support["reason"]
    stored = {
        r.case_id: r.response
        for r in RunStore(str(tmp_path / "runs.db")).get_results(document["id"])
    }
    assert stored["q4"] is not None and stored["q1"] is not None
    assert stored["q4"].answer == "I could not find this in the documentation."
    assert stored["q1"].answer == "Employees get 25 days of annual leave a year."
    assert [c.doc_id for c in stored["q1"].retrieved] == ["leave-policy.md", "expenses.md"]


def test_the_llamaindex_http_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cases_file(tmp_path)
    example = json.loads(block("json", '{"response"'))
    node = example["source_nodes"][0]
    files = {"q1": "leave-policy.md", "q2": "expenses.md", "q3": "holidays.md", "q4": "x.md"}
    asked: list[dict[str, Any]] = []

    def reply(request: Request) -> Reply:
        body = json.loads(request.body or b"{}")
        asked.append(body)
        [case_id] = [c for c, q in QUESTIONS.items() if q == body["question"]]
        # the page's reply, with the service's own node for this question, ranked second
        nodes = [
            {**node, "node_id": f"{case_id}-other", "metadata": {"file_name": "other.md"}},
            {**node, "node_id": f"{case_id}-{len(asked)}",
             "metadata": {"file_name": files[case_id]}},
        ]  # fmt: skip
        payload = {**example, "source_nodes": nodes}
        return 200, {"Content-Type": "application/json"}, json.dumps(payload).encode()

    server = Server(on_post(reply))  # GET /health: 200, as the page's service
    try:
        [arguments] = commands("http://127.0.0.1:8000")
        arguments = [server.url if a == "http://127.0.0.1:8000" else a for a in arguments]
        result, document = run(tmp_path, arguments)
    finally:
        server.stop()
    assert {tuple(sorted(body)) for body in asked} == {("question", "top_k")}
    assert "replies read as llamaindex (4)" in result.output
    # by hand: every answerable case's gold file is the second of two documents
    found = values(document)
    assert found["mrr"] == (pytest.approx(0.5), 3)
    assert found["hit_rate_at_1"] == (pytest.approx(0.0), 3)
    assert found["recall_at_5"] == (pytest.approx(1.0), 3)


QUESTIONS = {
    json.loads(line)["id"]: json.loads(line)["question"]
    for line in block("json", '{"id": "q1"').splitlines()
}

"""BEIR, TREC, RAGAS and deepeval: import -> export -> import gives the same cases (and, for
RAGAS/deepeval, the same recorded responses); a BEIR folder is recognised by its files; the
reference target answers a corpus dataset over that corpus, indexed once in the cache."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.config import TargetConfig
from ragmeter.datasets import DatasetError, load_dataset
from ragmeter.datasets.corpus import corpus_documents
from ragmeter.datasets.interop import context_id, deepeval_rows, export_interop, import_rows
from ragmeter.datasets.retrieval import write_beir, write_trec
from ragmeter.models import CaseResult, Response
from ragmeter.targets.reference.target import ReferenceTarget

DOCS = [
    {"_id": "d1", "title": "Vacation", "text": "New employees get 25 vacation days a year."},
    {"_id": "d2", "title": "Parking", "text": "Parking permits cost 40 euros a month."},
    {"_id": "d3", "title": "Remote work", "text": "Remote work is allowed two days a week."},
]


def beir_folder(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    queries = [{"_id": "q1", "text": "how many vacation days"}, {"_id": "q2", "text": "parking"}]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td2\t1\nq2\td3\t0\n"
    )
    return root


def comparable(cases: list) -> list[dict]:  # type: ignore[type-arg]
    """The cases without the corpus tag, which names the folder they came from."""
    out = []
    for case in cases:
        dumped = case.model_dump(exclude={"dataset"})
        dumped["metadata"].pop("ragmeter_corpus", None)
        out.append(dumped)
    return out


def test_beir_round_trip_and_folder_detection(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path / "beir")
    cases = load_dataset(f"beir:{folder}")
    assert [c.case_id for c in cases] == ["q1", "q2"]
    assert [(p.doc_id, p.grade) for p in cases[1].gold_passages] == [("d2", 1), ("d3", 0)]
    assert load_dataset(str(folder)) == cases  # recognised by its files
    documents = corpus_documents(f"beir:{folder}")
    write_beir(tmp_path / "again", cases, documents)
    assert comparable(load_dataset(f"beir:{tmp_path / 'again'}")) == comparable(cases)
    assert corpus_documents(f"beir:{tmp_path / 'again'}") == documents


def test_trec_round_trip_folder_and_keyed_forms(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path / "beir")
    cases = load_dataset(f"beir:{folder}")
    write_trec(tmp_path / "trec", cases, corpus_documents(f"beir:{folder}"))
    again = load_dataset(f"trec:{tmp_path / 'trec'}")
    assert comparable(again) == comparable(cases)
    t = tmp_path / "trec"
    keyed = load_dataset(
        f"trec:topics={t / 'topics.txt'},qrels={t / 'qrels.txt'},docs={t / 'docs.trec'}"
    )
    assert comparable(keyed) == comparable(cases)
    assert [d.doc_id for d in corpus_documents(keyed[0].metadata["ragmeter_corpus"])] == [
        "d1",
        "d2",
        "d3",
    ]
    with pytest.raises(DatasetError, match="missing docs"):
        load_dataset(f"trec:topics={t / 'topics.txt'},qrels={t / 'qrels.txt'}")


RAGAS = [
    {
        "user_input": "How many vacation days?",
        "retrieved_contexts": ["New employees get 25 vacation days a year.", "Parking costs."],
        "response": "25 days.",
        "reference": "25 days per year.",
        "reference_contexts": ["New employees get 25 vacation days a year."],
    },
    {"user_input": "Who is the CEO?", "retrieved_contexts": [], "response": "I don't know."},
]


@pytest.mark.parametrize("fmt", ["ragas", "deepeval"])
def test_ragas_and_deepeval_round_trip(tmp_path: Path, fmt: str) -> None:
    rows = RAGAS
    if fmt == "deepeval":
        rename = {
            "user_input": "input",
            "retrieved_contexts": "retrieval_context",
            "response": "actual_output",
            "reference": "expected_output",
            "reference_contexts": "context",
        }
        rows = [{rename[k]: v for k, v in row.items()} for row in RAGAS]
    source = tmp_path / f"{fmt}.json"
    source.write_text(json.dumps(rows), encoding="utf-8")
    cases, lines = import_rows(fmt, str(source))
    assert cases[0].gold_passages[0].doc_id == context_id(RAGAS[0]["reference_contexts"][0])
    assert lines[0]["response"]["retrieved"][0]["doc_id"] == cases[0].gold_passages[0].doc_id
    results = [
        CaseResult(
            case_id=line["case_id"], status="ok", response=Response.model_validate(line["response"])
        )
        for line in lines
    ]
    exported = tmp_path / f"{fmt}.jsonl"
    assert export_interop(exported, fmt, cases, results) == 2
    again, again_lines = import_rows(fmt, str(exported))
    assert [c.model_dump(exclude={"dataset"}) for c in again] == [
        c.model_dump(exclude={"dataset"}) for c in cases
    ]
    assert again_lines == lines
    assert load_dataset(f"{fmt}:{source}")[0].question == "How many vacation days?"


@pytest.mark.parametrize("fmt", ["ragas", "deepeval"])
def test_ragas_import_eval_export_through_the_cli(tmp_path: Path, fmt: str) -> None:
    """``datasets import ragas FILE OUT/`` -> ``eval --target replay:`` -> ``export --format
    ragas|deepeval``: the exported rows hold the same questions, answers and contexts."""
    source = tmp_path / "ragas.json"
    source.write_text(json.dumps(RAGAS), encoding="utf-8")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "ragmeter", *args],
            capture_output=True, text=True, timeout=300, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done

    cli("datasets", "import", "ragas", str(source), "imported")
    store = str(tmp_path / "runs.db")
    cli(
        "eval", "--dataset", "imported/cases.jsonl", "--target", "replay:imported/responses.jsonl",
        "--metrics", "lexical", "--store", store, "--output-dir", "out", "--no-progress",
    )  # fmt: skip
    (run_file,) = (tmp_path / "out").glob("*.json")
    run_id = json.loads(run_file.read_text(encoding="utf-8"))["id"]
    cli("export", run_id, "--format", fmt, "-o", f"back.{fmt}.jsonl", "--store", store)
    rows = [json.loads(line) for line in (tmp_path / f"back.{fmt}.jsonl").read_text().splitlines()]
    keys = (
        ("user_input", "response", "retrieved_contexts", "reference")
        if fmt == "ragas"
        else ("input", "actual_output", "retrieval_context", "expected_output")
    )
    got = [tuple(row.get(k) for k in keys) for row in rows]
    want = [
        (r["user_input"], r["response"], r["retrieved_contexts"], r.get("reference")) for r in RAGAS
    ]
    assert got == want


@pytest.mark.parametrize("fmt", ["ragas", "deepeval"])
def test_a_native_run_exported_and_imported_keeps_its_retrieval_scores(
    tmp_path: Path, fmt: str
) -> None:
    """The bundled demo (gold passages by chunk id, with snippets) exported as ragas/deepeval
    rows, imported and replayed: the gold contexts are the retrieved chunks' texts, so every
    hit is still a hit (a snippet as the gold context never matched: recall read 0.000)."""

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "ragmeter", *args, "--store", "runs.db"],
            capture_output=True, text=True, timeout=300, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done

    def card(name: str) -> dict[str, float | None]:
        document = json.loads((tmp_path / "out" / f"{name}.json").read_text(encoding="utf-8"))
        return {m["name"]: m["value"] for m in document["scorecard"]["metrics"]}

    common = ["--metrics", "retrieval", "--no-progress", "--output-dir", "out"]
    cli("eval", *common, "--output", "native")
    run_id = json.loads((tmp_path / "out" / "native.json").read_text())["id"]
    cli("export", run_id, "--format", fmt, "-o", "rows.jsonl")
    done = subprocess.run(
        [sys.executable, "-m", "ragmeter", "datasets", "import", fmt, "rows.jsonl", "back"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    cli("eval", "-d", "back/cases.jsonl", "--target", "replay:back/responses.jsonl", *common,
        "--output", "again")  # fmt: skip
    native, again = card("native"), card("again")
    for name in ("recall_at_5", "hit_rate_at_5", "mrr"):
        assert native[name] is not None and again[name] == pytest.approx(native[name]), name


def test_interop_problems_name_the_row_and_field(tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text(json.dumps({"input": "q", "retrieval_context": "not a list"}) + "\n" + "{}\n")
    with pytest.raises(DatasetError) as caught:
        load_dataset(f"deepeval:{source}")
    text = str(caught.value)
    assert "(row 2): case bad-2: field 'input': missing or empty" in text
    rows = deepeval_rows([], [])
    assert rows == []


def test_reference_target_answers_over_the_cases_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGMETER_CACHE", str(tmp_path / "cache"))
    folder = beir_folder(tmp_path / "beir")
    cases = load_dataset(f"beir:{folder}")
    target = ReferenceTarget(TargetConfig(type="reference", top_k=3))
    response = asyncio.run(target.query(cases[0]))
    assert response.retrieved[0].doc_id == "d1"  # BEIR's document, not the demo's
    assert list((tmp_path / "cache" / "index").glob("beir-*/chunks.jsonl"))


def test_import_command_writes_cases_and_replayable_responses(tmp_path: Path) -> None:
    source = tmp_path / "ragas.json"
    source.write_text(json.dumps(RAGAS), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "ragmeter", "datasets", "import", "ragas", str(source), "out"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    evaluated = subprocess.run(
        [sys.executable, "-m", "ragmeter", "eval", "--dataset", "out/cases.jsonl",
         "--target", "replay:out/responses.jsonl", "--metrics", "retrieval,lexical",
         "--store", "r.db", "--no-progress"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert evaluated.returncode in (0, 1), evaluated.stderr
    assert "questions: 2" in evaluated.stdout

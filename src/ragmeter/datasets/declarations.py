"""Every dataset ragmeter knows by name, declared once: its loader (registered under
``loaders``), the loader of its corpus, whether a bare name loads it, and what ``ragmeter
datasets list`` and docs/datasets.md say about it. Nothing here imports a loader."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DatasetDeclaration:
    name: str
    loader: str  # "module:function" taking the argument after NAME:
    aspects: str  # what it tests
    source: str  # where a bare name reads it from, or what local files it is
    local_form: str  # the --dataset forms
    notes: str
    patterns: tuple[str, ...] = ()  # file names that hold it under a data folder
    corpus: str | None = None  # "module:function" giving the documents it is asked over
    by_name: bool = False  # loads by its bare name (the hub, or a default local file)


DATASETS: tuple[DatasetDeclaration, ...] = (
    DatasetDeclaration(
        "ragbench", "ragmeter.datasets.ragbench:load_ragbench", "generation, retrieval",
        "hub: rungalileo/ragbench (12 subsets, test)",
        "ragbench[:SUBSET] | ragbench:FILE.parquet|DIR",
        "GPT-4 per-sentence support labels and adherence kept in metadata",
        ("ragbench", "*.parquet"), "ragmeter.datasets.ragbench:ragbench_corpus", by_name=True,
    ),
    DatasetDeclaration(
        "squad_v2", "ragmeter.datasets.named:load_squad_v2", "abstention",
        "hub: rajpurkar/squad_v2 (validation)", "squad_v2:FILE.json",
        "~50% unanswerable; the SQuAD JSON or HF rows", ("squad*",),
        "ragmeter.datasets.named:squad_v2_corpus", by_name=True,
    ),
    DatasetDeclaration(
        "hotpotqa", "ragmeter.datasets.named:load_hotpotqa", "retrieval, generation",
        "hub: hotpot_qa distractor (validation)", "hotpotqa:FILE.json",
        "multi-hop: one support group a supporting title", ("hotpot*",),
        "ragmeter.datasets.named:hotpotqa_corpus", by_name=True,
    ),
    DatasetDeclaration(
        "msmarco", "ragmeter.datasets.named:load_msmarco", "retrieval",
        "hub: ms_marco v1.1 (validation)", "msmarco:FILE.json",
        "'No Answer Present.' rows are unanswerable", ("ms_marco*", "msmarco*"),
        "ragmeter.datasets.named:msmarco_corpus", by_name=True,
    ),
    DatasetDeclaration(
        "qasper", "ragmeter.datasets.named:load_qasper", "citation, generation",
        "hub: allenai/qasper (validation)", "qasper:FILE.json",
        "long papers; evidence paragraphs are the gold", ("qasper*",),
        "ragmeter.datasets.named:qasper_corpus", by_name=True,
    ),
    DatasetDeclaration(
        "golden", "ragmeter.datasets.named:load_golden", "generation, retrieval",
        "local: golden_qa.json / $RAGMETER_GOLDEN", "golden[:FILE]",
        "your curated cases in ragmeter's schema", ("golden_qa.json", "golden.jsonl"),
        by_name=True,
    ),
    DatasetDeclaration(
        "beir", "ragmeter.datasets.retrieval:load_beir", "retrieval", "local BEIR folder",
        "beir:DIR (or the folder itself)", "corpus.jsonl, queries.jsonl, qrels/*.tsv",
        ("corpus.jsonl",), "ragmeter.datasets.retrieval:beir_corpus",
    ),
    DatasetDeclaration(
        "trec", "ragmeter.datasets.retrieval:load_trec", "retrieval", "local TREC files",
        "trec:DIR | trec:topics=F,qrels=F,docs=P", "topics + qrels + documents",
        corpus="ragmeter.datasets.retrieval:trec_corpus",
    ),
    DatasetDeclaration(
        "cranfield", "ragmeter.datasets.retrieval:load_cranfield", "retrieval",
        "local Cranfield files", "cranfield:DIR (or the folder)",
        "1,400 documents, 225 graded queries", ("cran.all.1400",),
        "ragmeter.datasets.retrieval:cranfield_corpus",
    ),
    DatasetDeclaration(
        "ragas", "ragmeter.datasets.interop:load_ragas", "generation, retrieval",
        "local RAGAS dataset", "ragas:FILE",
        "user_input, retrieved_contexts, response, reference",
    ),
    DatasetDeclaration(
        "deepeval", "ragmeter.datasets.interop:load_deepeval", "generation, retrieval",
        "local deepeval test cases", "deepeval:FILE",
        "input, actual_output, expected_output, retrieval_context, context",
    ),
)  # fmt: skip

# the loaders of file formats (``jsonl:FILE``, ...; a path alone picks one by its suffix)
FILE_LOADERS: dict[str, str] = {
    "jsonl": "ragmeter.datasets.native:load_jsonl",
    "yaml": "ragmeter.datasets.native:load_yaml",
    "labels": "ragmeter.datasets.labels:load_label_folder",
    "mapped": "ragmeter.datasets.mapped:load_mapped",
}

NAMED_DATASETS: tuple[str, ...] = tuple(d.name for d in DATASETS if d.by_name)
CORPUS_READERS: dict[str, str] = {d.name: d.corpus for d in DATASETS if d.corpus is not None}


def declared(name: str) -> DatasetDeclaration | None:
    return next((d for d in DATASETS if d.name == name), None)

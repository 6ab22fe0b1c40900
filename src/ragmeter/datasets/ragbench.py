"""RAGBench (rungalileo/ragbench) rows as cases: ``ragbench[:SUBSET]`` by name, or
``ragbench:PATH`` for its parquet shards (a file, or a folder such as ``ragbench/`` holding one
folder a subset).

Each row's documents are its corpus (``doc_id`` = ``CASE/dN``); the gold passages are the
documents holding a sentence GPT-4 labelled relevant (``all_relevant_sentence_keys``; grade 3
when the response also used it). The row's response and its labels are kept under
``metadata["ragbench"]``: ``adherence_score``, the per-sentence ``sentence_support``
(``response_sentence_key``, ``fully_supported``, ``supporting_sentence_keys``), the
``unsupported_response_sentence_keys`` and the relevance/utilization/completeness scores, so
ragmeter's grounding of the same response (``ragmeter datasets import ragbench``, then
``--target replay:``) can be compared with them.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from ragmeter.datasets.corpus import Document, corpus_spec, tag_cases
from ragmeter.datasets.problems import DatasetError, Problem
from ragmeter.datasets.rows import hub_rows, read_rows
from ragmeter.models import Case

REPO = "rungalileo/ragbench"
SUBSETS = (
    "covidqa", "cuad", "delucionqa", "emanual", "expertqa", "finqa", "hagrid", "hotpotqa",
    "msmarco", "pubmedqa", "tatqa", "techqa",
)  # fmt: skip
_KEY = re.compile(r"^(\d+)")
_SCORES = ("relevance_score", "utilization_score", "completeness_score")
_LABELS = (
    "adherence_score",
    "unsupported_response_sentence_keys",
    "all_relevant_sentence_keys",
    "all_utilized_sentence_keys",
    "response_sentences",
    "generation_model_name",
    "annotating_model_name",
    *_SCORES,
)


def ragbench_rows(argument: str) -> list[dict[str, Any]]:
    """Local rows when ``argument`` is a path, else the hub's test split of that subset."""
    if argument and (Path(argument).exists() or "/" in argument or "." in argument):
        return read_rows(Path(argument))
    subsets = [argument] if argument else list(SUBSETS)
    unknown = [s for s in subsets if s not in SUBSETS]
    if unknown:
        raise DatasetError(
            [
                Problem(
                    f"ragbench:{unknown[0]}",
                    None,
                    None,
                    f"no such RAGBench subset (subsets: {', '.join(SUBSETS)}); or give a local "
                    "file: --dataset ragbench:/path/to/test.parquet",
                )
            ]
        )
    return [
        row
        for subset in subsets
        for row in hub_rows(
            f"ragbench:{subset}", REPO, subset, "test", "ragbench:/path/to/test-00000.parquet"
        )
    ]


def _doc_index(key: str) -> int | None:
    match = _KEY.match(key)
    return int(match.group(1)) if match else None


def _case_id(row: dict[str, Any], number: int, repeated: set[str]) -> str:
    """The row's id (prefixed by its subset when it lacks it); RAGBench holds each question
    twice, answered by two generation models, so a repeated id gets ``@MODEL``."""
    raw = str(row.get("id", number))
    subset = str(row.get("dataset_name") or "").removesuffix("_test").removesuffix("_train")
    case_id = raw if not subset or raw.startswith(subset) else f"{subset}-{raw}"
    model = row.get("generation_model_name")
    return f"{case_id}@{model}" if raw in repeated and model else case_id


def ragbench_mapped(rows: list[dict[str, Any]], source: str) -> tuple[list[Case], list[Document]]:
    cases: list[Case] = []
    documents: list[Document] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    bases: set[str] = set()
    counts = Counter(str(row.get("id")) for row in rows)
    repeated = {key for key, count in counts.items() if count > 1}
    for number, row in enumerate(rows, start=1):
        case_id = _case_id(row, number, repeated)
        if case_id in seen:
            problems.append(Problem(source, None, f"row {number}.id", "duplicate id", case_id))
            continue
        seen.add(case_id)
        texts = [str(t) for t in row.get("documents") or []]
        base = case_id.partition("@")[0]  # both answers of a question share its documents
        doc_ids = [f"{base}/d{i}" for i in range(len(texts))]
        if base not in bases:
            bases.add(base)
            documents += [Document(d, d, t) for d, t in zip(doc_ids, texts, strict=True)]
        relevant = {_doc_index(k) for k in row.get("all_relevant_sentence_keys") or []}
        used = {_doc_index(k) for k in row.get("all_utilized_sentence_keys") or []}
        gold = [
            {"doc_id": d, "grade": 3 if i in used else 2}
            for i, d in enumerate(doc_ids)
            if i in relevant
        ]
        labels = {k: row.get(k) for k in _LABELS if k in row}
        labels["sentence_support"] = [
            {
                "response_sentence_key": s.get("response_sentence_key"),
                "fully_supported": s.get("fully_supported"),
                "supporting_sentence_keys": s.get("supporting_sentence_keys") or [],
            }
            for s in row.get("sentence_support_information") or []
            if isinstance(s, dict)
        ]
        labels["response"] = row.get("response")
        response = str(row.get("response") or "").strip()
        adherent = row.get("adherence_score") is True
        subset = str(row.get("dataset_name") or "ragbench").removesuffix("_test")
        cases.append(
            Case(
                case_id=case_id,
                question=row.get("question"),
                # the row's response is a reference only when GPT-4 found it fully supported
                reference_answer=response if adherent and response else None,
                gold_passages=gold,
                category=subset,
                dataset="ragbench",
                metadata={
                    "question_id": str(row.get("id")),
                    "ragbench": labels,
                    "documents_sentences": row.get("documents_sentences") or [],
                },
            )
        )
    if problems:
        raise DatasetError(problems)
    return cases, documents


def load_ragbench(argument: str) -> list[Case]:
    cases, _ = ragbench_mapped(ragbench_rows(argument), argument or "ragbench")
    return tag_cases(cases, corpus_spec("ragbench", argument))


def ragbench_corpus(argument: str) -> list[Document]:
    return ragbench_mapped(ragbench_rows(argument), argument or "ragbench")[1]


def ragbench_responses(cases: list[Case]) -> list[dict[str, Any]]:
    """The rows' own responses as replay lines (``--target replay:``): the answer with every
    document of the row retrieved, in order."""
    lines: list[dict[str, Any]] = []
    for case in cases:
        labels = case.metadata.get("ragbench", {})
        answer = labels.get("response") if isinstance(labels, dict) else None
        if not isinstance(answer, str):
            continue
        sentences = case.metadata.get("documents_sentences") or []
        retrieved = [
            {
                "id": f"{case.case_id.partition('@')[0]}/d{i}",
                "doc_id": f"{case.case_id.partition('@')[0]}/d{i}",
                "rank": i + 1,
                "text": " ".join(str(pair[1]) for pair in doc if len(pair) > 1),
            }
            for i, doc in enumerate(sentences)
        ]
        lines.append(
            {"case_id": case.case_id, "response": {"answer": answer, "retrieved": retrieved}}
        )
    return lines

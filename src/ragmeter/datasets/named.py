"""Seed 002's named datasets as ragmeter cases: ``squad_v2``, ``hotpotqa``, ``msmarco``,
``qasper`` and ``golden`` (``ragbench`` is in :mod:`ragmeter.datasets.ragbench`).

``NAME:PATH`` reads a local file (or folder) in the dataset's native format, the rows the hub
serves or the original release's JSON; a bare ``NAME`` loads through the ``datasets`` library
(:func:`ragmeter.datasets.rows.hub_rows`). Every case keeps the source's own labels under
``metadata`` and is tagged with its corpus (the passages of the rows), so the reference
pipeline answers over them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragmeter.datasets.corpus import Document, corpus_spec, tag_cases
from ragmeter.datasets.problems import DatasetError, Problem
from ragmeter.datasets.rows import hub_rows, read_rows
from ragmeter.models import Case

RowMapper = Callable[[list[dict[str, Any]], str], tuple[list[Case], list[Document]]]

# name -> (hub repo, config, split, what the local file is)
HUB: dict[str, tuple[str, str | None, str, str]] = {
    "squad_v2": ("rajpurkar/squad_v2", None, "validation", "the SQuAD v2.0 JSON or HF rows"),
    "hotpotqa": ("hotpot_qa", "distractor", "validation", "HotpotQA JSON (original or HF rows)"),
    "msmarco": ("ms_marco", "v1.1", "validation", "MS MARCO v1.1 rows (JSON/JSONL/parquet)"),
    "qasper": ("allenai/qasper", None, "validation", "Qasper HF rows (JSON/JSONL/parquet)"),
}
GOLDEN_FILES = ("golden_qa.json", "golden.jsonl", "golden.yaml")


def _rows(name: str, argument: str, list_key: str | None = None) -> list[dict[str, Any]]:
    if argument:
        return read_rows(Path(argument), list_key=list_key)
    repo, config, split, _ = HUB[name]
    return hub_rows(name, repo, config, split, f"{name}:/path/to/file")


def _mapped(name: str, argument: str, mapper: RowMapper) -> tuple[list[Case], list[Document]]:
    return mapper(_rows(name, argument), argument or name)


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


# --- SQuAD v2 -----------------------------------------------------------------------------


def _squad_document(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """HF rows (id, title, context, question, answers{text, answer_start}) as the official
    SQuAD JSON, articles and paragraphs in first-seen order."""
    if len(rows) == 1 and isinstance(rows[0].get("data"), list):
        return rows[0]
    articles: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for row in rows:
        paragraphs = articles.setdefault(str(row.get("title", "")), {})
        answers = row.get("answers") or {}
        texts = answers.get("text", []) if isinstance(answers, dict) else answers
        paragraphs.setdefault(str(row.get("context", "")), []).append(
            {
                "id": row.get("id"),
                "question": row.get("question"),
                "answers": [{"text": t} for t in texts or []],
                "is_impossible": not texts,
            }
        )
    return {
        "data": [
            {"title": title, "paragraphs": [{"context": c, "qas": q} for c, q in paras.items()]}
            for title, paras in articles.items()
        ]
    }


def _squad(rows: list[dict[str, Any]], source: str) -> tuple[list[Case], list[Document]]:
    from ragmeter.datasets.squad import squad_cases

    cases, corpus = squad_cases(_squad_document(rows), source)
    documents = []
    for rel_path, markdown in corpus.items():
        title, _, text = markdown.partition("\n\n")
        documents.append(Document(rel_path.removesuffix(".md"), title.lstrip("# "), text.strip()))
    for case in cases:
        case.dataset = "squad_v2"
    return cases, documents


def load_squad_v2(argument: str) -> list[Case]:
    cases, _ = _mapped("squad_v2", argument, _squad)
    return tag_cases(cases, corpus_spec("squad_v2", argument))


def squad_v2_corpus(argument: str) -> list[Document]:
    return _mapped("squad_v2", argument, _squad)[1]


# --- HotpotQA -----------------------------------------------------------------------------


def _hotpot_context(row: dict[str, Any]) -> list[tuple[str, list[str]]]:
    context = row.get("context")
    if isinstance(context, dict):  # HF rows: {title: [...], sentences: [[...]]}
        return list(zip(context.get("title", []), context.get("sentences", []), strict=False))
    return [(str(item[0]), list(item[1])) for item in context or []]


def _hotpot_support(row: dict[str, Any]) -> list[tuple[str, int]]:
    facts = row.get("supporting_facts")
    if isinstance(facts, dict):
        return list(zip(facts.get("title", []), facts.get("sent_id", []), strict=False))
    return [(str(item[0]), int(item[1])) for item in facts or []]


def _hotpot(rows: list[dict[str, Any]], source: str) -> tuple[list[Case], list[Document]]:
    documents: dict[str, Document] = {}
    cases: list[Case] = []
    problems: list[Problem] = []
    for number, row in enumerate(rows, start=1):
        case_id = str(row.get("_id") or row.get("id") or f"hotpotqa-{number}")
        paragraphs = dict(_hotpot_context(row))
        for title, sentences in paragraphs.items():
            documents.setdefault(
                title, Document(title, title, " ".join(s.strip() for s in sentences))
            )
        support = _hotpot_support(row)
        titles = list(dict.fromkeys(title for title, _ in support))
        missing = [t for t in titles if t not in paragraphs]
        if missing:
            problems.append(
                Problem(
                    source,
                    None,
                    f"row {number}.supporting_facts",
                    f"title {missing[0]!r} is not in the row's context",
                    case_id,
                )
            )
            continue
        snippets = {
            t: [paragraphs[t][i].strip() for tt, i in support if tt == t and i < len(paragraphs[t])]
            for t in titles
        }
        answer = _text(row.get("answer"))
        passages = [{"doc_id": t, "grade": 3, "snippets": snippets[t]} for t in titles]
        cases.append(
            Case(
                case_id=case_id,
                question=row.get("question"),
                reference_answer=answer or None,
                gold_passages=passages,
                required_support_groups=[
                    {"name": t, "passages": [p]} for t, p in zip(titles, passages, strict=True)
                ],
                gold_facts=[{"fact": answer}] if answer else [],
                expected_yes_no={"yes": True, "no": False}.get(answer.lower()),
                category=row.get("type"),
                difficulty=row.get("level"),
                dataset="hotpotqa",
                metadata={"supporting_facts": [list(f) for f in support]},
            )
        )
    if problems:
        raise DatasetError(problems)
    return cases, list(documents.values())


def load_hotpotqa(argument: str) -> list[Case]:
    cases, _ = _mapped("hotpotqa", argument, _hotpot)
    return tag_cases(cases, corpus_spec("hotpotqa", argument))


def hotpotqa_corpus(argument: str) -> list[Document]:
    return _mapped("hotpotqa", argument, _hotpot)[1]


# --- MS MARCO -----------------------------------------------------------------------------

NO_ANSWER = "No Answer Present."


def _msmarco(rows: list[dict[str, Any]], source: str) -> tuple[list[Case], list[Document]]:
    documents: list[Document] = []
    cases: list[Case] = []
    for number, row in enumerate(rows, start=1):
        query_id = str(row.get("query_id", number))
        passages = row.get("passages") or {}
        texts = list(passages.get("passage_text", []))
        selected = list(passages.get("is_selected", []))
        urls = list(passages.get("url", []))
        doc_ids = [f"msmarco-{query_id}-p{i}" for i in range(len(texts))]
        documents += [
            Document(d, urls[i] if i < len(urls) else d, t)
            for i, (d, t) in enumerate(zip(doc_ids, texts, strict=True))
        ]
        answers = [a for a in row.get("answers") or [] if _text(a) and a != NO_ANSWER]
        well_formed = [a for a in row.get("wellFormedAnswers") or [] if _text(a)]
        gold = [
            {"doc_id": d, "grade": 3} for d, flag in zip(doc_ids, selected, strict=False) if flag
        ]
        reference = (well_formed or answers or [None])[0]
        cases.append(
            Case(
                case_id=f"msmarco-{query_id}",
                question=row.get("query"),
                reference_answer=reference,
                answerable=bool(answers),
                gold_passages=gold if answers else [],
                gold_facts=[{"fact": answers[0], "aliases": answers[1:]}] if answers else [],
                category=row.get("query_type") if answers else "unanswerable",
                query_type=row.get("query_type"),
                dataset="msmarco",
                metadata={"answers": row.get("answers") or [], "is_selected": selected},
            )
        )
    return cases, documents


def load_msmarco(argument: str) -> list[Case]:
    cases, _ = _mapped("msmarco", argument, _msmarco)
    return tag_cases(cases, corpus_spec("msmarco", argument))


def msmarco_corpus(argument: str) -> list[Document]:
    return _mapped("msmarco", argument, _msmarco)[1]


# --- Qasper -------------------------------------------------------------------------------


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _qasper_answer(answer: dict[str, Any]) -> tuple[bool, str | None, bool | None]:
    """(answerable, reference answer, yes/no) of one annotator's answer."""
    if answer.get("unanswerable"):
        return False, None, None
    yes_no = answer.get("yes_no")
    if isinstance(yes_no, bool):
        return True, "Yes" if yes_no else "No", yes_no
    free = _text(answer.get("free_form_answer"))
    spans = [s for s in answer.get("extractive_spans") or [] if _text(s)]
    return True, free or "; ".join(spans) or None, None


def _qasper(rows: list[dict[str, Any]], source: str) -> tuple[list[Case], list[Document]]:
    documents: list[Document] = []
    cases: list[Case] = []
    for paper in rows:
        paper_id = str(paper.get("id"))
        by_text: dict[str, str] = {}
        full = paper.get("full_text") or {}
        abstract = _text(paper.get("abstract"))
        sections = [("Abstract", [abstract] if abstract else [])]
        sections += list(
            zip(full.get("section_name", []), full.get("paragraphs", []), strict=False)
        )
        for s, (section, paragraphs) in enumerate(sections):
            for p, paragraph in enumerate(paragraphs or []):
                if not _text(paragraph):
                    continue
                doc_id = f"{paper_id}/s{s:02d}-p{p:02d}"
                title = f"{paper.get('title', paper_id)} > {section or 'Untitled'}"
                documents.append(Document(doc_id, title, paragraph.strip()))
                by_text.setdefault(_normal(paragraph), doc_id)
        qas = paper.get("qas") or {}
        for q, question in enumerate(qas.get("question", [])):
            annotations = (qas.get("answers") or [])[q].get("answer", [])
            first = annotations[0] if annotations else {}
            answerable, reference, yes_no = _qasper_answer(first)
            evidence = [e for e in first.get("evidence", []) if _normal(e) in by_text]
            gold = list(dict.fromkeys(by_text[_normal(e)] for e in evidence))
            cases.append(
                Case(
                    case_id=str(qas.get("question_id", [])[q]),
                    question=question,
                    reference_answer=reference,
                    answerable=answerable,
                    gold_passages=[{"doc_id": d, "grade": 3} for d in gold] if answerable else [],
                    gold_facts=[{"fact": reference}] if answerable and reference else [],
                    expected_yes_no=yes_no,
                    category="unanswerable"
                    if not answerable
                    else ("yes_no" if yes_no is not None else "factual"),
                    dataset="qasper",
                    metadata={
                        "paper_id": paper_id,
                        "answers": annotations,
                        "evidence_outside_text": [
                            e for e in first.get("evidence", []) if _normal(e) not in by_text
                        ],
                    },
                )
            )
    return cases, documents


def load_qasper(argument: str) -> list[Case]:
    cases, _ = _mapped("qasper", argument, _qasper)
    return tag_cases(cases, corpus_spec("qasper", argument))


def qasper_corpus(argument: str) -> list[Document]:
    return _mapped("qasper", argument, _qasper)[1]


# --- golden -------------------------------------------------------------------------------


def golden_path(argument: str) -> Path | None:
    """The golden file: the argument, ``$RAGMETER_GOLDEN``, or the first of
    :data:`GOLDEN_FILES` in the working folder."""
    if argument:
        return Path(argument)
    if os.environ.get("RAGMETER_GOLDEN"):
        return Path(os.environ["RAGMETER_GOLDEN"])
    return next((Path(name) for name in GOLDEN_FILES if Path(name).exists()), None)


def load_golden(argument: str) -> list[Case]:
    """A curated file of cases in ragmeter's schema: JSONL, YAML, or a JSON list (or a JSON
    object holding a ``cases``/``questions`` list)."""
    from ragmeter.datasets.jsondoc import json_records
    from ragmeter.datasets.native import build_cases, load_jsonl, load_yaml

    path = golden_path(argument)
    if path is None:
        raise DatasetError(
            [
                Problem(
                    "golden",
                    None,
                    None,
                    f"no golden file: give --dataset golden:/path/to/golden_qa.json, set "
                    f"RAGMETER_GOLDEN, or put one of {', '.join(GOLDEN_FILES)} in this folder",
                )
            ]
        )
    if not path.exists():
        raise DatasetError([Problem(str(path), None, None, "no such file or folder")])
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        cases = load_yaml(path)
    elif suffix in (".jsonl", ".ndjson"):
        cases = load_jsonl(path)
    else:
        problems: list[Problem] = []
        if suffix == ".json":  # each record with the line of its opening brace
            records = json_records(path, ("cases", "questions"))
        else:  # parquet: a row's number is its position
            records = list(enumerate(read_rows(path, list_key="cases"), start=1))
        objects = []
        for line, record in records:
            if isinstance(record, dict):
                objects.append((line, record))
            else:
                problems.append(Problem(str(path), line, None, "expected a JSON object for a case"))
        cases = build_cases(objects, str(path), "golden", problems)
        if problems:
            raise DatasetError(problems)
    for case in cases:
        case.dataset = case.dataset or "golden"
    return cases

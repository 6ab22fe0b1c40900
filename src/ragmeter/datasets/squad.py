"""SQuAD-format files (v1.1/v2.0 JSON) as a ragmeter task: a Markdown corpus (one document a
paragraph) that the reference pipeline can index, and the cases with their gold chunk.

    ragmeter datasets import-squad small.json OUT/
    ragmeter eval --dataset OUT/cases.jsonl --corpus OUT/corpus

Each question's gold passage is its paragraph (``doc_id`` = ``s{article}-p{paragraph}``, chunk
``doc_id#intro``); ``is_impossible`` questions become unanswerable cases without gold passages;
the first answer text is the reference answer and the others are kept as fact aliases.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragmeter.datasets.jsonl import inspect_value
from ragmeter.datasets.problems import DatasetError, Problem, _short, problems_from_validation
from ragmeter.datasets.rows import read_json_file
from ragmeter.models import Case

# case fields built from a SQuAD question -> the question's own key, for problems
_SQUAD_NAMES = {"case_id": "id"}


def _list(value: Any, where: str, problems: list[Problem], source: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append(Problem(source, None, where, f"must be a list (got {_short(value)})"))
        return []
    return value


def _object(value: Any, where: str, problems: list[Problem], source: str) -> bool:
    if not isinstance(value, dict):
        problems.append(Problem(source, None, where, f"must be an object (got {_short(value)})"))
        return False
    return True


def _answers(qa: dict[str, Any], where: str, problems: list[Problem], source: str) -> list[str]:
    texts: list[str] = []
    for n, answer in enumerate(_list(qa.get("answers"), f"{where}.answers", problems, source)):
        text = answer.get("text") if isinstance(answer, dict) else None
        if not isinstance(text, str):
            problems.append(Problem(source, None, f"{where}.answers.{n}.text", "must be a string"))
        elif text.strip():
            texts.append(text)
    return list(dict.fromkeys(texts))


def squad_cases(data: Any, source: str) -> tuple[list[Case], dict[str, str]]:
    """The cases and the corpus (relative path -> Markdown text) of a parsed SQuAD file.
    A malformed file is a :class:`DatasetError` naming each wrong field by its JSON path
    (``data.0.paragraphs.3.qas.1.question``)."""
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise DatasetError([Problem(source, None, "data", "not a SQuAD file (no 'data' list)")])
    problems: list[Problem] = []
    cases: list[Case] = []
    corpus: dict[str, str] = {}
    first: dict[str, str] = {}
    for a, article in enumerate(data["data"]):
        if not _object(article, f"data.{a}", problems, source):
            continue
        title = str(article.get("title", f"Article {a}")).replace("_", " ")
        paragraphs = _list(article.get("paragraphs"), f"data.{a}.paragraphs", problems, source)
        for p, paragraph in enumerate(paragraphs):
            where_p = f"data.{a}.paragraphs.{p}"
            if not _object(paragraph, where_p, problems, source):
                continue
            context = paragraph.get("context")
            if not isinstance(context, str):
                problems.append(Problem(source, None, f"{where_p}.context", "must be a string"))
                continue
            doc_id = f"s{a:03d}-p{p:03d}"
            corpus[f"{doc_id}.md"] = f"# {title} (paragraph {p})\n\n{context}\n"
            for q, qa in enumerate(_list(paragraph.get("qas"), f"{where_p}.qas", problems, source)):
                where = f"{where_p}.qas.{q}"
                if not _object(qa, where, problems, source):
                    continue
                answers = _answers(qa, where, problems, source)
                impossible = bool(qa.get("is_impossible")) or not answers
                raw_id = qa.get("id")
                case_id = str(raw_id) if isinstance(raw_id, str | int) else None
                if case_id is not None and case_id in first:
                    problems.append(
                        Problem(
                            source,
                            None,
                            f"{where}.id",
                            f"duplicate id (first at {first[case_id]})",
                            case_id,
                        )
                    )
                    continue
                try:
                    case = Case(
                        case_id=raw_id,
                        question=qa.get("question"),
                        reference_answer=None if impossible else answers[0],
                        answerable=not impossible,
                        category="unanswerable" if impossible else "factual",
                        gold_passages=[]
                        if impossible
                        else [
                            {
                                "doc_id": doc_id,
                                "chunk_id": f"{doc_id}#intro",
                                "rel_path": f"{doc_id}.md",
                                "grade": 3,
                            }
                        ],
                        gold_facts=[]
                        if impossible
                        else [{"fact": answers[0], "aliases": answers[1:]}],
                        tags=[title],
                        dataset=Path(source).stem,
                    )
                except ValidationError as exc:
                    problems += [
                        Problem(
                            source,
                            None,
                            f"{where}.{_SQUAD_NAMES.get(p.field or '', p.field)}",
                            p.message,
                            case_id,
                        )
                        for p in problems_from_validation(exc, source, None, case_id)
                    ]
                    continue
                if case_id is not None:
                    first[case_id] = where
                cases.append(case)
    if problems:
        raise DatasetError(problems)
    return cases, corpus


def import_squad(path: str | Path, out_dir: str | Path) -> tuple[Path, Path, int]:
    """Write ``OUT/corpus/*.md`` and ``OUT/cases.jsonl``; returns (cases file, corpus, count)."""
    path, out = Path(path), Path(out_dir)
    data = read_json_file(path)  # invalid JSON and a key given twice are problems
    unstorable = inspect_value(data)
    if unstorable:
        raise DatasetError([Problem(str(path), None, f.field, f.message) for f in unstorable])
    cases, corpus = squad_cases(data, str(path))
    corpus_dir = out / "corpus"
    corpus_dir.mkdir(parents=True, exist_ok=True)
    for name, text in corpus.items():
        (corpus_dir / name).write_text(text, encoding="utf-8")
    cases_file = out / "cases.jsonl"
    cases_file.write_text(
        "".join(case.model_dump_json(exclude_defaults=True) + "\n" for case in cases),
        encoding="utf-8",
    )
    return cases_file, corpus_dir, len(cases)

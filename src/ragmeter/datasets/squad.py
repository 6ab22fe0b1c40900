"""SQuAD-format files (v1.1/v2.0 JSON) as a ragmeter task: a Markdown corpus (one document a
paragraph) that the reference pipeline can index, and the cases with their gold chunk.

    ragmeter datasets import-squad small.json OUT/
    ragmeter eval --dataset OUT/cases.jsonl --corpus OUT/corpus

Each question's gold passage is its paragraph (``doc_id`` = ``s{article}-p{paragraph}``, chunk
``doc_id#intro``); ``is_impossible`` questions become unanswerable cases without gold passages;
the first answer text is the reference answer and the others are kept as fact aliases.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragmeter.datasets.problems import DatasetError, Problem
from ragmeter.models import Case


def squad_cases(data: dict[str, Any], source: str) -> tuple[list[Case], dict[str, str]]:
    """The cases and the corpus (relative path -> Markdown text) of a parsed SQuAD file."""
    if not isinstance(data.get("data"), list):
        raise DatasetError([Problem(source, None, "data", "not a SQuAD file (no 'data' list)")])
    cases: list[Case] = []
    corpus: dict[str, str] = {}
    for a, article in enumerate(data["data"]):
        title = str(article.get("title", f"Article {a}")).replace("_", " ")
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            doc_id = f"s{a:03d}-p{p:03d}"
            corpus[f"{doc_id}.md"] = f"# {title} (paragraph {p})\n\n{paragraph['context']}\n"
            for qa in paragraph.get("qas", []):
                answers = list(dict.fromkeys(x["text"] for x in qa.get("answers", [])))
                impossible = bool(qa.get("is_impossible")) or not answers
                cases.append(
                    Case(
                        case_id=str(qa["id"]),
                        question=qa["question"],
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
                )
    return cases, corpus


def import_squad(path: str | Path, out_dir: str | Path) -> tuple[Path, Path, int]:
    """Write ``OUT/corpus/*.md`` and ``OUT/cases.jsonl``; returns (cases file, corpus, count)."""
    path, out = Path(path), Path(out_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DatasetError(
            [Problem(str(path), None, None, f"cannot read SQuAD JSON: {exc}")]
        ) from exc
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

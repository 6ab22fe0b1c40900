"""Retrieval test collections as cases + corpus: BEIR folders, TREC topics/qrels/documents and
the Cranfield files. Each query with judgments is a case whose gold passages are its judged
documents (doc level, with their grades); the collection's documents are the corpus the
reference pipeline answers over (``metadata["ragmeter_corpus"]``).

Spec forms (docs/datasets.md):

- ``beir:DIR``: ``corpus.jsonl`` (``_id, title, text``), ``queries.jsonl`` (``_id, text``),
  ``qrels/test.tsv`` (else every ``qrels/*.tsv``; ``query-id, corpus-id, score``);
- ``trec:DIR`` (files named ``topics*``, ``qrels*`` and ``docs``/``collection*``) or
  ``trec:topics=FILE,qrels=FILE,docs=PATH``; topics as TREC ``<top>`` SGML, ``ID<TAB>TEXT`` or
  JSONL; documents as TREC ``<DOC>`` SGML, JSONL or ``ID<TAB>TEXT``, a file or a folder;
- ``cranfield:DIR``: ``cran.all.1400``, ``cran.qry``, ``cranqrel``.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

from ragmeter.datasets.corpus import Document, corpus_spec, tag_cases
from ragmeter.datasets.jsonl import read_text
from ragmeter.datasets.problems import DatasetError, Problem
from ragmeter.datasets.rows import read_rows
from ragmeter.datasets.trec import read_qrels, write_qrels
from ragmeter.models import Case

# Cranfield grades (1 = complete answer ... 4 = minimum interest, -1 = not relevant) -> 0-3
CRANFIELD_GRADES = {1: 3, 2: 2, 3: 1, 4: 1, 5: 0, -1: 0}


def _problem(where: Path | str, message: str, line: int | None = None) -> DatasetError:
    return DatasetError([Problem(str(where), line, None, message)])


def _cases(
    queries: dict[str, str], qrels: dict[str, dict[str, int]], dataset: str, source: str,
    grade_map: dict[int, int] | None = None,
) -> list[Case]:  # fmt: skip
    """One case a judged query; a qrels query with no query text is a problem."""
    missing = [q for q in qrels if q not in queries]
    if missing:
        raise _problem(source, f"qrels name queries that are not in the queries: {missing[:5]}")
    cases = []
    for query_id, text in queries.items():
        if query_id not in qrels:
            continue
        judged = qrels[query_id]
        grades = {d: (grade_map or {}).get(g, min(max(g, 0), 3)) for d, g in judged.items()}
        cases.append(
            Case(
                case_id=query_id,
                question=text,
                gold_passages=[{"doc_id": d, "grade": g} for d, g in grades.items()],
                answerable=any(g > 0 for g in grades.values()),
                category="retrieval",
                dataset=dataset,
                metadata={"qrels": judged},
            )
        )
    return cases


# --- BEIR ---------------------------------------------------------------------------------


def _beir_qrels(folder: Path) -> dict[str, dict[str, int]]:
    qrels_dir = folder / "qrels"
    files = [qrels_dir / "test.tsv"] if (qrels_dir / "test.tsv").is_file() else []
    files = files or sorted(qrels_dir.glob("*.tsv"))
    if not files:
        raise _problem(qrels_dir, "no qrels: a BEIR folder needs qrels/test.tsv (or qrels/*.tsv)")
    qrels: dict[str, dict[str, int]] = {}
    for file in files:
        problems: list[Problem] = []
        text = read_text(file, problems)
        if text is None:
            raise DatasetError(problems)
        for number, row in enumerate(csv.reader(io.StringIO(text), delimiter="\t"), start=1):
            if not row or (number == 1 and not row[-1].lstrip("-").isdigit()):
                continue  # blank, or the header (query-id corpus-id score)
            if len(row) != 3:
                raise _problem(
                    file, f"expected 3 columns (query-id corpus-id score), got {len(row)}", number
                )
            try:
                qrels.setdefault(row[0], {})[row[1]] = int(row[2])
            except ValueError:
                raise _problem(file, f"score is not an integer: {row[2]!r}", number) from None
    return qrels


def _id_of(row: dict[str, Any], file: Path, number: int) -> str:
    for key in ("_id", "id", "docno", "doc_id", "query_id"):
        if isinstance(row.get(key), str | int) and str(row[key]).strip():
            return str(row[key])
    raise _problem(file, "row has no _id", number)


def beir_corpus(argument: str) -> list[Document]:
    folder = Path(argument)
    file = folder / "corpus.jsonl"
    return [
        Document(_id_of(row, file, n), str(row.get("title") or ""), str(row.get("text") or ""))
        for n, row in enumerate(read_rows(file), start=1)
    ]


def load_beir(argument: str) -> list[Case]:
    folder = Path(argument)
    if not (folder / "queries.jsonl").is_file() or not (folder / "corpus.jsonl").is_file():
        raise _problem(folder, "not a BEIR folder: it needs corpus.jsonl, queries.jsonl and qrels/")
    file = folder / "queries.jsonl"
    queries = {_id_of(r, file, n): str(r.get("text", "")) for n, r in enumerate(read_rows(file), 1)}
    cases = _cases(queries, _beir_qrels(folder), "beir", str(file))
    return tag_cases(cases, corpus_spec("beir", argument))


def write_beir(folder: Path, cases: list[Case], documents: list[Document]) -> None:
    """``cases`` and ``documents`` as a BEIR folder (qrels from the doc-level gold passages)."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for d in documents:
            out.write(json.dumps({"_id": d.doc_id, "title": d.title, "text": d.text}) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as out:
        for case in cases:
            out.write(json.dumps({"_id": case.case_id, "text": case.question}) + "\n")
    with (folder / "qrels" / "test.tsv").open("w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for case in cases:
            for passage in case.gold_passages:
                out.write(f"{case.case_id}\t{passage.doc_id}\t{passage.grade}\n")


# --- TREC ---------------------------------------------------------------------------------

_TOP = re.compile(r"<top>(.*?)</top>", re.S | re.I)
_DOC = re.compile(r"<DOC>(.*?)</DOC>", re.S | re.I)
_DOCNO = re.compile(r"<DOCNO>\s*(.*?)\s*</DOCNO>", re.S | re.I)
_FIELD = re.compile(r"<(num|title|desc|narr)>(.*?)(?=<(?:num|title|desc|narr)>|$)", re.S | re.I)
_TAGS = re.compile(r"<[^>]+>")


def trec_parts(argument: str) -> dict[str, Path]:
    """The topics, qrels and docs paths of a ``trec:`` argument (a folder or key=value list)."""
    if "=" in argument:
        parts: dict[str, Path] = {}
        for item in argument.split(","):
            key, _, value = item.partition("=")
            if key.strip() not in ("topics", "qrels", "docs"):
                raise _problem(
                    f"trec:{argument}", f"unknown part {key.strip()!r}: use topics=, qrels=, docs="
                )
            parts[key.strip()] = Path(value.strip())
    else:
        folder = Path(argument)
        if not folder.is_dir():
            raise _problem(argument, "trec: needs a folder or topics=FILE,qrels=FILE,docs=PATH")
        names = sorted(folder.iterdir())
        found = {
            "topics": next((p for p in names if p.name.lower().startswith("topics")), None),
            "qrels": next((p for p in names if p.name.lower().startswith("qrels")), None),
            "docs": next(
                (p for p in names if p.name.lower().startswith(("docs", "collection"))), None
            ),
        }
        parts = {k: v for k, v in found.items() if v is not None}
    missing = [k for k in ("topics", "qrels", "docs") if k not in parts]
    if missing:
        raise _problem(f"trec:{argument}", f"missing {', '.join(missing)} (docs/datasets.md: TREC)")
    for key, path in parts.items():
        if not path.exists():
            raise _problem(path, f"the {key} file does not exist")
    return parts


def read_topics(path: Path) -> dict[str, str]:
    """Topic id -> query text (the title; the description when there is no title)."""
    if path.suffix.lower() in (".jsonl", ".json"):
        return {
            _id_of(r, path, n): str(r.get("text") or r.get("title") or "")
            for n, r in enumerate(read_rows(path), 1)
        }
    problems: list[Problem] = []
    text = read_text(path, problems)
    if text is None:
        raise DatasetError(problems)
    topics: dict[str, str] = {}
    if _TOP.search(text):
        for block in _TOP.findall(text):
            fields = {k.lower(): _TAGS.sub(" ", v).strip() for k, v in _FIELD.findall(block)}
            topic = re.sub(r"^Number:\s*", "", fields.get("num", ""), flags=re.I).strip()
            query = fields.get("title") or re.sub(r"^Description:\s*", "", fields.get("desc", ""))
            topics[topic] = " ".join(query.replace("Topic:", " ").split())
        return topics
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            topic, sep, query = line.partition("\t")
            if not sep:
                raise _problem(path, "expected TOPIC<TAB>QUERY (or TREC <top> blocks)", number)
            topics[topic.strip()] = query.strip()
    return topics


def _trec_documents(path: Path) -> list[Document]:
    if path.is_dir():
        return [
            d for f in sorted(p for p in path.rglob("*") if p.is_file()) for d in _trec_documents(f)
        ]
    if path.suffix.lower() in (".jsonl", ".json"):
        return [
            Document(
                _id_of(r, path, n),
                str(r.get("title") or ""),
                str(r.get("text") or r.get("contents") or ""),
            )
            for n, r in enumerate(read_rows(path), start=1)
        ]
    problems: list[Problem] = []
    text = read_text(path, problems)
    if text is None:
        raise DatasetError(problems)
    if _DOC.search(text):
        documents = []
        for block in _DOC.findall(text):
            number = _DOCNO.search(block)
            if number is None:
                raise _problem(path, "a <DOC> without <DOCNO>")
            title = re.search(r"<(?:HEAD|TITLE)>(.*?)</(?:HEAD|TITLE)>", block, re.S | re.I)
            body = _TAGS.sub(" ", _DOCNO.sub(" ", block))
            documents.append(
                Document(
                    number.group(1), title.group(1).strip() if title else "", " ".join(body.split())
                )
            )
        return documents
    return [
        Document(doc.strip(), "", body.strip())
        for doc, _, body in (line.partition("\t") for line in text.splitlines() if line.strip())
    ]


def trec_corpus(argument: str) -> list[Document]:
    return _trec_documents(trec_parts(argument)["docs"])


def load_trec(argument: str) -> list[Case]:
    parts = trec_parts(argument)
    cases = _cases(
        read_topics(parts["topics"]), read_qrels(parts["qrels"]), "trec", str(parts["qrels"])
    )
    spec = argument if "=" in argument else str(Path(argument).resolve())
    if "=" in argument:
        spec = ",".join(f"{k}={p.resolve()}" for k, p in parts.items())
    return tag_cases(cases, f"trec:{spec}")


def write_trec(folder: Path, cases: list[Case], documents: list[Document]) -> None:
    """A TREC folder: ``topics.txt`` (<top> blocks), ``qrels.txt`` and ``docs.trec``."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "topics.txt").open("w", encoding="utf-8") as out:
        for case in cases:
            out.write(f"<top>\n<num> Number: {case.case_id}\n<title> {case.question}\n</top>\n\n")
    write_qrels(
        folder / "qrels.txt",
        {c.case_id: {str(p.doc_id): p.grade for p in c.gold_passages} for c in cases},
    )
    with (folder / "docs.trec").open("w", encoding="utf-8") as out:
        for d in documents:
            out.write(
                f"<DOC>\n<DOCNO>{d.doc_id}</DOCNO>\n<TITLE>{d.title}</TITLE>\n<TEXT>\n{d.text}\n</TEXT>\n</DOC>\n"
            )


# --- Cranfield ----------------------------------------------------------------------------


def _cranfield_records(path: Path) -> list[dict[str, str]]:
    """``.I N`` records with their ``.T/.A/.B/.W`` fields."""
    problems: list[Problem] = []
    text = read_text(path, problems)
    if text is None:
        raise DatasetError(problems)
    records: list[dict[str, str]] = []
    field: str | None = None
    for line in text.splitlines():
        if line.startswith(".I"):
            records.append({"I": line[2:].strip()})
            field = None
        elif re.fullmatch(r"\.[TABW]\s*", line):
            field = line[1]
        elif records and field is not None:
            records[-1][field] = f"{records[-1].get(field, '')} {line.strip()}".strip()
    if not records:
        raise _problem(path, "no .I records: not a Cranfield file")
    return records


def _cranfield_files(argument: str) -> tuple[Path, Path, Path]:
    folder = Path(argument)
    files = (folder / "cran.all.1400", folder / "cran.qry", folder / "cranqrel")
    for file in files:
        if not file.is_file():
            raise _problem(
                file, "missing: a Cranfield folder holds cran.all.1400, cran.qry, cranqrel"
            )
    return files


def cranfield_corpus(argument: str) -> list[Document]:
    docs, _, _ = _cranfield_files(argument)
    return [Document(r["I"], r.get("T", ""), r.get("W", "")) for r in _cranfield_records(docs)]


def load_cranfield(argument: str) -> list[Case]:
    """Queries are numbered by their order in ``cran.qry`` (as ``cranqrel`` numbers them), not
    by their ``.I``; the ``.I`` is kept as ``metadata["qry_id"]``."""
    _, queries_file, qrels_file = _cranfield_files(argument)
    records = _cranfield_records(queries_file)
    queries = {str(n): r.get("W", "") for n, r in enumerate(records, start=1)}
    cases = _cases(
        queries, read_qrels_lenient(qrels_file), "cranfield", str(qrels_file), CRANFIELD_GRADES
    )
    for case in cases:
        case.metadata["qry_id"] = records[int(case.case_id) - 1]["I"]
    return tag_cases(cases, corpus_spec("cranfield", argument))


def read_qrels_lenient(path: Path) -> dict[str, dict[str, int]]:
    """Cranfield's three-column qrels (``QUERY DOC GRADE``) or TREC's four columns."""
    problems: list[Problem] = []
    text = read_text(path, problems)
    if text is None:
        raise DatasetError(problems)
    if all(len(line.split()) == 4 for line in text.splitlines() if line.strip()):
        return read_qrels(path)
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 3 or not parts[2].lstrip("-").isdigit():
            raise _problem(path, "expected QUERY DOC GRADE", number)
        qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return qrels

"""RAGAS evaluation datasets and deepeval test cases, both directions.

Import (``--dataset ragas:FILE``, ``--dataset deepeval:FILE``; ``ragmeter datasets import
ragas|deepeval FILE OUT/`` also writes the recorded answers for ``--target replay:``):

- RAGAS (``EvaluationDataset`` rows; the 0.1 names in brackets): ``user_input`` (``question``),
  ``retrieved_contexts`` (``contexts``), ``response`` (``answer``), ``reference``
  (``ground_truth``), ``reference_contexts``;
- deepeval (``LLMTestCase`` / a saved ``EvaluationDataset``): ``input``, ``actual_output``,
  ``expected_output``, ``retrieval_context``, ``context``.

The reference (ideal) contexts become gold passages and the retrieved contexts retrieved chunks,
both named by the text's hash (``ctx-<sha1[:12]>``), so a retrieved context that is a reference
context counts as found. Files: JSON (a list, or an object with ``samples``/``test_cases``/
``goldens``), JSONL, parquet or CSV (list cells as JSON or Python lists).

Export (:func:`ragas_rows`, :func:`deepeval_rows`, :func:`export_interop`) turns a stored run's
cases and responses into the same rows, so import -> export -> import gives the same cases.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import json
from pathlib import Path
from typing import Any

from ragmeter.datasets.jsonl import read_text
from ragmeter.datasets.problems import DatasetError, Problem
from ragmeter.datasets.rows import read_rows
from ragmeter.models import Case, CaseResult, Response

# format -> our role -> the accepted column names, preferred (exported) name first
FIELDS: dict[str, dict[str, tuple[str, ...]]] = {
    "ragas": {
        "question": ("user_input", "question"),
        "answer": ("response", "answer"),
        "reference": ("reference", "ground_truth", "ground_truths"),
        "retrieved": ("retrieved_contexts", "contexts"),
        "gold": ("reference_contexts",),
    },
    "deepeval": {
        "question": ("input",),
        "answer": ("actual_output",),
        "reference": ("expected_output",),
        "retrieved": ("retrieval_context",),
        "gold": ("context",),
    },
}
_LIST_KEYS = ("samples", "test_cases", "goldens", "data")


def context_id(text: str) -> str:
    return "ctx-" + hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _csv_rows(path: Path) -> list[dict[str, Any]]:
    problems: list[Problem] = []
    text = read_text(path, problems)
    if text is None:
        raise DatasetError(problems)
    rows: list[dict[str, Any]] = []
    for row in csv.DictReader(io.StringIO(text, newline="")):
        parsed: dict[str, Any] = {}
        for key, cell in row.items():
            value: Any = cell
            if isinstance(cell, str) and cell.startswith("["):
                try:
                    value = json.loads(cell)
                except json.JSONDecodeError:
                    try:
                        value = ast.literal_eval(cell)
                    except (ValueError, SyntaxError):
                        value = cell
            parsed[key] = value
        rows.append(parsed)
    return rows


def interop_rows(path: Path) -> list[dict[str, Any]]:
    if path.suffix.lower() == ".csv":
        return _csv_rows(path)
    rows = read_rows(path)
    if len(rows) == 1:
        for key in _LIST_KEYS:
            if isinstance(rows[0].get(key), list):
                return [r for r in rows[0][key] if isinstance(r, dict)]
    return rows


def _field(row: dict[str, Any], names: tuple[str, ...]) -> tuple[str | None, Any]:
    for name in names:
        if name in row and row[name] is not None:
            return name, row[name]
    return None, None


def _texts(value: Any, where: str, problems: list[Problem], case_id: str, field: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(Problem(where, None, field, "must be a list of strings", case_id))
        return []
    return list(value)


def import_rows(fmt: str, argument: str) -> tuple[list[Case], list[dict[str, Any]]]:
    """The cases and the replay lines (``{"case_id", "response"}``) of a RAGAS or deepeval
    file; every problem names the file, the row and the field."""
    path = Path(argument)
    names = FIELDS[fmt]
    problems: list[Problem] = []
    cases: list[Case] = []
    lines: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, row in enumerate(interop_rows(path), start=1):
        where = f"{path} (row {number})"
        raw_id = row.get("case_id") or row.get("id") or row.get("name")
        case_id = str(raw_id) if raw_id else f"{path.stem}-{number}"
        _, question = _field(row, names["question"])
        if not isinstance(question, str) or not question.strip():
            problems.append(Problem(where, None, names["question"][0], "missing or empty", case_id))
            continue
        if case_id in seen:
            problems.append(Problem(where, None, "id", "duplicate case id", case_id))
            continue
        seen.add(case_id)
        _, reference = _field(row, names["reference"])
        if isinstance(reference, list):  # ragas 0.1's ground_truths
            reference = reference[0] if reference else None
        gold = _texts(_field(row, names["gold"])[1], where, problems, case_id, names["gold"][0])
        retrieved = _texts(
            _field(row, names["retrieved"])[1], where, problems, case_id, names["retrieved"][0]
        )
        known = {n for group in names.values() for n in group} | {"case_id", "id"}
        extra = {k: v for k, v in row.items() if k not in known}
        metadata: dict[str, Any] = {"format": fmt}
        if gold:
            metadata["reference_contexts"] = gold
        if extra:
            metadata["source_fields"] = extra
        cases.append(
            Case(
                case_id=case_id,
                question=question,
                reference_answer=reference if isinstance(reference, str) else None,
                gold_passages=[{"doc_id": context_id(t), "grade": 1} for t in dict.fromkeys(gold)],
                dataset=path.stem,
                metadata=metadata,
            )
        )
        _, answer = _field(row, names["answer"])
        if isinstance(answer, str):
            response = {
                "answer": answer,
                "retrieved": [
                    {"id": context_id(t), "doc_id": context_id(t), "rank": i, "text": t}
                    for i, t in enumerate(retrieved, start=1)
                ],
            }
            lines.append({"case_id": case_id, "response": response})
    if problems:
        raise DatasetError(problems)
    return cases, lines


def load_ragas(argument: str) -> list[Case]:
    return import_rows("ragas", argument)[0]


def load_deepeval(argument: str) -> list[Case]:
    return import_rows("deepeval", argument)[0]


def _reference_contexts(case: Case, response: Response | None) -> list[str]:
    """The case's gold contexts as texts. Imported ones are kept; otherwise a gold passage the
    run retrieved is written as that chunk's text, which is what a re-import matches the
    retrieved texts by (a snippet would never match, and every hit would read as a miss), and
    one it did not retrieve as its snippets."""
    stored = case.metadata.get("reference_contexts")
    if isinstance(stored, list):
        return [str(t) for t in stored]
    from ragmeter.metrics.passages import all_passages, case_level
    from ragmeter.metrics.retrieval import matches

    passages = all_passages(case)
    level = case_level(passages)
    ranked = sorted(
        (response.retrieved if response is not None else []),
        key=lambda c: c.rank if c.rank is not None else 1e9,
    )
    texts: list[str] = []
    for passage in passages:
        found = next((c.text for c in ranked if c.text and matches(passage, c, level)), None)
        texts += [found] if found is not None else list(passage.snippets)
    return list(dict.fromkeys(texts))


def _rows(fmt: str, cases: list[Case], results: list[CaseResult]) -> list[dict[str, Any]]:
    by_id = {r.case_id: r for r in results}
    names = FIELDS[fmt]
    rows: list[dict[str, Any]] = []
    for case in cases:
        result = by_id.get(case.case_id)
        response = result.response if result is not None else None
        row: dict[str, Any] = {"id": case.case_id, names["question"][0]: case.question}
        if response is not None:
            row[names["answer"][0]] = response.answer
            ranked = sorted(response.retrieved, key=lambda c: c.rank if c.rank is not None else 1e9)
            row[names["retrieved"][0]] = [c.text for c in ranked if c.text is not None]
        if case.reference_answer is not None:
            row[names["reference"][0]] = case.reference_answer
        gold = _reference_contexts(case, response)
        if gold:
            row[names["gold"][0]] = gold
        extra = case.metadata.get("source_fields")
        if isinstance(extra, dict):
            row.update({k: v for k, v in extra.items() if k not in row})
        rows.append(row)
    return rows


def ragas_rows(cases: list[Case], results: list[CaseResult]) -> list[dict[str, Any]]:
    """A run as RAGAS ``EvaluationDataset`` rows (``EvaluationDataset.from_list`` reads them)."""
    return _rows("ragas", cases, results)


def deepeval_rows(cases: list[Case], results: list[CaseResult]) -> list[dict[str, Any]]:
    """A run as deepeval test cases (``LLMTestCase(**row)`` after dropping ``id``)."""
    return _rows("deepeval", cases, results)


def export_interop(path: Path, fmt: str, cases: list[Case], results: list[CaseResult]) -> int:
    """Write the run as JSONL rows of ``fmt`` (``ragas`` or ``deepeval``); returns the count."""
    rows = ragas_rows(cases, results) if fmt == "ragas" else deepeval_rows(cases, results)
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return len(rows)

"""TREC qrels and run files: read (errors name file:line) and write.

- qrels: ``QUERY ITERATION DOC GRADE`` per line (the iteration column is ignored);
- run: ``QUERY Q0 DOC RANK SCORE TAG`` per line; trec_eval ignores the rank column and orders by
  score (then doc id), and a document listed twice for one query is an error.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path

from ragmeter.datasets.jsonl import read_text, split_lines
from ragmeter.datasets.problems import DatasetError, Problem


def _lines(path: Path) -> Iterable[tuple[int, list[str]]]:
    """The whitespace-separated columns of each non-blank line; an unreadable file is a
    :class:`DatasetError`. Lines end at ``\n`` only."""
    problems: list[Problem] = []
    text = read_text(path, problems)
    if text is None:
        raise DatasetError(problems)
    for number, line in enumerate(split_lines(text), start=1):
        parts = line.split()
        if parts:
            yield number, parts


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    path = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    first: dict[tuple[str, str], int] = {}
    problems: list[Problem] = []
    for number, parts in _lines(path):
        if len(parts) != 4:
            problems.append(
                Problem(
                    str(path),
                    number,
                    None,
                    f"expected 4 columns (query iter doc grade), got {len(parts)}",
                )
            )
            continue
        query, _, doc, grade = parts
        try:
            value = int(grade)
        except ValueError:
            problems.append(Problem(str(path), number, "grade", f"not an integer: {grade!r}"))
            continue
        if (query, doc) in first:
            problems.append(
                Problem(
                    str(path),
                    number,
                    "doc",
                    f"document {doc!r} judged twice for query {query!r} "
                    f"(first at line {first[query, doc]})",
                )
            )
            continue
        first[query, doc] = number
        qrels.setdefault(query, {})[doc] = value
    if problems:
        raise DatasetError(problems)
    return qrels


def read_run(path: str | Path) -> dict[str, dict[str, float]]:
    path = Path(path)
    run: dict[str, dict[str, float]] = {}
    first: dict[tuple[str, str], int] = {}
    problems: list[Problem] = []
    for number, parts in _lines(path):
        if len(parts) != 6:
            problems.append(
                Problem(
                    str(path),
                    number,
                    None,
                    f"expected 6 columns (query Q0 doc rank score tag), got {len(parts)}",
                )
            )
            continue
        query, _, doc, _, score, _ = parts
        try:
            value = float(score)
        except ValueError:
            problems.append(Problem(str(path), number, "score", f"not a number: {score!r}"))
            continue
        if not math.isfinite(value):
            problems.append(Problem(str(path), number, "score", f"not a finite number: {score!r}"))
            continue
        if (query, doc) in first:
            problems.append(
                Problem(
                    str(path),
                    number,
                    "doc",
                    f"document {doc!r} listed twice for query {query!r} "
                    f"(first at line {first[query, doc]})",
                )
            )
            continue
        first[query, doc] = number
        run.setdefault(query, {})[doc] = value
    if problems:
        raise DatasetError(problems)
    return run


def write_qrels(path: str | Path, qrels: Mapping[str, Mapping[str, int]]) -> None:
    with Path(path).open("w", encoding="utf-8") as handle:
        for query, docs in qrels.items():
            for doc, grade in docs.items():
                handle.write(f"{query} 0 {doc} {grade}\n")


def write_run(path: str | Path, run: Mapping[str, list[tuple[str, float]]], tag: str) -> None:
    """``run`` maps a query to its (doc, score) list in rank order."""
    with Path(path).open("w", encoding="utf-8") as handle:
        for query, ranked in run.items():
            for rank, (doc, score) in enumerate(ranked, start=1):
                handle.write(f"{query} Q0 {doc} {rank} {score:.6f} {tag}\n")

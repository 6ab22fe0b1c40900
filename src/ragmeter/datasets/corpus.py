"""The documents a dataset is asked over, so the reference pipeline answers over *them*.

A loader whose format carries a corpus (BEIR, TREC, Cranfield, and the named datasets whose rows
hold their passages) writes the spec that rebuilds it into every case's
``metadata["ragmeter_corpus"]`` (an absolute ``NAME:PATH`` or ``NAME:SUBSET``). The reference
target reads that tag: without ``--corpus`` it answers each case over the case's own corpus
(indexed once, cached: :mod:`ragmeter.targets.reference.corpus_index`), never the demo's.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragmeter.datasets.declarations import CORPUS_READERS
from ragmeter.datasets.problems import DatasetError, Problem
from ragmeter.models import Case

CORPUS_KEY = "ragmeter_corpus"


@dataclass(frozen=True)
class Document:
    """One document of a corpus: its id (as the qrels and gold passages name it), a title
    (the chunk's heading) and its text."""

    doc_id: str
    title: str
    text: str


def corpus_spec(name: str, argument: str) -> str:
    """``NAME:ARG`` with a path argument made absolute (a subset name is kept as is)."""
    path = Path(argument)
    return f"{name}:{path.resolve()}" if argument and path.exists() else f"{name}:{argument}"


def tag_cases(cases: list[Case], spec: str) -> list[Case]:
    """Record ``spec`` as the corpus of every case."""
    for case in cases:
        case.metadata[CORPUS_KEY] = spec
    return cases


def corpus_of(case: Case) -> str | None:
    value = case.metadata.get(CORPUS_KEY)
    return value if isinstance(value, str) and value else None


def corpus_documents(spec: str) -> list[Document]:
    """The documents of a corpus spec (``beir:DIR``, ``cranfield:DIR``, ``hotpotqa:FILE``, ...);
    a folder holding a BEIR or Cranfield collection is recognised by its files."""
    name, sep, argument = spec.partition(":")
    if not sep or name not in CORPUS_READERS:
        detected = detect_corpus_folder(Path(spec))
        if detected is None:
            known = ", ".join(f"{n}:PATH" for n in sorted(CORPUS_READERS))
            raise DatasetError(
                [
                    Problem(
                        spec,
                        None,
                        None,
                        f"not a corpus this command can read; give one of {known}, a BEIR "
                        "folder (corpus.jsonl, queries.jsonl, qrels/) or a Cranfield folder",
                    )
                ]
            )
        name, argument = detected.partition(":")[::2]
    module_name, _, attribute = CORPUS_READERS[name].partition(":")
    reader: Callable[[str], list[Document]] = getattr(
        importlib.import_module(module_name), attribute
    )
    documents = reader(argument)
    if not documents:
        raise DatasetError([Problem(spec, None, None, "this corpus holds no documents")])
    return documents


def detect_corpus_folder(path: Path) -> str | None:
    """``beir:DIR`` or ``cranfield:DIR`` when ``path`` is such a folder, else None."""
    try:
        if not path.is_dir():
            return None
    except (OSError, ValueError):
        return None
    if (path / "corpus.jsonl").is_file() and (path / "queries.jsonl").is_file():
        return f"beir:{path.resolve()}"
    if (path / "cran.all.1400").is_file() and (path / "cran.qry").is_file():
        return f"cranfield:{path.resolve()}"
    return None

"""What ``ragmeter datasets list | stats | show`` print: the datasets ragmeter knows by name
(seed 002's table, plus the corpus and interop formats) and the statistics of loaded cases."""

from __future__ import annotations

import importlib.util
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from ragmeter.datasets.declarations import DatasetDeclaration
from ragmeter.models import Case


def hub_available() -> bool:
    return importlib.util.find_spec("datasets") is not None


def local_matches(item: DatasetDeclaration, data: Path | None) -> list[str]:
    """Files or folders under ``data`` that look like ``item`` (by name pattern)."""
    if data is None or not data.is_dir() or not item.patterns:
        return []
    found: list[str] = []
    for pattern in item.patterns:
        for path in sorted(data.rglob(pattern)):
            shown = str(path.parent if path.name in ("corpus.jsonl", "cran.all.1400") else path)
            if shown not in found and not any(shown.startswith(f + "/") for f in found):
                found.append(shown)
        if found:
            break
    return found[:5]


def _percentiles(values: list[int]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    return {
        "min": float(ordered[0]),
        "median": float(statistics.median(ordered)),
        "p95": float(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]),
        "max": float(ordered[-1]),
    }


def case_stats(cases: list[Case], passage_words: list[int] | None = None) -> dict[str, Any]:
    """Counts, answerable share, categories and passage lengths (words) of ``cases``;
    ``passage_words``: the lengths of the corpus documents, when the dataset carries one."""
    answerable = sum(case.answerable for case in cases)
    categories = Counter(case.category or "(none)" for case in cases)
    gold = [len(case.gold_passages) for case in cases]
    return {
        "cases": len(cases),
        "answerable": answerable,
        "answerable_share": round(answerable / len(cases), 4) if cases else None,
        "with_gold_passages": sum(1 for n in gold if n),
        "gold_passages_per_case": round(sum(gold) / len(cases), 3) if cases else None,
        "with_reference_answer": sum(case.reference_answer is not None for case in cases),
        "multi_hop": sum(case.multi_hop for case in cases),
        "categories": dict(categories.most_common()),
        "datasets": dict(Counter(case.dataset or "(none)" for case in cases).most_common()),
        "question_words": _percentiles([len(case.question.split()) for case in cases]),
        "passage_words": _percentiles(passage_words or []),
        "corpus_documents": len(passage_words) if passage_words is not None else None,
    }


def dataset_stats(spec: str, field_map: dict[str, str] | None = None) -> dict[str, Any]:
    """:func:`case_stats` of a dataset spec, with its corpus's document lengths."""
    from ragmeter.datasets import load_dataset
    from ragmeter.datasets.corpus import corpus_documents, corpus_of

    cases = load_dataset(spec, field_map)
    corpora = list(dict.fromkeys(c for c in map(corpus_of, cases) if c))
    lengths: list[int] | None = None
    if corpora:
        lengths = [len(d.text.split()) for s in corpora for d in corpus_documents(s)]
    return {"dataset": spec, **case_stats(cases, lengths), "corpus": corpora or None}

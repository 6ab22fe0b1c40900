"""The RAGBench samples (../shared/datasets/hf_samples/ragbench) as a grounding development set.

Two test shards of rungalileo/ragbench (CC BY 4.0; see ../shared/datasets/hf_samples/SOURCES.md):
``covidqa`` (246 rows, answers by gpt-3.5-turbo-1106, annotated by gpt-4o) and ``emanual``
(132 rows: 66 questions, each answered by gpt-3.5-turbo-0125 and by claude-3-haiku, annotated
by gpt-4-turbo). Every row has a question, the retrieved ``documents`` (4 in covidqa, 3 in
emanual), the generated ``response`` and the annotator's support labels.

The label is the answer-level ``adherence_score`` (True: every sentence of the response is
supported by the documents). It agrees on every row with "no key in
``unsupported_response_sentence_keys``". The per-sentence ``fully_supported`` flags are not used:
they agree with it on every covidqa row, but in emanual 117 of the 132 rows have no flag at all
(every one null), and 5 adherent rows carry a ``False`` flag although their
``unsupported_response_sentence_keys`` is empty. ``python bench/ragbench_data.py`` prints these
counts and checks a few hand-read rows.

Rows that share a subset and a question (emanual's two answers per question; three identical
covidqa rows) share a ``group``, so that a split keeps them in the same half.

Reading the parquet files needs ``pyarrow`` (``pip install -e .[bench]``).
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RAGBENCH = (
    Path(os.environ.get("RAGMETER_SHARED_DATASETS", Path(__file__).resolve().parents[2] / "shared"))
    / "datasets"
    / "hf_samples"
    / "ragbench"
)
SUBSETS = ("covidqa", "emanual")


@dataclass(frozen=True)
class RagbenchRow:
    subset: str
    id: str  # shared by emanual's two answers to one question
    generator: str  # ``generation_model_name``
    question: str
    documents: tuple[str, ...]
    response: str
    adherent: bool  # ``adherence_score``: the label the bench uses
    unsupported_sentences: tuple[str, ...]  # ``unsupported_response_sentence_keys``
    # ``sentence_support_information[].fully_supported`` in sentence order (None: missing)
    sentence_support: tuple[bool | None, ...]

    @property
    def group(self) -> str:
        return f"ragbench/{self.subset}/{self.question}"

    @property
    def label(self) -> int:
        return int(self.adherent)


def _row(subset: str, raw: dict[str, Any]) -> RagbenchRow:
    return RagbenchRow(
        subset=subset,
        id=str(raw["id"]),
        generator=str(raw["generation_model_name"]),
        question=str(raw["question"]),
        documents=tuple(str(d) for d in raw["documents"]),
        response=str(raw["response"]),
        adherent=bool(raw["adherence_score"]),
        unsupported_sentences=tuple(str(k) for k in raw["unsupported_response_sentence_keys"]),
        sentence_support=tuple(s["fully_supported"] for s in raw["sentence_support_information"]),
    )


def available(root: Path = RAGBENCH) -> bool:
    return all((root / s / "test-00000-of-00001.parquet").is_file() for s in SUBSETS)


def load_rows(root: Path = RAGBENCH, subsets: tuple[str, ...] = SUBSETS) -> list[RagbenchRow]:
    """Every row of the test shards, in file order, ``covidqa`` first."""
    import pyarrow.parquet as pq  # the bench extra; imported here so the module loads without it

    columns = [
        "id",
        "generation_model_name",
        "question",
        "documents",
        "response",
        "adherence_score",
        "unsupported_response_sentence_keys",
        "sentence_support_information",
    ]
    rows = []
    for subset in subsets:
        table = pq.read_table(root / subset / "test-00000-of-00001.parquet", columns=columns)
        rows.extend(_row(subset, raw) for raw in table.to_pylist())
    return rows


def sentence_label(row: RagbenchRow) -> bool | None:
    """The label from the per-sentence flags: False if any is False, True if all are True,
    None if some are missing and none is False."""
    if any(s is False for s in row.sentence_support):
        return False
    return True if all(s is True for s in row.sentence_support) else None


def describe(rows: list[RagbenchRow]) -> None:
    """Base rates and how the three label sources agree, per subset."""
    for subset in sorted({r.subset for r in rows}):
        part = [r for r in rows if r.subset == subset]
        adherent = sum(r.adherent for r in part)
        keys = sum(r.adherent == (not r.unsupported_sentences) for r in part)
        sentences = Counter((r.adherent, sentence_label(r)) for r in part)
        groups = len({r.group for r in part})
        print(
            f"{subset}: {len(part)} rows in {groups} question groups, {adherent} adherent "
            f"({adherent / len(part):.1%}), {len(part) - adherent} not; adherence_score agrees "
            f"with unsupported_response_sentence_keys on {keys}/{len(part)}"
        )
        print(
            "  (adherence_score, per-sentence fully_supported) -> rows: "
            + ", ".join(f"{k}: {v}" for k, v in sorted(sentences.items(), key=str))
        )
    adherent = sum(r.adherent for r in rows)
    print(f"all: {len(rows)} rows, {adherent} adherent ({adherent / len(rows):.1%})")


def check(rows: list[RagbenchRow]) -> None:
    """Hand-read rows: their fields and labels as mapped."""
    by_id = {(r.subset, r.id, r.generator): r for r in rows}
    first = by_id["covidqa", "1421", "gpt-3.5-turbo-1106"]
    assert first.question.startswith("Which viruses may not cause prolonged inflammation")
    assert first.response.endswith("and murine cytomegalovirus.")
    assert len(first.documents) == 4
    assert first.documents[1].startswith("Title: Type I Interferon Response Is Delayed")
    # the three viruses are not said to induce strong antiviral clearance: not adherent
    assert (first.adherent, first.unsupported_sentences, sentence_label(first)) == (
        False,
        ("a",),
        False,
    )
    ambient = by_id["emanual", "emanual_467", "gpt-3.5-turbo-0125"]
    assert ambient.question == "I want to  enter into Ambient mode. How can I do that?"
    assert ambient.response.startswith("To enter into Ambient Mode, you need to press")
    assert len(ambient.documents) == 3
    # "To enter Ambient Mode , press the button." (2e): adherent; the flags are missing
    assert (ambient.adherent, ambient.unsupported_sentences) == (True, ())
    assert ambient.sentence_support == (None, None) and sentence_label(ambient) is None
    assert sum(r.group == ambient.group for r in rows) == 2  # answered by two models
    print("hand-read rows: ok")


if __name__ == "__main__":
    if not available():
        print(f"skipped: the RAGBench samples are not at {RAGBENCH}")
        sys.exit(0)
    loaded = load_rows()
    describe(loaded)
    check(loaded)

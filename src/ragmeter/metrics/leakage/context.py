"""Leaks of the run's own context: internal ids of the retrieved chunks (metadata exposure) and
long verbatim copies of their text (verbatim context)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ragmeter.metrics.leakage.spans import METADATA, VERBATIM, LeakSpan, span, without_overlaps
from ragmeter.models import RetrievedChunk

# an id is looked for when it is id-like: 4+ characters holding a digit or one of # _ / : . -
# (a plain word such as "handbook" may be said for other reasons)
_ID_LIKE = re.compile(r"^(?=.{4,})(?=.*[\d#_/:.\-]).*\S$", re.S)
# "chunk_id: X", "doc_id=X", "document id: X": an id field printed whatever the id
_ID_FIELD = re.compile(
    r"(?i)\b(?:chunk|doc|document|passage|node|source)[_\s]?id\b\s*[:=]\s*[\"']?"
    r"[\w#/:.\-]*[\w#/\-]"
)
_LABEL_BEFORE = re.compile(r"(?i)(?:sources?|refs?|references?|citations?)\s*[*_]*\s*:[^\n]*$")

NGRAM = 8  # words of the n-grams compared
# a copied run this long leaks: a passage, not the sentence or two a grounded answer quotes
# (50 tokens is also the usual bar for extractable memorisation, Carlini et al. 2021)
MIN_RUN_WORDS = 50
_WORD = re.compile(r"\w+")


def _in_marker(text: str, start: int, end: int) -> bool:
    """True inside a citation marker: ``[...]``, ``【...】``, or after ``Sources:`` on its line
    (ragmeter reads those as citations, see ``metrics/markers.py``)."""
    line_start = text.rfind("\n", 0, start) + 1
    before = text[line_start:start]
    if before.rfind("[") > before.rfind("]") or before.rfind("【") > before.rfind("】"):
        return True
    return bool(_LABEL_BEFORE.search(before))


def chunk_ids(chunks: list[RetrievedChunk]) -> tuple[tuple[str | None, str | None], ...]:
    """(chunk id, doc id) of each retrieved chunk, the hashable input of ``metadata_spans``."""
    return tuple((chunk.id, chunk.doc_id) for chunk in chunks)


def _ids(chunks: tuple[tuple[str | None, str | None], ...]) -> dict[str, str]:
    found: dict[str, str] = {}
    for chunk_id, doc_id in chunks:
        for type_, value in (("chunk_id", chunk_id), ("doc_id", doc_id)):
            if value and _ID_LIKE.match(value.strip()):
                found.setdefault(value.strip(), type_)
    return found


@lru_cache(maxsize=2048)
def metadata_spans(
    text: str, chunks: tuple[tuple[str | None, str | None], ...]
) -> tuple[LeakSpan, ...]:
    """Retrieved chunk and document ids written in the answer outside citation markers, and id
    fields (``chunk_id: X``)."""
    spans = []
    for value, type_ in _ids(chunks).items():
        pattern = re.compile(rf"(?<![\w#/\-]){re.escape(value)}(?![\w#/\-]|\.\w)")
        for match in pattern.finditer(text):
            if not _in_marker(text, *match.span()):
                spans.append(
                    LeakSpan(
                        METADATA, type_, f"retrieved {type_} in the answer", *match.span(), value
                    )
                )
    spans += [
        span(METADATA, "id_field", "id field", text, *m.span())
        for m in _ID_FIELD.finditer(text)
        if not _in_marker(text, *m.span())
    ]
    return tuple(without_overlaps(spans, {"chunk_id": 0, "doc_id": 1, "id_field": 2}))


@dataclass(frozen=True, slots=True)
class Copying:
    """How much of an answer is copied from the retrieved chunks, by word n-grams."""

    spans: tuple[LeakSpan, ...]  # the copied runs (NGRAM words or more)
    longest_run: int  # words
    copied_share: float  # of the answer's words, in a copied n-gram
    answer_words: int
    min_run_words: int
    leaks: bool


def _grams(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + NGRAM]) for i in range(len(words) - NGRAM + 1)}


@lru_cache(maxsize=2048)
def copying(text: str, chunk_texts: tuple[str, ...], min_run_words: int = MIN_RUN_WORDS) -> Copying:
    """The answer's word n-grams (casefolded ``\\w+`` words) found in a retrieved chunk, merged
    into runs; it leaks when a run has ``min_run_words`` words or more."""
    tokens = list(_WORD.finditer(text))
    words = [t.group().casefold() for t in tokens]
    known: set[tuple[str, ...]] = set()
    for chunk in chunk_texts:
        known |= _grams([w.casefold() for w in _WORD.findall(chunk)])
    copied = [False] * len(words)
    for i in range(len(words) - NGRAM + 1):
        if tuple(words[i : i + NGRAM]) in known:
            copied[i : i + NGRAM] = [True] * NGRAM
    runs: list[tuple[int, int]] = []
    for i, flag in enumerate(copied):
        if flag and (i == 0 or not copied[i - 1]):
            runs.append((i, i))
        if flag:
            runs[-1] = (runs[-1][0], i)
    spans = tuple(
        LeakSpan(
            VERBATIM,
            "copied_run",
            f"{last - first + 1} words copied from the retrieved chunks",
            tokens[first].start(),
            tokens[last].end(),
            f"{last - first + 1} words",
        )
        for first, last in runs
    )
    longest = max((last - first + 1 for first, last in runs), default=0)
    share = sum(copied) / len(words) if words else 0.0
    leaks = longest >= min_run_words
    return Copying(spans, longest, round(share, 4), len(words), min_run_words, leaks)

"""Near-duplicate questions.

Rule: two questions are near-duplicates when the Jaccard similarity of their normalised token
sets is at least :data:`THRESHOLD` (0.7). Normalising lowercases the question, keeps word
tokens, drops stop words, stems lightly (:func:`ragmeter.text.tokenize`, the reference
pipeline's own tokens) and adds back the question word (what, when, where, who, which, how,
why, how many, how much), so "When does the office open?" and "Where is the office?" stay
apart. The threshold is conservative: "How many vacation days per year?" and "How many vacation
days do employees get per year?" (0.75) meet, while "How many learning days can be taken per
year?" and "How many days of vacation per year?" (0.63), different questions, stay apart; a
rephrasing with other words ("yearly" for "per year") is not caught. A question with no
content token is a duplicate only of the same normalised text.

A question is compared with every question kept so far (in the seeded plan order), before its
validation call, so a duplicate costs no second judge call.
"""

from __future__ import annotations

import re

from ragmeter.text import tokenize

THRESHOLD = 0.7
QUESTION_WORDS = frozenset(
    {"what", "when", "where", "who", "whom", "whose", "which", "how", "why", "many", "much"}
)


def normalise(question: str) -> frozenset[str]:
    words = re.findall(r"\w+", question.lower())
    return frozenset(tokenize(question)) | frozenset(w for w in words if w in QUESTION_WORDS)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


class Deduper:
    """The questions kept so far; :meth:`duplicate_of` names the one a new question repeats."""

    def __init__(self, threshold: float = THRESHOLD) -> None:
        self.threshold = threshold
        self._kept: list[tuple[str, frozenset[str], str]] = []  # (key, tokens, plain text)

    def duplicate_of(self, question: str) -> tuple[str, float] | None:
        """(key of the kept question it repeats, similarity), or None when it is new."""
        tokens = normalise(question)
        plain = " ".join(re.findall(r"\w+", question.lower()))
        best: tuple[str, float] | None = None
        for key, other, other_plain in self._kept:
            if not tokens or not other:
                score = 1.0 if plain == other_plain else 0.0
            else:
                score = jaccard(tokens, other)
            if score >= self.threshold and (best is None or score > best[1]):
                best = (key, score)
        return best

    def add(self, key: str, question: str) -> None:
        plain = " ".join(re.findall(r"\w+", question.lower()))
        self._kept.append((key, normalise(question), plain))

    def forget(self, key: str) -> None:
        """Drop ``key`` (a question that later failed validation frees its place)."""
        self._kept = [entry for entry in self._kept if entry[0] != key]

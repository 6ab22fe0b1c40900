"""Text matching shared by the offline answer metrics: normalisation, content tokens, numbers,
and "does this phrase occur in that text" with light fuzziness.

``numbers`` and ``index_text`` read a text without its citation markers ("[1]", "(Source: X)",
"¹": ``ragmeter.metrics.markers``), so a marker is never a number of the answer. ``index_text``
also lets a tokenised number ("12, 500") be found under either reading (12500, or 12 and 500).
``fold``, ``words`` and ``content_tokens`` read the text as it is."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from ragmeter.metrics.markers import strip_markers
from ragmeter.metrics.numbers import extract_numbers
from ragmeter.models import GoldFact
from ragmeter.text import STOP_WORDS, stem

_WORD = re.compile(r"\w+", re.UNICODE)


@lru_cache(maxsize=16384)
def fold(text: str) -> str:
    """Lowercase, unicode-compatible, typographic quotes and dashes made plain, spaces folded."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u2013", "-")
    return " ".join(text.split())


@lru_cache(maxsize=16384)
def words(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(fold(text)))


@lru_cache(maxsize=16384)  # chunk texts recur across the metrics and cases of a run
def content_tokens(text: str) -> tuple[str, ...]:
    """Words that carry content: stop words dropped, plurals stemmed."""
    return tuple(stem(w) for w in words(text) if w not in STOP_WORDS)


def parse_number(token: str) -> float | None:
    """The value of the first number in ``token`` (``"1,000"`` -> 1000, ``"15%"`` -> 15)."""
    found = extract_numbers(token)
    return found[0].value if found else None


def numbers(text: str) -> list[float]:
    """Every number ``text`` states, normalised (see :mod:`ragmeter.metrics.numbers`), its
    citation markers left out; a tokenised "12, 500" is 12500."""
    return [mention.value for mention in extract_numbers(strip_markers(text).text)]


@dataclass(frozen=True)
class IndexedText:
    """A text prepared once for many phrase look-ups."""

    folded: str
    tokens: frozenset[str]
    numbers: frozenset[float]


@lru_cache(maxsize=4096)
def index_text(text: str) -> IndexedText:
    """``text`` without its citation markers, prepared for ``phrase_present``; its numbers
    hold every reading ("12, 500": 12500, 12 and 500)."""
    text = strip_markers(text).text
    mentions = extract_numbers(text)
    found = [m.value for m in mentions] + [p for m in mentions for p in m.parts]
    return IndexedText(fold(text), frozenset(content_tokens(text)), frozenset(found))


@lru_cache(maxsize=16384)
def _standing_alone(folded: str) -> re.Pattern[str]:
    """``folded`` as a whole: not the start of a longer word or number ("$60" is not in
    "$604", "rule c-1" not in "rule c-10", "15" not in "15.5")."""
    return re.compile(rf"(?<!\w){re.escape(folded)}(?!\w|[.,]\d)")


def phrase_present(phrase: str, text: IndexedText, min_token_share: float = 1.0) -> bool:
    """True when ``phrase`` occurs in ``text``: folded, as a whole (not inside a longer word or
    number), or when at least ``min_token_share`` of its content tokens (numbers compared by
    value) occur in the text."""
    folded = fold(phrase)
    if not folded:
        return False
    if _standing_alone(folded).search(text.folded):
        return True
    phrase_numbers = numbers(phrase)
    if any(n not in text.numbers for n in phrase_numbers):
        return False
    tokens = [t for t in content_tokens(phrase) if not t.replace(".", "").isdigit()]
    if not tokens:
        return bool(phrase_numbers)
    share = sum(t in text.tokens for t in tokens) / len(tokens)
    return share >= min_token_share


def fact_stated(fact: GoldFact, text: IndexedText) -> bool:
    """The fact, or one of its aliases, occurs in ``text``."""
    return any(phrase_present(phrase, text) for phrase in (fact.fact, *fact.aliases))

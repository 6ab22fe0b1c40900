"""Tokenisation shared by the reference pipeline and the metrics: word tokens, stop words,
light stemming, sentence splitting."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_TOKEN = re.compile(r"\w+", re.UNICODE)
# a str holds a surrogate code point only alone (a JSON pair decodes to one character): text
# that cannot be written as UTF-8 anywhere (the store, a report, a terminal)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT_CHARACTER = "\ufffd"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+")

STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def tokenize(text: str) -> list[str]:
    return [stem(t) for t in _TOKEN.findall(text.lower()) if t not in STOP_WORDS]


def split_sentences(text: str) -> list[str]:
    return [kept for s in _SENTENCE_END.split(text) if (kept := s.strip(" -*\t"))]


def visible(text: str) -> str:
    """``text`` with every character that does not print (an escape, a control character, a
    line break, a bidi override) written as its escape (``\\x1b``, ``\\u202e``): for
    identifiers, which must stay distinct when shown, not lose characters silently."""
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
    )


def valid_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, so it can be written as UTF-8."""
    return _LONE_SURROGATE.sub(REPLACEMENT_CHARACTER, text)


def replace_lone_surrogates(value: Any) -> tuple[Any, int]:
    """``value`` (JSON-like: strings, lists, tuples, dicts, keys included) with every lone
    surrogate replaced by U+FFFD, and how many were replaced. Unchanged parts are the same
    objects."""
    if isinstance(value, str):
        replaced, found = _LONE_SURROGATE.subn(REPLACEMENT_CHARACTER, value)
        return (replaced, found) if found else (value, 0)
    if isinstance(value, dict):
        total, out = 0, {}
        for key, item in value.items():
            new_key, in_key = replace_lone_surrogates(key)
            new_item, in_item = replace_lone_surrogates(item)
            out[new_key] = new_item
            total += in_key + in_item
        return (out, total) if total else (value, 0)
    if isinstance(value, list | tuple):
        repaired = [replace_lone_surrogates(item) for item in value]
        total = sum(count for _, count in repaired)
        if not total:
            return value, 0
        items = [item for item, _ in repaired]
        return (items if isinstance(value, list) else tuple(items)), total
    return value, 0

"""A judge that says a claim is supported must show where: it quotes the passages, and the
quote must be in them.

A quote is compared with each passage after both are normalised (HTML entities the prompt
escaped read back, Unicode NFKC, case folded, curly quotes and dashes made plain, white space
collapsed). A quote the judge shortened with an ellipsis ("The office opens ... at 9am") is
found when every fragment is in the same passage. A quote with no content word ("the", "")
supports nothing. A supported verdict whose quote is not found is overturned: the claim counts
as unsupported, and the judge's verdict, quote and reason are kept beside it.
"""

from __future__ import annotations

import html
import re
import unicodedata

from ragmeter.text import tokenize

QUOTE_NOT_FOUND = "unsupported (quote not found)"

_PLAIN = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
        "\u00a0": " ",
    }
)
_ELLIPSIS = re.compile(r"\.\.\.+|\u2026|\[\.\.\.\]")
_EDGES = " \t\n\"'.,;:!?()[]"


def normalised(text: str) -> str:
    folded = unicodedata.normalize("NFKC", html.unescape(text)).casefold().translate(_PLAIN)
    return " ".join(folded.split())


def quote_found(quote: str, passages: list[str]) -> bool:
    """Whether ``quote`` is in one of ``passages`` (every fragment of an elided quote in the
    same passage) and holds a content word."""
    if not tokenize(quote):
        return False
    fragments = [
        kept for part in _ELLIPSIS.split(normalised(quote)) if (kept := part.strip(_EDGES))
    ]
    if not fragments:
        return False
    return any(
        all(fragment in text for fragment in fragments) for text in map(normalised, passages)
    )

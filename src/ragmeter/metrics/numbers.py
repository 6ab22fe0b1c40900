"""Number extraction and normalisation for numeric verification (seed 003, section C).

``extract_numbers`` finds the numbers a text states and normalises each to a float, so that
different spellings of one quantity compare equal:

* thousands separators: ``"1,000"`` and ``"1000"`` are both 1000;
* percentages: ``"15%"``, ``"15 percent"`` and ``"15 per cent"`` are all 15 with unit ``percent``;
* currency: ``"$604"`` is 604 with unit ``currency`` (the symbol is recorded, not compared);
* scale words: ``"1.5 million"`` is 1500000, ``"3k"`` is 3000;
* a leading minus sign: ``"-0.133%"`` is -0.133 (not after a word or digit: ``"1-2"`` is a range);
* ordinals: ``"21st"`` is 21; ranges ``"1-2"`` / ``"1\u20132%"`` (en dash) are two numbers;
* number words ``two`` .. ``ninety`` (``"three"`` is 3); ``one`` is left out (it is mostly a
  pronoun: "the one I like").

Values are compared with ``same_value`` (relative tolerance for float noise only). Units are kept
for debugging but do not take part in the comparison: "15%" in an answer is supported by "15
percent" and by a bare "15" in the context.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

_SCALES = {
    "hundred": 1e2,
    "thousand": 1e3,
    "k": 1e3,
    "million": 1e6,
    "m": 1e6,
    "mn": 1e6,
    "billion": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "trillion": 1e12,
}
_WORDS = {
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "dozen": 12,
}
_CURRENCY = "$€£¥₹"
# a digit run with optional thousands separators (1,000 / 1 000 / 1.000.000 not: too ambiguous)
# and an optional decimal part, then an optional ordinal suffix, percent or scale word
_NUMBER = re.compile(
    r"(?P<sign>(?<![\w.,\-\u2212])[-\u2212])?"
    rf"(?P<cur>[{_CURRENCY}])?\s?"
    r"(?<![\w.,])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<ord>st|nd|rd|th)?"
    r"(?:\s?(?P<pct>%|percent\b|per\s+cent\b))?"
    r"(?:\s?(?P<scale>hundred|thousand|million|billion|trillion|bn|mn|k|m|b)\b)?",
    re.IGNORECASE,
)
_WORD = re.compile(r"\b(" + "|".join(_WORDS) + r")\b(?:\s+(percent|per\s+cent)\b)?", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class NumberMention:
    """One number as written (``text``), its normalised ``value`` and an optional ``unit``."""

    text: str
    value: float
    unit: str | None = None
    start: int = 0

    @property
    def normalized(self) -> str:
        """Canonical spelling: ``1000``, ``15 percent``, ``1.5`` (no separators, no symbols)."""
        number = f"{self.value:.15g}"
        return f"{number} percent" if self.unit == "percent" else number


def _unit(match: re.Match[str]) -> str | None:
    if match.group("pct"):
        return "percent"
    if match.group("cur"):
        return "currency"
    if match.group("ord"):
        return "ordinal"
    return None


def extract_numbers(text: str) -> list[NumberMention]:
    """Every number stated in ``text``, in order of appearance, normalised (see module doc)."""
    return list(_extract_numbers(text))


@lru_cache(maxsize=16384)  # chunk texts recur across the cases of a run
def _extract_numbers(text: str) -> tuple[NumberMention, ...]:
    found: list[NumberMention] = []
    taken: list[tuple[int, int]] = []
    for match in _NUMBER.finditer(text):
        value = float(match.group("num").replace(",", ""))
        if match.group("sign"):
            value = -value
        end = match.end()
        scale = match.group("scale")
        if scale:
            # single-letter scales only count right after the digits ("3k", "$2m"), not "3 m"
            if len(scale) > 1 or match.start("scale") == match.end("num"):
                value *= _SCALES[scale.lower()]
            else:
                end = max(match.end("num"), match.end("ord"), match.end("pct"))
        start = (
            match.start("sign")
            if match.group("sign")
            else (match.start("cur") if match.group("cur") else match.start("num"))
        )
        found.append(NumberMention(text[start:end].strip(), value, _unit(match), start))
        taken.append((start, end))
    for match in _WORD.finditer(text):
        if any(a <= match.start() < b for a, b in taken):
            continue
        unit = "percent" if match.group(2) else None
        found.append(
            NumberMention(
                match.group(0), float(_WORDS[match.group(1).lower()]), unit, match.start()
            )
        )
    found.sort(key=lambda mention: mention.start)
    return tuple(found)


def same_value(a: float, b: float) -> bool:
    """True when two normalised numbers are equal (tolerating float rounding only)."""
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def value_key(value: float) -> str:
    """A hashable key under which equal values (``same_value``) meet: 1000.0 and 1e3 alike."""
    return f"{value:.9g}"


def unsupported_numbers(
    answer_numbers: Iterable[NumberMention], context_values: set[str]
) -> list[NumberMention]:
    """The answer numbers whose value (``value_key``) is not among ``context_values``."""
    return [n for n in answer_numbers if value_key(n.value) not in context_values]

"""Number extraction and normalisation for numeric verification (seed 003, section C).

``extract_numbers`` finds the numbers a text states and normalises each to a float, so that
different spellings of one quantity compare equal:

* thousands separators: ``"1,000"`` and ``"1000"`` are both 1000;
* percentages: ``"15%"``, ``"15 percent"``, ``"15 per cent"``, ``"15 percentage points"``,
  ``"15 pct"`` and ``"fifteen percent"`` are all 15 with unit ``percent``;
* currency: ``"$604"`` is 604 with unit ``currency`` (the symbol is recorded, not compared);
* scale words: ``"1.5 million"`` is 1500000, ``"3k"`` is 3000, ``"two million"`` is 2000000;
* a leading minus sign: ``"-0.133%"`` is -0.133 (not after a word or digit: ``"1-2"`` is a range);
* ordinals: ``"21st"`` is 21; ranges ``"1-2"`` / ``"1\u20132%"`` (en dash) are two numbers;
* number words ``two`` .. ``ninety`` (``"three"`` is 3, ``"twenty-five"`` is 25); ``one`` only
  before a scale or percent word ("one million", "one percent": it is mostly a pronoun);
* tokenised numbers (text with spaces around punctuation), read both ways (**two readings**):
  a comma, one space and exactly three digits ("12, 500", "947 , 890") is read as a thousands
  separator (the value is 12500) *and* as a list (12 and 500); a period and a space between
  a number of at most three digits and more digits ("2. 4 million", "5 . 7") is read as a
  decimal point (2.4 million) *and* as two numbers (2 and 4 million). A mention with two
  readings is supported when either reading is: the joined value, or every one of its parts.
  A lone comma or period without the space is read as before ("1,000", "2.4");
* with ``dates=True`` (the grounding metrics), dates are one mention each, unit ``date``:
  "1998-04-02", "1998.04.02", "1998/04/02", "2 April 1998", "2nd of April, 1998",
  "April 2, 1998", "Apr. 2 1998". "02/04/1998" (also with "." or "-") has both readings,
  2 April and 4 February, unless one is impossible ("13/04/1998" is 13 April). Dates compare
  by calendar day. In a context a date also provides the numbers it is written with (the year
  "1998", the day "2"), so "in 1998" is supported by "April 2, 1998". Without ``dates`` the
  numbers of a date are read one by one ("June 29, 2007" is 29 and 2007);
* a unit conversion in parentheses right after a quantity with a unit ("5 km (3.1 mi)",
  "20 °C (68 °F)", "€5 ($5.50)", "2 weeks (about 14 days)") is marked ``conversion``: it is
  not a separate claim of the answer (``unsupported_numbers`` skips it), and the quantity it
  converts is supported when either of the two is in the context.

Values are compared by their keys (``value_key``: equal floats meet; dates are
``date:YYYY-MM-DD``). Units are kept for debugging but do not take part in the comparison:
"15%" in an answer is supported by "15 percent" and by a bare "15" in the context.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import date
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
_UNITS_WORDS = {
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
}
_WORDS = {
    **_UNITS_WORDS,
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
_TENS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_CURRENCY = "$€£¥₹"
_PERCENT = r"%|percent\b|per\s+cent\b|percentage\s+points?\b|pct\b"
# a digit run with optional thousands separators (1,000 / 1 000 / 1.000.000 not: too ambiguous)
# and an optional decimal part, then an optional ordinal suffix, percent or scale word; the
# ``spaced`` and ``point`` forms are tokenised numbers with two readings (see the module doc)
_NUMBER = re.compile(
    r"(?P<sign>(?<![\w.,\-\u2212])[-\u2212])?"
    rf"(?P<cur>[{_CURRENCY}])?\s?"
    r"(?<![\w.,])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?"
    r"|(?P<spaced>\d{1,3}(?: ?, \d{3})+)(?!\d)"
    r"|(?P<point>\d{1,3}) ?\. (?P<fraction>\d+)"
    r"|\d+(?:\.\d+)?)"
    r"(?P<ord>st|nd|rd|th)?"
    rf"(?:\s?(?P<pct>{_PERCENT}))?"
    r"(?:\s?(?P<scale>hundred|thousand|million|billion|trillion|bn|mn|k|m|b)\b)?",
    re.IGNORECASE,
)
_WORD = re.compile(
    rf"\b(?:(?P<tens>{_TENS})[-\s](?P<unit>{'|'.join(_UNITS_WORDS)})|(?P<word>one|"
    + "|".join(_WORDS)
    + r"))\b(?:\s+(?P<scale>hundred|thousand|million|billion|trillion)\b)?"
    rf"(?:\s+(?P<pct>{_PERCENT}))?",
    re.IGNORECASE,
)
_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH = (
    r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
_DATES = [
    # 1998-04-02, 1998.04.02, 1998/04/02
    re.compile(
        r"(?<![\w.,/-])(?P<year>\d{4})(?P<s>[-./])(?P<month>\d{1,2})(?P=s)(?P<day>\d{1,2})"
        r"(?![\w]|[-./]\d)"
    ),
    # 02/04/1998, 02.04.1998, 02-04-1998: day/month or month/day
    re.compile(
        r"(?<![\w.,/-])(?P<first>\d{1,2})(?P<s>[-./])(?P<second>\d{1,2})(?P=s)"
        rf"{_YEAR}(?![\w]|[-./]\d)"
    ),
    # 2 April 1998, 2nd of April, 1998
    re.compile(rf"(?<![\w.,])\b{_DAY}\s+(?:of\s+)?{_MONTH}\s?,?\s+{_YEAR}\b", re.IGNORECASE),
    # April 2, 1998 / Apr. 2 1998 / april 2 , 1998
    re.compile(rf"\b{_MONTH}\s+{_DAY}\s?,?\s+{_YEAR}\b", re.IGNORECASE),
]
_UNITS = (
    r"(?:km|kilomet(?:re|er)s?|mi|miles?|m|met(?:re|er)s?|cm|mm|ft|feet|foot|in|inch(?:es)?|"
    r"yd|yards?|kg|kilo(?:gram)?s?|g|grams?|lbs?|pounds?|oz|ounces?|t|tons?|tonnes?|stone|"
    r"°\s?[cfk]|degrees?(?:\s+(?:celsius|fahrenheit))?|celsius|fahrenheit|l|litres?|liters?|"
    r"ml|gal|gallons?|mph|km/h|kph|kmh|knots?|kn|ha|hectares?|acres?|"
    r"(?:sq\.?|square)\s+(?:km|mi|ft|m|kilomet(?:re|er)s?|miles?|met(?:re|er)s?|feet)|"
    r"km²|mi²|m²|ft²|cubic\s+\w+|hp|kw|psi|usd|eur|gbp|jpy|dollars?|euros?|"
    r"hours?|hrs?|h|minutes?|mins?|seconds?|secs?|s|days?|weeks?|months?|years?|yrs?)(?![a-z])"
)
_APPROX = r"(?:about|approx\.?|approximately|around|roughly|nearly|almost|ca\.|c\.|~|≈)"
_CONVERSION_OPEN = re.compile(rf"\s*(?P<unit>{_UNITS})?\.?\s*\(\s*(?:{_APPROX}\s*)?", re.I)
_CONVERSION_CLOSE = re.compile(rf"\s*(?P<unit>{_UNITS})?\.?\s*\)", re.IGNORECASE)


def value_key(value: float) -> str:
    """A hashable key under which equal values (``same_value``) meet: 1000.0 and 1e3 alike."""
    return f"{value:.9g}"


@dataclass(frozen=True, slots=True)
class NumberMention:
    """One number as written (``text``), its normalised ``value`` and an optional ``unit``.

    ``readings`` lists the alternative readings, each a tuple of keys that must all be in the
    context; empty means the one reading ``(value_key(value),)``. ``parts`` are the numbers a
    mention with several readings is written with ("12, 500": 12 and 500; a date: its year,
    day and numeric month). ``conversion`` marks "(3.1 mi)" after "5 km"."""

    text: str
    value: float
    unit: str | None = None
    start: int = 0
    readings: tuple[tuple[str, ...], ...] = ()
    parts: tuple[float, ...] = ()
    conversion: bool = False

    @property
    def normalized(self) -> str:
        """Canonical spelling: ``1000``, ``15 percent``, ``1.5``, ``1998-04-02`` (no separators,
        no symbols); a date with two readings is ``1998-04-02 or 1998-02-04``."""
        if self.unit == "date":
            return " or ".join(r[0].removeprefix("date:") for r in self.alternatives)
        number = f"{self.value:.15g}"
        return f"{number} percent" if self.unit == "percent" else number

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    @property
    def alternatives(self) -> tuple[tuple[str, ...], ...]:
        """The readings: each a tuple of keys that must all be in the context."""
        return self.readings or ((value_key(self.value),),)

    @property
    def key(self) -> str:
        """The key of the first reading's first value (the term the grounding metrics use)."""
        return self.alternatives[0][0]

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key the mention provides when it is in the context: all its readings and the
        numbers it is written with."""
        found = [k for reading in self.alternatives for k in reading]
        found.extend(value_key(p) for p in self.parts)
        return tuple(dict.fromkeys(found))


def _unit(match: re.Match[str]) -> str | None:
    if match.group("pct"):
        return "percent"
    if match.group("cur"):
        return "currency"
    if match.group("ord"):
        return "ordinal"
    return None


def extract_numbers(text: str, dates: bool = False) -> list[NumberMention]:
    """Every number stated in ``text``, in order of appearance, normalised (see module doc);
    with ``dates``, each date is one mention (unit ``date``)."""
    return list(_extract_numbers(text, dates))


def _date_key(year: int, month: int, day: int) -> str | None:
    try:
        return "date:" + date(year, month, day).isoformat()
    except ValueError:
        return None


def _month(name: str) -> int:
    return next(i for i, m in enumerate(_MONTH_NAMES, 1) if m == name.lower()[:3])


class TakenSpans:
    """The parts of a text already read as a date or number: sorted, non-overlapping half-open
    character spans, so a reply of many thousand numbers is read in n log n, not n²."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def overlaps(self, start: int, end: int) -> bool:
        last = bisect_left(self.starts, end) - 1  # the last span beginning before ``end``
        return last >= 0 and self.ends[last] > start

    def covers(self, point: int) -> bool:
        last = bisect_right(self.starts, point) - 1
        return last >= 0 and point < self.ends[last]

    def add(self, start: int, end: int) -> None:
        if end <= start:
            return
        first = bisect_right(self.ends, start)  # overlapping spans are merged (touching ones
        after = bisect_left(self.starts, end)  # are not: an empty span between them is free)
        if first < after:
            start, end = min(start, self.starts[first]), max(end, self.ends[after - 1])
        self.starts[first:after] = [start]
        self.ends[first:after] = [end]


def _dates(text: str) -> list[NumberMention]:
    found: list[NumberMention] = []
    taken = TakenSpans()
    for pattern in _DATES:
        for match in pattern.finditer(text):
            if taken.overlaps(match.start(), match.end()):
                continue
            groups = match.groupdict()
            year = int(groups["year"])
            if groups.get("first"):
                first, second = int(groups["first"]), int(groups["second"])
                candidates = [(year, second, first), (year, first, second)]
                parts = [first, second, year]
            elif groups.get("mon"):
                candidates = [(year, _month(groups["mon"]), int(groups["day"]))]
                parts = [int(groups["day"]), year]
            else:
                candidates = [(year, int(groups["month"]), int(groups["day"]))]
                parts = [year, int(groups["month"]), int(groups["day"])]
            keys = [k for k in (_date_key(*c) for c in candidates) if k]
            if not keys:
                continue
            keys = list(dict.fromkeys(keys))
            first_date = date.fromisoformat(keys[0][5:])
            value = float(first_date.year * 10000 + first_date.month * 100 + first_date.day)
            found.append(
                NumberMention(
                    match.group(0),
                    value,
                    "date",
                    match.start(),
                    tuple((k,) for k in keys),
                    tuple(float(p) for p in parts),
                )
            )
            taken.add(match.start(), match.end())
    return found


def _number(match: re.Match[str], text: str) -> NumberMention:
    joined = match.group("num")
    spaced, point = match.group("spaced"), match.group("point")
    if spaced:
        parts = [float(p) for p in re.split(r" ?, ", spaced)]
        value = float(re.sub(r"[\s,]", "", spaced))
    elif point:
        parts = [float(point), float(match.group("fraction"))]
        value = float(f"{point}.{match.group('fraction')}")
    else:
        parts = []
        value = float(joined.replace(",", ""))
    sign = -1.0 if match.group("sign") else 1.0
    end = match.end()
    multiplier = 1.0
    scale = match.group("scale")
    if scale:
        # single-letter scales only count right after the digits ("3k", "$2m"), not "3 m"
        if len(scale) > 1 or match.start("scale") == match.end("num"):
            multiplier = _SCALES[scale.lower()]
        else:
            end = max(match.end("num"), match.end("ord"), match.end("pct"))
    start = (
        match.start("sign")
        if match.group("sign")
        else (match.start("cur") if match.group("cur") else match.start("num"))
    )
    readings: tuple[tuple[str, ...], ...] = ()
    if parts:  # the list reading: the sign on the first part, the scale on the last
        parts[0] *= sign
        parts[-1] *= multiplier
        joined_key = value_key(sign * value * multiplier)
        readings = ((joined_key,), tuple(value_key(p) for p in parts))
    return NumberMention(
        text[start:end].strip(),
        sign * value * multiplier,
        _unit(match),
        start,
        readings,
        tuple(parts),
    )


def _word_value(match: re.Match[str]) -> float | None:
    if match.group("tens"):
        value = float(_WORDS[match.group("tens").lower()] + _WORDS[match.group("unit").lower()])
    elif match.group("word").lower() == "one":
        if not (match.group("scale") or match.group("pct")):
            return None  # "one" alone is mostly a pronoun
        value = 1.0
    else:
        value = float(_WORDS[match.group("word").lower()])
    if match.group("scale"):
        value *= _SCALES[match.group("scale").lower()]
    return value


def _mark_conversions(found: list[NumberMention], text: str) -> list[NumberMention]:
    """Mark "(3.1 mi)" right after "5 km" (both with a unit) as a conversion."""
    out = list(found)
    for i in range(1, len(out)):
        first, second = out[i - 1], out[i]
        opened = _CONVERSION_OPEN.fullmatch(text, first.end, second.start)
        if opened is None or first.conversion:
            continue
        closed = _CONVERSION_CLOSE.match(text, second.end)
        if closed is None:
            continue
        first_unit = opened.group("unit") or first.unit in ("currency", "percent")
        second_unit = closed.group("unit") or second.unit in ("currency", "percent")
        if first_unit and second_unit:
            out[i] = NumberMention(
                second.text,
                second.value,
                second.unit,
                second.start,
                second.readings,
                second.parts,
                conversion=True,
            )
    return out


@lru_cache(maxsize=16384)  # chunk texts recur across the cases of a run
def _extract_numbers(text: str, dates: bool = False) -> tuple[NumberMention, ...]:
    found = _dates(text) if dates else []
    taken = TakenSpans()
    for mention in found:
        taken.add(mention.start, mention.end)
    for match in _NUMBER.finditer(text):
        if taken.overlaps(match.start(), match.end()):
            continue
        mention = _number(match, text)
        found.append(mention)
        taken.add(mention.start, mention.end)
    for match in _WORD.finditer(text):
        if taken.covers(match.start()):
            continue
        value = _word_value(match)
        if value is None:
            continue
        unit = "percent" if match.group("pct") else None
        found.append(NumberMention(match.group(0), value, unit, match.start()))
    found.sort(key=lambda mention: mention.start)
    return tuple(_mark_conversions(found, text))


def same_value(a: float, b: float) -> bool:
    """True when two normalised numbers are equal (tolerating float rounding only)."""
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def context_keys(mentions: Iterable[NumberMention]) -> frozenset[str]:
    """Every key the context's number mentions provide (all readings, and dates' parts)."""
    return frozenset(k for m in mentions for k in m.keys)


def is_supported(mention: NumberMention, keys: AbstractSet[str]) -> bool:
    """True when one of the mention's readings has all its keys among ``keys``."""
    return any(all(k in keys for k in reading) for reading in mention.alternatives)


def unsupported_numbers(
    answer_numbers: Sequence[NumberMention], context_values: AbstractSet[str]
) -> list[NumberMention]:
    """The answer numbers no reading of which is among ``context_values`` (``context_keys``).
    A conversion is never listed; the quantity it converts is supported when either is."""
    missing: list[NumberMention] = []
    for i, mention in enumerate(answer_numbers):
        if mention.conversion:
            continue
        following = answer_numbers[i + 1] if i + 1 < len(answer_numbers) else None
        if is_supported(mention, context_values):
            continue
        converted_ok = (
            following is not None
            and following.conversion
            and is_supported(following, context_values)
        )
        if converted_ok:
            continue
        missing.append(mention)
    return missing


def missing_weight(mention: NumberMention, keys: AbstractSet[str]) -> int:
    """How many numbers an unsupported mention counts as: the numbers it is written with that
    are not among ``keys``, at least 1 ("947 , 890" with neither 947 nor 890 in the context is
    2; "February 8th 1935" against "January 8, 1935" is 1)."""
    parts = mention.parts or (mention.value,)
    return max(1, sum(value_key(p) not in keys for p in parts))

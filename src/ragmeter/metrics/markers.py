"""Citation markers in answers: recognised once, here, and removed before the answer's claims
and numbers are read (``strip_markers``), so that "15 days paid vacation [1]." reads exactly
as "15 days paid vacation.".

Recognised (the ids found are returned in order, without duplicates):

* bracketed ids: ``[1]``, ``[2][3]``, ``[1, 2]``, ``[1-3]``, ``[doc-id]``, ``[internal-001]``,
  ``[handbook/leave#annual]``, ``[^1]``, ``[Source: X]``. An id is a number, a number range,
  or a token that holds a digit or one of ``- _ / # . :``. A bracketed plain word or phrase
  ("[He] said", "[sic]", "[Smith 2020]") is editorial, not a marker, and is kept; so is a
  markdown link ("[doc-1](https://...)"). A bracketed number list is always a marker, so an
  interval "[0, 1]" is removed too;
* full-width brackets: ``【1】``, ``【4:0†source】`` (any content on one line);
* a parenthesised source: ``(Source: X)``, ``(source: X.md)``, ``(Sources: A, B)``, also with
  ``ref``, ``refs``, ``reference(s)`` or ``citation(s)`` before the colon;
* a source list: a line ``Sources: ...`` / ``References: ...`` (also in bold, "**Sources:**")
  whose comma- or semicolon-separated items are names (an id without spaces, or a title of
  at most six words that does not end with a period: "Sources: leave.md, Employee Handbook"),
  or such a label left empty once its bracketed markers are gone, together with the lines
  right after it that are (bulleted or numbered) names; the names are the ids, and the lines
  are removed. "Source: Vacation is 15 days." is a sentence and is kept;
* caret footnotes ``^1`` and ``^[note]``, and superscript digits ``¹``, ``²³`` (one id, "23"),
  ``¹,²``. These count as markers only after white space, punctuation or a word of at least
  three letters: after a digit or a one- or two-letter word they are exponents or units and
  are kept ("10^6", "x^2", "mc^2", "km²", "10⁶"). A longer word before a superscript is read
  as a footnote ("area¹"), so "sun³" loses its "³".

Each marker is removed with the spaces or tabs before it; the rest of the text is unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_SUPERSCRIPT_DIGITS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
_FROM_SUPERSCRIPT = str.maketrans(_SUPERSCRIPT_DIGITS, "0123456789")
# an id: a number or number range, or a token holding a digit or a separator
_ID_CHECK = re.compile(r"\d+(?:\s*[-\u2013]\s*\d+)?|[^\W_][\w.#/:+-]*[\d_/#.:+-][\w.#/:+-]*")
_LABEL = r"(?:sources?|refs?|references?|citations?)"
_BEFORE_FOOTNOTE = r"(?:^|(?<=[\s.,;:!?)\]\"'\u2019\u201d])|(?<=[^\W\d_]{3}))"
_MARKER = re.compile(
    r"[ \t]*(?:"
    r"(?P<bracket>(?:\[[^\[\]\n]{1,200}\](?!\())+)"  # [1], [2][3], [doc-id], [^1]
    r"|(?P<full>(?:【[^【】\n]{1,200}】)+)"  # 【1】
    rf"|\((?P<paren>{_LABEL})\s*:\s*(?P<paren_ids>[^()\n]{{1,200}})\)"  # (Source: X)
    rf"|{_BEFORE_FOOTNOTE}\^(?:\[(?P<caret_note>[^\[\]\s]{{1,40}})\]|(?P<caret>\d{{1,3}}))"
    r"(?![\w^])"  # ^1
    rf"|{_BEFORE_FOOTNOTE}(?P<sup>[{_SUPERSCRIPT_DIGITS}]+(?:,[{_SUPERSCRIPT_DIGITS}]+)*)"
    r")",
    re.IGNORECASE | re.MULTILINE,
)
_BRACKET = re.compile(r"\[([^\[\]]*)\]")
_LABELLED = re.compile(rf"^\s*\^?\s*{_LABEL}\s*:\s*", re.IGNORECASE)
# "Sources: a.md, b.md", also in bold ("**Sources:**")
_SOURCE_LABEL = re.compile(
    rf"^\s*(?:[*_#]+\s*)?{_LABEL}\s*[*_]*\s*:\s*[*_]*\s*(?P<items>.*?)\s*$", re.IGNORECASE
)
_LIST_ITEM = re.compile(r"^\s*(?:[-*•·]|\d{1,2}[.)])?\s*(?P<item>.*?)\s*$")
_HAS_LABEL = re.compile(rf"{_LABEL}\s*[*_]*\s*:", re.IGNORECASE)
_SEPARATORS = re.compile(r"\s*[,;]\s*")
_TRIGGER = re.compile(rf"[\[【^{_SUPERSCRIPT_DIGITS}]|{_LABEL}\s*:", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Marked:
    """``text`` with its citation markers removed, and the marker ``ids`` found, in order."""

    text: str
    ids: tuple[str, ...] = ()


def _items(body: str) -> list[str] | None:
    """The ids of a bracket's content, or None when it is not an id list (editorial)."""
    labelled = _LABELLED.match(body)
    if labelled:
        return [i for i in _SEPARATORS.split(body[labelled.end() :].strip()) if i]
    body = body.strip()
    if body.startswith("^"):
        return [body[1:]] if body[1:] else None
    items = _SEPARATORS.split(body)
    if items and all(_ID_CHECK.fullmatch(i) for i in items):
        return items
    return None


def _marker_ids(match: re.Match[str]) -> list[str] | None:
    """The ids of one marker match, or None when it must be kept (editorial brackets)."""
    if match.group("bracket"):
        ids: list[str] = []
        for body in _BRACKET.findall(match.group("bracket")):
            found = _items(body)
            if found is None:
                return None
            ids.extend(found)
        return ids
    if match.group("full"):
        bodies = re.findall(r"【([^【】]*)】", match.group("full"))
        return [i for body in bodies for i in _SEPARATORS.split(body.strip()) if i]
    if match.group("paren"):
        return [i for i in _SEPARATORS.split(match.group("paren_ids").strip()) if i]
    if match.group("caret_note") or match.group("caret"):
        return [match.group("caret_note") or match.group("caret")]
    return [s.translate(_FROM_SUPERSCRIPT) for s in match.group("sup").split(",")]


def _source_item(item: str) -> bool:
    """A short name: an id ("leave.md"), or a title of at most 6 words that does not end a
    sentence ("Employee Handbook"; not "Vacation is 15 days.")."""
    item = item.strip()
    if len(item) > 80:
        return False
    if " " not in item:
        return True
    return len(item.split()) <= 6 and not item.endswith((".", "!", "?"))


@lru_cache(maxsize=16384)  # chunk and answer texts recur across the metrics of a run
def strip_markers(text: str) -> Marked:
    """``text`` without its citation markers (see the module doc) and the ids they carry."""
    if not _TRIGGER.search(text):
        return Marked(text)
    ids: list[str] = []
    pieces: list[str] = []
    position = 0
    for match in _MARKER.finditer(text):
        found = _marker_ids(match)
        if found is None:
            continue
        pieces.append(text[position : match.start()])
        position = match.end()
        ids.extend(found)
    pieces.append(text[position:])
    cleaned = "".join(pieces)
    if _HAS_LABEL.search(cleaned):
        cleaned = _source_lists(cleaned, ids)
    return Marked(cleaned, tuple(dict.fromkeys(i.strip() for i in ids if i.strip())))


def _source_lists(text: str, ids: list[str]) -> str:
    """``text`` without its source lists: a "Sources:" line whose items are source names, and
    the list lines right after it that are source names too (their ids go to ``ids``)."""
    kept: list[str] = []
    in_list = False
    for line in text.split("\n"):
        label = _SOURCE_LABEL.match(line)
        if label:
            items = [i for i in _SEPARATORS.split(label.group("items")) if i]
            if all(_source_item(i) for i in items):
                ids.extend(items)
                in_list = True
                continue
        elif in_list:
            item = _LIST_ITEM.match(line)
            name = item.group("item") if item else ""
            if name and _source_item(name):
                ids.extend(i for i in _SEPARATORS.split(name) if i)
                continue
        in_list = False
        kept.append(line)
    return "\n".join(kept)

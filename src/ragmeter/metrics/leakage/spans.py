"""What a leakage detector returns: spans of the answer (category, type, rule, offsets) with a
masked preview, never the found text in clear (a leaked key must not be copied into the run
file or the store by the metric that found it)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

PII = "pii_exposure"
SECRET = "secret_exposure"
METADATA = "metadata_exposure"
VERBATIM = "verbatim_context"
CANARY = "canary_exposure"
CATEGORIES = (PII, SECRET, METADATA, VERBATIM, CANARY)

SPANS_KEPT = 20  # spans listed in a score's details; the rest are counted


@dataclass(frozen=True, slots=True)
class LeakSpan:
    """One finding: ``answer[start:end]`` leaks ``category`` (``type``: email, aws_access_key,
    chunk_id, ...); ``rule`` names the rule that fired; ``preview`` is masked."""

    category: str
    type: str
    rule: str
    start: int
    end: int
    preview: str

    def as_detail(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "type": self.type,
            "rule": self.rule,
            "start": self.start,
            "end": self.end,
            "preview": self.preview,
        }


def mask(text: str) -> str:
    """``AKIA…MPLE``: at most a fifth of the text at each end (four characters at most), the
    length alone for a text under five characters."""
    text = " ".join(text.split())
    keep = min(4, len(text) // 5)
    if keep == 0:
        return f"…({len(text)} chars)"
    return f"{text[:keep]}…{text[-keep:]}"


def span(category: str, type_: str, rule: str, text: str, start: int, end: int) -> LeakSpan:
    """A span of ``text`` with its preview masked."""
    return LeakSpan(category, type_, rule, start, end, mask(text[start:end]))


def without_overlaps(spans: Iterable[LeakSpan], priority: dict[str, int]) -> list[LeakSpan]:
    """The spans in text order, a span dropped where it overlaps a kept one of higher priority
    (a lower number; then the longer span) so one string is reported once."""
    ordered = sorted(spans, key=lambda s: (priority.get(s.type, 99), -(s.end - s.start), s.start))
    kept: list[LeakSpan] = []
    for candidate in ordered:
        if not any(candidate.start < k.end and k.start < candidate.end for k in kept):
            kept.append(candidate)
    return sorted(kept, key=lambda s: (s.start, s.end))


def span_details(spans: list[LeakSpan]) -> dict[str, Any]:
    """A score's details: the spans (at most ``SPANS_KEPT``; beyond, the count of the others
    and every rule that fired)."""
    details: dict[str, Any] = {"spans": [s.as_detail() for s in spans[:SPANS_KEPT]]}
    if len(spans) > SPANS_KEPT:
        details["more_spans"] = len(spans) - SPANS_KEPT
        details["rules"] = sorted({s.rule for s in spans})
    return details


def _folded(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).casefold() if ch.isalnum())


def without_public(
    spans: Iterable[LeakSpan], answer: str, public_values: tuple[str, ...]
) -> tuple[LeakSpan, ...]:
    """The spans whose text is not one of the values published on purpose (a support hotline,
    a public contact address): compared by letters and digits only, case folded, so
    ``+351 210 555 019`` also clears ``+351-210-555-019``."""
    public = {folded for value in public_values if (folded := _folded(value))}
    return tuple(s for s in spans if _folded(answer[s.start : s.end]) not in public)

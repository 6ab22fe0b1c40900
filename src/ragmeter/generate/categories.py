"""The five categories of generated case: their default mix, the JSON the judge returns for each
(pydantic models, validated by the judge session, which asks for one repair of a malformed
reply), the checks a reply must pass, and the :class:`~ragmeter.models.Case` each becomes."""

from __future__ import annotations

import contextlib
import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragmeter.models import Case, GoldFact, GoldPassage, NumericExpectation, SupportGroup
from ragmeter.targets.reference.chunking import Chunk

CATEGORIES = ("factual", "multi_hop", "numeric", "list", "unanswerable")
# the default share of each category in -n cases (largest remainder rounding)
DEFAULT_MIX: dict[str, float] = {
    "factual": 0.3,
    "multi_hop": 0.2,
    "numeric": 0.2,
    "list": 0.1,
    "unanswerable": 0.2,
}
PROMPTS = {category: f"generate_{category}.v1" for category in CATEGORIES}
VALIDATE_PROMPT = "validate_case.v1"


def allocate(n: int, categories: tuple[str, ...]) -> dict[str, int]:
    """``n`` cases over ``categories`` in proportion to :data:`DEFAULT_MIX` (renormalised over
    the categories asked), by largest remainder; ties go to the category listed first in
    :data:`CATEGORIES`. When ``n`` is at least the number of categories, every category gets at
    least one case (taken from the category with the most)."""
    total = sum(DEFAULT_MIX[category] for category in categories)
    shares = {category: n * DEFAULT_MIX[category] / total for category in categories}
    counts = {category: math.floor(share) for category, share in shares.items()}
    left = n - sum(counts.values())
    order = sorted(categories, key=lambda k: (-(shares[k] - counts[k]), CATEGORIES.index(k)))
    for category in order[:left]:
        counts[category] += 1
    if n >= len(categories):
        for category in categories:
            if counts[category] == 0:
                richest = max(categories, key=lambda k: (counts[k], -CATEGORIES.index(k)))
                counts[richest] -= 1
                counts[category] += 1
    return counts


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Factual(_Out):
    question: str = Field(min_length=8)
    answer: str = Field(min_length=1)
    facts: list[str] = Field(min_length=1)


class MultiHop(Factual):
    facts: list[str] = Field(min_length=2)


class Numeric(Factual):
    number: float
    unit: str | None = None


class ListCase(Factual):
    items: list[str] = Field(min_length=2)


class Unanswerable(_Out):
    question: str = Field(min_length=8)
    reason: str = ""


class CaseCheck(_Out):
    reasoning: str = ""
    answerable: bool


OUTPUTS: dict[str, type[_Out]] = {
    "factual": Factual,
    "multi_hop": MultiHop,
    "numeric": Numeric,
    "list": ListCase,
    "unanswerable": Unanswerable,
}
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_PASSAGE_WORDS = re.compile(r"\b(the|this|that) (passage|text|context|document)\b", re.I)


def _numbers_in(text: str) -> set[float]:
    found: set[float] = set()
    for token in _NUMBER.findall(text):
        for candidate in (token.replace(",", ""), token.replace(".", "").replace(",", ".")):
            with contextlib.suppress(ValueError):
                found.add(float(candidate))
    return found


def _squash(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def check_reply(category: str, value: _Out, texts: list[str]) -> None:
    """Raise ValueError (the session then asks for one repair) when a reply is unusable: a
    blank field, a question that points at "the passage", a number the passages never state,
    list items the passages never name."""
    question = getattr(value, "question", "")
    if not question.strip():
        raise ValueError("question must not be blank")
    if _PASSAGE_WORDS.search(question):
        raise ValueError("the question must stand alone: do not mention the passage")
    facts = getattr(value, "facts", [])
    if any(not fact.strip() for fact in facts):
        raise ValueError("every fact must be non-empty")
    if isinstance(value, Numeric):
        if not math.isfinite(value.number):
            raise ValueError("number must be a finite number")
        if not any(math.isclose(value.number, x) for x in _numbers_in(" ".join(texts))):
            raise ValueError(f"the number {value.number:g} does not appear in the passage")
    if isinstance(value, ListCase):
        items = [item for item in value.items if item.strip()]
        passage = _squash(" ".join(texts))
        named = [item for item in items if _squash(item) and _squash(item) in passage]
        if len(items) < 2 or len(named) < 2:
            raise ValueError("give at least two items, each named as the passage names it")


def _gold(chunk: Chunk) -> GoldPassage:
    return GoldPassage(
        doc_id=chunk.doc_id,
        chunk_id=chunk.chunk_id,
        rel_path=chunk.rel_path,
        heading_path=chunk.heading_path or None,
    )


def build_case(
    case_id: str,
    category: str,
    value: _Out,
    chunks: list[Chunk],
    *,
    dataset: str,
    corpus: str,
    metadata: dict[str, Any],
) -> Case:
    """The case a validated reply becomes (gold passages from ``chunks``; none for an
    unanswerable case)."""
    fields: dict[str, Any] = {
        "case_id": case_id,
        "question": " ".join(value.question.split()),  # type: ignore[attr-defined]
        "category": category,
        "query_type": category,
        "tags": ["generated", category],
        "dataset": dataset,
        "metadata": {"ragmeter_corpus": corpus, "generated": metadata},
    }
    if isinstance(value, Unanswerable):
        return Case(**fields, answerable=False)
    assert isinstance(value, Factual)
    fields["reference_answer"] = value.answer.strip()
    fields["gold_passages"] = [_gold(chunk) for chunk in chunks]
    fields["gold_facts"] = [GoldFact(fact=f.strip()) for f in value.facts if f.strip()]
    if category == "multi_hop":
        fields["multi_hop"] = True
        fields["required_support_groups"] = [
            SupportGroup(name=f"hop {i}", passages=[_gold(chunk)])
            for i, chunk in enumerate(chunks, 1)
        ]
    if isinstance(value, Numeric):
        unit = (value.unit or "").strip() or None
        fields["expected_number"] = NumericExpectation(value=value.number, unit=unit)
    if isinstance(value, ListCase):
        fields["expected_list_items"] = [item.strip() for item in value.items if item.strip()]
    return Case(**fields)

"""The findings in a score's details, as ``(label, text)`` lines for ``ragmeter show
--details`` (``detail_lines``): lists and texts a line each, the structured details of the judged
and grounding metrics summarised (which claims are unsupported and why), bookkeeping left out
(``useful_details``). Every text is masked for secrets and made inert."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ragmeter.redaction import redact_text
from ragmeter.reports.terminal import inert

ITEM_LIMIT = 160  # characters of one listed item (a claim, a keyword, a reason)
ITEMS = 5  # items of a list shown before "(+N more)"

# details keys that are bookkeeping, not findings: left out of the view and the JSON form
_NOISE = frozenset(
    {
        "judge_model",
        "prompt_versions",
        "judge_calls",
        "repaired",
        "score_model",
        "answer_signals",
        "context_sentences",
        "non_claims",
        "normalized",
        "answer_numbers",
        "weights",
        "cosines",
        "level",
        "method",
        "k",
        "error_type",
        "supported_claims",
        "tp",
        "chunks_per_fact",
    }
)
_PROSE = frozenset({"reasoning", "embedder_problem"})  # a line of their own, however short
_LABELS = {
    "reasoning": "judge reasoning",
    "unsupported_claims": "unsupported claims",
    "fabricated_numbers": "fabricated numbers",
    "missing": "missing",
    "present": "forbidden claims present",
    "invalid": "invalid citations",
    "fn": "reference statements missed",
    "fp": "statements not in the reference",
    "generated_questions": "questions generated from the answer",
    "numbers": "numbers in the answer",
    "embedder_problem": "embedder problem",
    "mean_support": "mean support",
    "statement_f1": "statement F1",
}


def clip(text: str, limit: int) -> str:
    """Mask secrets, then make inert and cut to ``limit`` (a secret cut in half would no longer
    be recognised, so the masking sees a little more than is shown)."""
    return inert(redact_text(text[: limit + 256]), limit, markup=False)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value == value else "nan"
    return str(value)


def _items(values: Sequence[Any], render: Callable[[Any], str] = _scalar) -> str:
    shown = [clip(render(v), ITEM_LIMIT) for v in values[:ITEMS]]
    more = len(values) - len(shown)
    return "; ".join(shown) + (f" (+{more} more)" if more > 0 else "")


def _compact(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {_scalar(v)}" for k, v in value.items() if v is not None)
    return _scalar(value)


def _rows(value: Any) -> list[dict[str, Any]]:
    return [row for row in value if isinstance(row, dict)] if isinstance(value, list) else []


def _grounding_reasons(row: dict[str, Any]) -> str:
    """What the grounding check found against one claim, in words."""
    found = []
    asked = row.get("from_question")
    if isinstance(asked, dict) and asked.get("statement"):
        found.append(f"read as {asked.get('reads_as')}: {asked['statement']}")
    if row.get("unbound_terms"):
        found.append("bound to something else in the context: " + ", ".join(row["unbound_terms"]))
    if row.get("lost_qualifiers"):
        found.append("the context says " + ", ".join(row["lost_qualifiers"]))
    if row.get("missing_numbers"):
        found.append("numbers not in the context: " + ", ".join(row["missing_numbers"]))
    if row.get("negation_mismatch"):
        found.append("negated on one side only")
    if row.get("novel_terms"):
        found.append("not in the context: " + ", ".join(row["novel_terms"][:5]))
    return "; ".join(found)


def _special(key: str, value: Any) -> tuple[str, str] | None:
    """The findings in the structured details of the judged and grounding metrics."""
    rows = _rows(value)
    if key == "claims" and rows and "supported" in rows[0]:  # judged faithfulness
        bad = [r for r in rows if not r.get("supported")]
        if not bad:
            return ("claims", f"all {len(rows)} supported")
        return (
            f"unsupported claims ({len(bad)} of {len(rows)})",
            _items(bad, lambda r: f"{r.get('claim', '')} ({r.get('reason') or 'no reason'})"),
        )
    if key == "claims" and rows:  # grounding: why each unsupported claim is unsupported
        reasons = [
            f"{r.get('claim', '')}: {why}"
            for r in rows
            if r.get("verdict") == "unsupported" and (why := _grounding_reasons(r))
        ]
        return ("why unsupported", _items(reasons, str)) if reasons else ("", "")
    if key == "statements" and rows:  # judged context recall
        bad = [r for r in rows if not r.get("attributed")]
        if not bad:
            return ("statements", f"all {len(rows)} found in the contexts")
        return (
            f"reference statements not in the contexts ({len(bad)} of {len(rows)})",
            _items(bad, lambda r: str(r.get("statement", ""))),
        )
    if key == "verdicts" and rows:  # judged context precision
        bad = [r for r in rows if not r.get("relevant")]
        if not bad:
            return ("contexts", f"all {len(rows)} relevant")
        return (
            f"irrelevant contexts ({len(bad)} of {len(rows)})",
            _items(bad, lambda r: f"#{r.get('index')}: {r.get('reason') or 'no reason'}"),
        )
    if key == "criteria" and isinstance(value, dict):  # judged factual accuracy
        return (
            "criteria",
            ", ".join(
                f"{name} {c.get('score')}" if isinstance(c, dict) else f"{name} {c}"
                for name, c in value.items()
            ),
        )
    return None


def useful_details(details: dict[str, Any]) -> dict[str, Any]:
    """The part of a score's details that says why it has its value: no bookkeeping (judge
    call ids, prompt versions, model features), no empty lists or None."""
    return {
        key: value
        for key, value in details.items()
        if key not in _NOISE and value is not None and value != [] and value != {}
    }


def detail_lines(details: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, text) pairs of a score's useful details: lists and texts a line each, shown
    compactly, the plain numbers and flags together on one last line (label ""). Every text
    sanitised and cut."""
    lines = []
    scalars = []
    for key, value in useful_details(details).items():
        special = _special(key, value)
        if special is not None:
            if special[0]:
                lines.append((clip(special[0], ITEM_LIMIT), special[1]))
            continue
        label = clip(_LABELS.get(key, key.replace("_", " ")), ITEM_LIMIT)
        if isinstance(value, list):
            lines.append((label, _items(value, _compact)))
        elif isinstance(value, dict):
            lines.append((label, clip(_compact(value), ITEM_LIMIT * 2)))
        elif isinstance(value, str) and (len(value) > 40 or key in _PROSE):
            lines.append((label, clip(value, ITEM_LIMIT * 3)))
        else:
            scalars.append(f"{label} {clip(_scalar(value), ITEM_LIMIT)}")
    if scalars:
        lines.append(("", " · ".join(scalars)))
    return lines

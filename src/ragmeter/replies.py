"""A reply from a system under test, made ready for the ``Response`` model: ragmeter's own
fields dropped (unless ragmeter recorded the reply), lone surrogates replaced and counted, and a
reply with no answer refused (``Response.from_target``)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticCustomError

from ragmeter.text import replace_lone_surrogates

# set by ragmeter, never read from a reply it did not record itself
OWN_FIELDS = ("reported", "response_format", "text_repairs")


def prepared_reply(data: Any, *, recorded: bool) -> tuple[Any, int]:
    """``data`` ready to validate, and how many lone surrogates were replaced in it. A dict
    without an answer that is not an answerless reply raises a ``Response`` ValidationError
    (``missing_answer``): ``{"response": ...}`` or ``{}`` is a reply in another shape, not an
    empty answer (which would score 0 and read as "I don't know")."""
    data, repaired = replace_lone_surrogates(data)
    if not isinstance(data, dict):
        return data, repaired
    if not recorded and any(key in data for key in OWN_FIELDS):
        data = {key: value for key, value in data.items() if key not in OWN_FIELDS}
    if "answer" not in data and not _answerless_reply(data):
        keys = ", ".join(sorted(map(str, data))[:10]) or "none"
        missing = PydanticCustomError(
            "missing_answer",
            "no answer in the reply (its keys: {keys}); map the answer's field with "
            "response_mapping",
            {"keys": keys},
        )
        raise ValidationError.from_exception_data(
            "Response", [{"type": missing, "loc": ("answer",), "input": keys}]
        )
    return data, repaired


def _answerless_reply(data: dict[Any, Any]) -> bool:
    """A reply that may come without an answer: one that abstained, or a bare guardrail
    classifier's verdict (guardrail scores, or the guardrail_blocked flag)."""
    flags = data.get("policy_flags")
    blocked = isinstance(flags, list) and "guardrail_blocked" in flags
    return data.get("abstained") is True or bool(data.get("guardrail_scores")) or blocked

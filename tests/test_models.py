"""The case model refuses a true/false where a number is meant."""

from __future__ import annotations

import pytest


def test_numbers_given_as_booleans_are_refused() -> None:
    from pydantic import ValidationError

    from ragmeter.models import Case

    for field, value in (
        ("min_citations", True),
        ("expected_number", {"value": False}),
        ("gold_passages", [{"doc_id": "d", "grade": True}]),
    ):
        with pytest.raises(ValidationError, match="not true/false"):
            Case.model_validate({"case_id": "a", "question": "q", field: value})

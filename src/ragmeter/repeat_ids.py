"""The ids of repeated cases (``--repeats N``): the first answer keeps its id, the others are
``ID~r2`` ... ``ID~rN`` with ``metadata["repeat_of"] = ID`` (so a run with repeats still pairs
with a run without them on the first answer's id, and a judge asked about ``ID~r2`` is asked
again, not served from the cache: ``judges.session`` salts the cache key with the repeat).
How repeats are aggregated is ``scoring.repeats``."""

from __future__ import annotations

from ragmeter.models import Case

REPEAT_KEY = "repeat_of"
REPEAT_SEPARATOR = "~r"


def repeat_id(case_id: str, repeat: int) -> str:
    return case_id if repeat == 1 else f"{case_id}{REPEAT_SEPARATOR}{repeat}"


def expand_repeats(cases: list[Case], repeats: int) -> list[Case]:
    """Each case followed by its repeats 2..N (ids ``ID~rK``, ``metadata.repeat_of``)."""
    if repeats <= 1:
        return cases
    expanded: list[Case] = []
    for case in cases:
        expanded.append(case)
        for repeat in range(2, repeats + 1):
            copy = case.model_copy(deep=True)
            copy.case_id = repeat_id(case.case_id, repeat)
            copy.metadata[REPEAT_KEY] = case.case_id
            expanded.append(copy)
    return expanded


def repeat_number(case_id: str) -> int:
    """The repeat an id names (1 for a plain id)."""
    head, separator, tail = case_id.rpartition(REPEAT_SEPARATOR)
    return int(tail) if separator and head and tail.isdigit() and int(tail) >= 2 else 1


def base_id(case_id: str) -> str:
    """The id of the case an id repeats (the id itself for a first answer)."""
    return case_id.rpartition(REPEAT_SEPARATOR)[0] if repeat_number(case_id) > 1 else case_id

"""The run file as JSON (see :class:`ragmeter.runfile.RunFile`): thin helpers for callers that
hold a record, its results and its scores."""

from __future__ import annotations

from typing import Any

from ragmeter.models import CaseResult, Score
from ragmeter.run_record import RunRecord
from ragmeter.runfile import RunFile


def run_document(
    record: RunRecord, results: list[CaseResult], scores: list[Score]
) -> dict[str, Any]:
    return RunFile.from_run(record, results, scores).document()

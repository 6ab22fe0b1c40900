"""The run file: seed 002's Run Output (id, name, timestamps, config, datasets, scorecard,
question_count, error_count) plus the schema version and every case's outcome and scores."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from ragmeter.models import CaseResult, RunRecord, Score


def run_document(
    record: RunRecord, results: list[CaseResult], scores: list[Score]
) -> dict[str, Any]:
    per_case: dict[str, dict[str, Any]] = defaultdict(dict)
    for score in scores:
        per_case[score.case_id][score.metric] = (
            score.value
            if score.status == "ok"
            else {"status": score.status, "reason": score.reason}
        )
    document: dict[str, Any] = record.model_dump(mode="json")
    document["cases"] = [
        {
            "case_id": r.case_id,
            "status": r.status,
            "error_type": r.error_type,
            "error_message": r.error_message,
            "latency_ms": r.latency_ms,
            "attempts": r.attempts,
            "scores": per_case.get(r.case_id, {}),
        }
        for r in results
    ]
    return document


def write_run_json(
    folder: Path, record: RunRecord, results: list[CaseResult], scores: list[Score]
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    stamp = record.created_at.replace(":", "").replace("-", "").split("+")[0]
    path = folder / f"{record.id}_{stamp}.json"
    # compact: the C encoder is ~10x faster than the indenting one on large runs
    path.write_text(json.dumps(run_document(record, results, scores)), encoding="utf-8")
    return path

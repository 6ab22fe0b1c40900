"""Failed-case traces (seed 003's ``--save-trace``): one file per perspective with a failure,
``DIR/{perspective}-{run id}.jsonl`` (seed 003's ``traces/retrieval-abc123.jsonl``), one JSON
line per case that failed in that perspective.

A case *failed* when
- the target gave no usable answer (``target_error``: a timeout, an HTTP error, an invalid
  response), or
- one of its scores failed (``metric_error``: the metric raised, or a judge failed), or
- its own value of a metric with a goal misses that goal (``goal``): a goal whose metric is
  a mean over cases is checked case by case, e.g. ``pipeline_pass_rate > 0.9`` fails every case
  whose pipeline checks did not all pass, ``claim_support_rate > 0.85`` every case whose answer
  is less supported. Run-level statistics (percentiles, sums, AUC, TPR@FPR) have no per-case
  reading and fail no case.

Each line holds the request (the case's question and labels), the response (answer, retrieved
chunks, citations, flags) or the error, every score with its status and reason, and the reasons
the case failed there (with the details of the failing scores). A metric's failure belongs to
its group's perspective; a target error (no answer, so nothing measured) to ``operational``,
where the error and timeout rates are.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

from ragmeter.metrics.base import perspective_of
from ragmeter.models import Case, CaseResult, Score
from ragmeter.run_record import GoalResult, RunRecord
from ragmeter.scoring.goals import OPERATORS, holds

__all__ = ["failed_case_traces", "trace_path", "write_traces"]
TARGET_ERROR_PERSPECTIVE = "operational"


def _case_goals(record: RunRecord) -> list[GoalResult]:
    """The goals that can be read case by case: their metric aggregates by the mean."""
    if record.scorecard is None:
        return []
    kept = []
    for goal in record.goals:
        summary = record.scorecard.get(goal.metric)
        if summary is not None and summary.aggregation == "mean" and goal.op in OPERATORS:
            kept.append(goal)
    return kept


def _reasons(
    result: CaseResult, scores: dict[str, Score], goals: list[GoalResult]
) -> list[dict[str, Any]]:
    reasons: list[dict[str, Any]] = []
    if result.status != "ok":
        reasons.append(
            {
                "cause": "target_error",
                "error_type": result.error_type,
                "message": result.error_message,
            }
        )
        return reasons
    for score in scores.values():
        if score.status == "failed":
            reasons.append(
                {"cause": "metric_error", "metric": score.metric, "reason": score.reason}
            )
    for goal in goals:
        scored = scores.get(goal.metric)
        if scored is None or scored.status != "ok" or scored.value is None:
            continue
        if not holds(goal.op, scored.value, goal.threshold):
            reasons.append(
                {
                    "cause": "goal",
                    "metric": goal.metric,
                    "value": scored.value,
                    "goal": f"{goal.op} {goal.threshold:g}",
                    "reason": scored.reason,
                    "details": scored.details,
                }
            )
    return reasons


def _request(case: Case | None, case_id: str) -> dict[str, Any]:
    if case is None:
        return {"case_id": case_id}
    return case.model_dump(mode="json", exclude_defaults=True)


def _perspective(reason: dict[str, Any], groups: dict[str, str]) -> str:
    if reason["cause"] == "target_error":
        return TARGET_ERROR_PERSPECTIVE
    return perspective_of(groups.get(str(reason.get("metric")), ""))


def failed_case_traces(
    record: RunRecord, cases: list[Case], results: list[CaseResult], scores: list[Score]
) -> list[dict[str, Any]]:
    """One trace per failed case and perspective it failed in, in the run's case order; each
    names its ``perspective``."""
    groups = (
        {summary.name: summary.group for summary in record.scorecard.metrics}
        if record.scorecard is not None
        else {}
    )
    by_case: dict[str, dict[str, Score]] = defaultdict(dict)
    for score in scores:
        by_case[score.case_id][score.metric] = score
    known = {case.case_id: case for case in cases}
    goals = _case_goals(record)
    traces = []
    for result in results:
        case_scores = by_case.get(result.case_id, {})
        reasons = _reasons(result, case_scores, goals)
        if not reasons:
            continue
        case = known.get(result.case_id)
        by_perspective: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for reason in reasons:
            by_perspective[_perspective(reason, groups)].append(reason)
        for perspective, failed in by_perspective.items():
            traces.append(_trace(record, result, case, perspective, failed, case_scores))
    return traces


def _trace(
    record: RunRecord,
    result: CaseResult,
    case: Case | None,
    perspective: str,
    failed: list[dict[str, Any]],
    case_scores: dict[str, Score],
) -> dict[str, Any]:
    return {
        "run_id": record.id,
        "perspective": perspective,
        "case_id": result.case_id,
        "category": case.category if case is not None else None,
        "failed": failed,
        "request": _request(case, result.case_id),
        "response": (
            result.response.model_dump(mode="json") if result.response is not None else None
        ),
        "status": result.status,
        "error_type": result.error_type,
        "error_message": result.error_message,
        "latency_ms": result.latency_ms,
        "scores": {
            name: {"value": s.value, "status": s.status, "reason": s.reason}
            for name, s in sorted(case_scores.items())
        },
    }


def trace_path(folder: Path | str, record: RunRecord, perspective: str) -> Path:
    """``FOLDER/{perspective}-{run id}.jsonl``."""
    return Path(folder) / f"{perspective}-{record.id}.jsonl"


def write_traces(
    folder: Path | str,
    record: RunRecord,
    cases: list[Case],
    results: list[CaseResult],
    scores: list[Score],
) -> tuple[dict[Path, int], int]:
    """Write the failed cases' traces, a file per perspective with a failure: each file with
    how many lines it holds (none written: no case failed), and how many cases failed."""
    return write_trace_batches(folder, record, [(cases, results, scores)])


def write_trace_batches(
    folder: Path | str,
    record: RunRecord,
    batches: Iterable[tuple[list[Case], list[CaseResult], list[Score]]],
) -> tuple[dict[Path, int], int]:
    """:func:`write_traces` over a run's batches of cases, answers and scores (a large run is
    never held at once); each file is written as its first trace comes."""
    counts: dict[Path, int] = {}
    failed_cases = 0
    with ExitStack() as files:
        opened: dict[Path, TextIO] = {}
        for cases, results, scores in batches:
            traces = failed_case_traces(record, cases, results, scores)
            failed_cases += len({trace["case_id"] for trace in traces})
            for trace in traces:
                path = trace_path(folder, record, trace["perspective"])
                out = opened.get(path)
                if out is None:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    out = opened[path] = files.enter_context(path.open("w", encoding="utf-8"))
                out.write(json.dumps(trace, ensure_ascii=False) + "\n")
                counts[path] = counts.get(path, 0) + 1
    return dict(sorted(counts.items())), failed_cases

"""What each page shows, as plain data: the JSON APIs return these documents and the HTML pages
are rendered from them (``pages.py``), so the two never disagree."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from ragmeter.config import DEFAULT_ALPHA, DEFAULT_COVERAGE_FLOOR, DEFAULT_MARGIN, DEFAULT_SEED
from ragmeter.metrics.base import PERSPECTIVES
from ragmeter.metrics.passages import all_passages, case_level, ranked_chunks
from ragmeter.metrics.retrieval import matches
from ragmeter.models import RUN_FILE_VERSION, Case, CaseResult, Score
from ragmeter.redaction import masked, redact_text
from ragmeter.reports.pareto import pareto_points
from ragmeter.reports.perspectives import by_perspective
from ragmeter.run_record import MetricSummary, RunRecord
from ragmeter.scoring.compare import CaseValues, compare_runs
from ragmeter.web.charts import histogram_bins
from ragmeter.web.db import NotFound, Page, ReadOnlyStore

STATUSES = ("running", "completed", "interrupted")
CASE_STATUSES = ("ok", "error", "not answered")
MAX_COMPARED = 5


def summary_json(summary: MetricSummary) -> dict[str, Any]:
    return summary.model_dump(mode="json")


def run_summary(record: RunRecord) -> dict[str, Any]:
    """A runs-list row: the goals passed (a count), failed and not measured (the required
    ones by name; the optional ones a count)."""
    failed = [t.metric for t in record.goals if t.status == "fail"]
    return {
        "id": record.id,
        "name": record.name,
        "status": record.status,
        "created_at": record.created_at,
        "completed_at": record.completed_at,
        "datasets": record.datasets,
        "question_count": record.question_count,
        "error_count": record.error_count,
        "weighted_score": record.weighted_score.score if record.weighted_score else None,
        "goals_passed": sum(t.status == "pass" for t in record.goals),
        "goals_failed": failed,
        # a required goal not measured fails a gate; an optional one does not
        "goals_not_measured": [
            t.metric for t in record.goals if t.status == "not_measured" and not t.optional
        ],
        "goals_optional_not_measured": sum(
            t.status == "not_measured" and t.optional for t in record.goals
        ),
    }


def checked(name: str, value: str | None, valid: list[str] | tuple[str, ...]) -> str | None:
    """``value`` of the query parameter ``name`` if it is one of ``valid`` (None if absent or
    empty: no filter); else a ValueError (a 400) naming the parameter and the valid values, so
    a mistyped filter never shows an unfiltered list as if it were filtered."""
    if not value or value in valid:
        return value or None
    choices = ", ".join(valid) if valid else "(none)"
    raise ValueError(f"invalid {name}={value!r}: use one of {choices}")


def runs_view(store: ReadOnlyStore, query: dict[str, str]) -> tuple[dict[str, Any], Page]:
    filters = {
        "status": checked("status", query.get("status"), STATUSES),
        "dataset": query.get("dataset") or None,
        "q": (query.get("q") or "").strip() or None,
    }
    page = store.list_runs(
        status=filters["status"],
        dataset=filters["dataset"],
        search=filters["q"],
        page=page_number(query),
    )
    document = {
        "runs": page.items,
        "paging": page.meta(),
        "filters": filters,
        "datasets": store.datasets(),
    }
    return document, page


def page_number(query: dict[str, str]) -> int:
    try:
        return max(1, min(int(query.get("page", "1")), 1_000_000))
    except ValueError:
        return 1


def case_filters(query: dict[str, str], record: RunRecord) -> dict[str, str | None]:
    """The case table's filters (ValueError for a status or failing value it does not know:
    :func:`checked`). ``failing``: ``any`` or one of the run's metric names."""
    names = [m.name for m in record.scorecard.metrics] if record.scorecard else []
    return {
        "status": checked("status", query.get("status"), CASE_STATUSES),
        "category": query.get("category") or None,
        "failing": checked("failing", query.get("failing"), ["any", *names]),
    }


def run_view(store: ReadOnlyStore, record: RunRecord, query: dict[str, str]) -> dict[str, Any]:
    filters = case_filters(query, record)
    cases = store.case_page(
        record,
        page=page_number(query),
        status=filters["status"],
        category=filters["category"],
        failing=filters["failing"],
    )
    latencies = store.latencies(record.id)
    perspectives = {
        name: [summary_json(s) for s in summaries]
        for name, summaries in by_perspective(record).items()
    }
    return {
        "run": {
            **run_summary(record),
            "config": record.config,
            "run_file_version": RUN_FILE_VERSION,
            "index_stats": record.index_stats.model_dump(mode="json")
            if record.index_stats
            else None,
        },
        "perspectives": perspectives,
        "perspective_groups": {name: list(groups) for name, groups in PERSPECTIVES.items()},
        "weighted_score": record.weighted_score.model_dump(mode="json")
        if record.weighted_score
        else None,
        "goals": [t.model_dump(mode="json") for t in record.goals],
        "breakdowns": {
            field: {group: [summary_json(s) for s in items] for group, items in groups.items()}
            for field, groups in record.breakdowns.items()
        },
        "performance": record.performance.model_dump(mode="json"),
        "judge_cost": store.judge_cost(record.id),
        "judge_reliability": (
            record.judge_reliability.model_dump(mode="json") if record.judge_reliability else None
        ),
        "latency_histogram": [
            {"low": low, "high": high, "count": count}
            for low, high, count in histogram_bins(latencies)
        ],
        "progress": store.progress(record),
        "categories": store.categories(record.id),
        "case_filters": filters,
        "cases": [masked(item.as_json()) for item in cases.items],
        "case_paging": cases.meta(),
    }


# one case -------------------------------------------------------------------------------------
def _find(text: str, part: str, start: int = 0) -> int:
    found = text.find(part, start)
    if found < 0 and len(part.lower()) == len(part) and len(text.lower()) == len(text):
        found = text.lower().find(part.lower(), start)
    return found


def highlights(answer: str, scores: list[Score]) -> list[dict[str, Any]]:
    """Ranges of the answer to mark: leaked spans (offsets in the leakage scores' details) and
    unsupported claims (found in the answer by their text), without overlaps, in order."""
    wanted: list[dict[str, Any]] = []
    claims: list[str] = []
    for score in scores:
        spans = score.details.get("spans")
        if isinstance(spans, list):
            for item in spans:
                if not isinstance(item, dict):
                    continue
                start, end = item.get("start"), item.get("end")
                if not (isinstance(start, int) and isinstance(end, int)):
                    continue
                if 0 <= start < end <= len(answer):
                    note = f"{score.metric}: {item.get('category', '')} {item.get('type', '')}"
                    wanted.append({"start": start, "end": end, "mark": "leak", "note": note})
        unsupported = score.details.get("unsupported_claims")
        if isinstance(unsupported, list):
            claims.extend(c for c in unsupported if isinstance(c, str) and c and c not in claims)
    for claim in claims:
        at = _find(answer, claim)
        if at >= 0:
            wanted.append(
                {"start": at, "end": at + len(claim), "mark": "unsupported", "note": claim}
            )
    kept: list[dict[str, Any]] = []
    for item in wanted:  # leaks first: a claim overlapping a leak is not marked
        if not any(item["start"] < k["end"] and k["start"] < item["end"] for k in kept):
            kept.append(item)
    return sorted(kept, key=lambda k: (k["start"], k["end"]))


def _chunks(case: Case, result: CaseResult | None) -> list[dict[str, Any]]:
    response = result.response if result is not None else None
    if response is None:
        return []
    passages = all_passages(case)
    level = case_level(passages)
    found = []
    for chunk in ranked_chunks(response):
        gold = (chunk.id is not None and chunk.id in case.expected_chunks) or any(
            matches(p, chunk, level) for p in passages
        )
        found.append({**chunk.model_dump(mode="json"), "gold": gold})
    return found


def _citations(case: Case, result: CaseResult | None) -> list[dict[str, Any]]:
    response = result.response if result is not None else None
    if response is None:
        return []
    passages = all_passages(case)
    level = case_level(passages)
    ids = {c.id for c in response.retrieved if c.id}
    docs = {c.doc_id for c in response.retrieved if c.doc_id}
    expected = set(case.expected_citations) | set(case.expected_chunks)
    checked = []
    for citation in response.citations:
        if citation.chunk_id is not None:
            retrieved = citation.chunk_id in ids
        else:
            retrieved = citation.doc_id is not None and citation.doc_id in docs
        gold = any(matches(p, citation, level) for p in passages) or bool(
            {citation.chunk_id, citation.doc_id} & expected
        )
        checked.append(
            {**citation.model_dump(mode="json"), "in_retrieved": retrieved, "gold": gold}
        )
    return checked


def masked_answer(answer: str, marks: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The answer masked, and its highlights moved to the masked text: each piece between and
    within the highlights is masked on its own. Should a secret straddle a highlight's edge
    (a piece left unmasked), the whole answer is masked and the highlights dropped."""
    if redact_text(answer) == answer:
        return answer, [{**m, "note": redact_text(m["note"])} for m in marks]
    pieces, moved, at = [], [], 0
    for mark in marks:
        pieces.append(redact_text(answer[at : mark["start"]]))
        start = sum(map(len, pieces))
        pieces.append(redact_text(answer[mark["start"] : mark["end"]]))
        moved.append(
            {
                **mark,
                "start": start,
                "end": start + len(pieces[-1]),
                "note": redact_text(mark["note"]),
            }
        )
        at = mark["end"]
    pieces.append(redact_text(answer[at:]))
    shown = "".join(pieces)
    if redact_text(shown) != shown:
        return redact_text(answer), []
    return shown, moved


def _score_json(score: Score) -> dict[str, Any]:
    """A score as data; a non-finite stored value (Inf, NaN: older or foreign stores) is shown
    as a failed score without a value."""
    found = asdict(score)
    if score.value is not None and not math.isfinite(score.value):
        found.update(value=None, status="failed", reason=f"non-finite value ({score.value})")
    return found


def case_view(store: ReadOnlyStore, record: RunRecord, case_id: str) -> dict[str, Any]:
    """One case; every stored text masked for secrets (:func:`masked`)."""
    case, result, scores = store.case(record.id, case_id)
    raw = result.response.answer if result is not None and result.response else ""
    answer, marks = masked_answer(raw, highlights(raw, scores))
    shown_case = masked(case.model_dump(mode="json"))
    shown_case["case_id"] = case.case_id  # the id addresses the case: kept as stored
    return {
        "run_id": record.id,
        "run_name": record.name,
        "case": shown_case,
        "result": masked(result.model_dump(mode="json")) if result is not None else None,
        "answer": answer,
        "highlights": marks,
        "retrieved": masked(_chunks(case, result)),
        "citations": masked(_citations(case, result)),
        "scores": masked([_score_json(score) for score in scores]),
        "judge_calls": masked(store.judge_calls(record.id, case_id)),
    }


# comparisons ----------------------------------------------------------------------------------
def compared_ids(values: list[str]) -> tuple[list[str], bool]:
    """The run ids to compare and whether to order them by creation time.

    One ``runs`` value (``?runs=A,B``, comma-separated) keeps the given order: the first is the
    baseline. Repeated values (``?runs=A&runs=B``, as the runs list's checkboxes send them, in
    page order, newest first; or ``?run=A&run=B``) are ordered by creation time: the oldest is
    the baseline."""
    ids: list[str] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if part and part not in ids:
                ids.append(part)
    return ids, len(values) > 1


def run_scores(store: ReadOnlyStore, record: RunRecord) -> CaseValues:
    """A stored run's per-case values and the cases each metric failed or was not reported on
    (``missed``), as ``ragmeter compare`` reads them (``CaseValues.from_store``): a metric paired
    on too few cases is not compared, never a believable verdict."""
    scores = CaseValues(record, *store.values(record.id))
    scores.missed = store.missed(record.id)
    return scores


def compare_view(store: ReadOnlyStore, ids: list[str], by_created: bool = False) -> dict[str, Any]:
    """The comparisons of every run with the baseline: the first of ``ids``, or with
    ``by_created`` the oldest; with ``ragmeter compare``'s defaults (alpha, margin, seed, Holm,
    coverage floor 0.9), so ``/api/compare`` equals ``ragmeter compare --json``."""
    if len(ids) < 2:
        raise ValueError("pick two or more runs to compare (?runs=BASELINE,CANDIDATE)")
    if len(ids) > MAX_COMPARED:
        raise ValueError(f"compare at most {MAX_COMPARED} runs at a time")
    records = [store.get_run(run_id) for run_id in ids]  # NotFound for an unknown id
    if by_created:
        records.sort(key=lambda r: (r.created_at, r.id))
    scores = [run_scores(store, r) for r in records]
    base = scores[0]
    comparisons = [
        compare_runs(
            base,
            other,
            alpha=DEFAULT_ALPHA,
            margin=DEFAULT_MARGIN,
            seed=DEFAULT_SEED,
            correction="holm",
            coverage_floor=DEFAULT_COVERAGE_FLOOR,
            require_shared=True,
        )
        for other in scores[1:]
    ]
    points, dropped = pareto_points(records, None, DEFAULT_COVERAGE_FLOOR)
    return {
        "runs": [run_summary(r) for r in records],
        "baseline": records[0].id,
        "order": "created" if by_created else "given",
        "comparisons": [c.model_dump(mode="json") for c in comparisons],
        "pareto": {
            "quality": "weighted_score",
            "left_out": dropped,
            "points": [asdict(p) for p in points],
        },
    }


__all__ = [
    "NotFound",
    "case_view",
    "compare_view",
    "compared_ids",
    "highlights",
    "masked",
    "run_summary",
    "run_view",
    "runs_view",
]

"""Operational metrics (seed 004): timeouts, empty answers, coverage by document type.

``timeout_rate`` and ``empty_response_rate`` are scored from every case's result, so a failed
query counts in the denominator (as ``error_rate`` does): seed 004's "error rate" (failed, timed
out or empty) is ``error_rate + empty_response_rate``, the two counting disjoint cases.

Coverage by document type (:func:`coverage_by_doc_type`, stored in the run's performance
summary): the cases grouped by the type of their gold documents (from the ``rel_path``, else
the ``doc_id``, of each gold passage: ``markdown``, ``pdf``, ``html``, ``code``, ``text``, or
the extension), with, per type, failed queries, empty answers and how many cases had a gold
passage of that type among the retrieved chunks.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from ragmeter.metrics.base import Metric, MetricOutput
from ragmeter.metrics.passages import all_passages, case_level
from ragmeter.metrics.retrieval import matches
from ragmeter.metrics.shared import SharedDetails
from ragmeter.models import Case, CaseResult, GoldPassage, Response

# error types that are timeouts: the HTTP request's, the per-case limit's, and a Python
# target's own TimeoutError
TIMEOUT_ERRORS = frozenset({"timeout", "case_timeout", "exception:TimeoutError"})
NO_TYPE = "(unknown)"

_TYPES = {
    "md": "markdown",
    "markdown": "markdown",
    "mdx": "markdown",
    "rst": "text",
    "txt": "text",
    "pdf": "pdf",
    "html": "html",
    "htm": "html",
    "docx": "office",
    "doc": "office",
    "pptx": "office",
    "xlsx": "office",
    "csv": "table",
    "tsv": "table",
    "json": "data",
    "yaml": "data",
    "yml": "data",
}
_CODE = frozenset(
    {"py", "ipynb", "js", "jsx", "ts", "tsx", "java", "kt", "go", "rs", "c", "h", "cc", "cpp"}
    | {"hpp", "cs", "rb", "php", "swift", "scala", "sh", "sql", "r"}
)


def is_empty(response: Response) -> bool:
    """An answer that is empty or only white space, from a response that did not say it
    abstained (``abstained: true`` with no text is an answer: "I decline")."""
    return not response.answer.strip() and response.abstained is not True


_ERROR_TYPES = SharedDetails()


def error_type_details(error_type: str | None) -> dict[str, Any]:
    """``{"error_type": error_type}``, one dict per error type (shared by the scores)."""
    return _ERROR_TYPES.get(error_type, lambda: {"error_type": error_type})


def _timeout(_: Case, result: CaseResult) -> MetricOutput:
    return float(result.status != "ok" and result.error_type in TIMEOUT_ERRORS), (
        error_type_details(result.error_type)
    )


def _empty(_: Case, result: CaseResult) -> MetricOutput:
    if result.status != "ok" or result.response is None:
        return 0.0, {"query_failed": result.error_type}  # counted by error_rate
    return float(is_empty(result.response)), {}


def operational_metrics() -> list[Metric]:
    return [
        Metric(
            "timeout_rate",
            "performance",
            None,
            higher_is_better=False,
            on_result=_timeout,
            description="fraction of cases whose query timed out (timeout, case_timeout)",
            kind="binary",
        ),
        Metric(
            "empty_response_rate",
            "performance",
            None,
            higher_is_better=False,
            on_result=_empty,
            description="fraction of cases answered with an empty or white-space answer "
            "(failed queries count as not empty; an explicit abstention is not empty)",
            kind="binary",
        ),
    ]


def doc_type(name: str | None) -> str:
    """The document type of a path or id: ``markdown``, ``pdf``, ``code``, ... or the
    extension; ``(unknown)`` without one."""
    if not name:
        return NO_TYPE
    suffix = PurePosixPath(name.split("#")[0]).suffix.lower().lstrip(".")
    if not suffix:
        return NO_TYPE
    if suffix in _CODE:
        return "code"
    return _TYPES.get(suffix, suffix)


def passage_type(passage: GoldPassage) -> str:
    found = doc_type(passage.rel_path)
    return found if found != NO_TYPE else doc_type(passage.doc_id or passage.chunk_id)


def coverage_by_doc_type(cases: list[Case], results: list[CaseResult]) -> dict[str, Any]:
    """Per document type of the cases' gold passages: cases, failed queries, empty answers, and
    the cases whose retrieved chunks hold a gold passage of that type (of those whose target
    reported retrieved chunks). Cases without gold passages are left out."""
    by_case = {result.case_id: result for result in results}
    rows: dict[str, dict[str, Any]] = {}
    for case in cases:
        passages = all_passages(case)
        if not passages:
            continue
        level = case_level(passages)
        result = by_case.get(case.case_id)
        response = result.response if result is not None and result.status == "ok" else None
        types: dict[str, list[GoldPassage]] = {}
        for passage in passages:
            types.setdefault(passage_type(passage), []).append(passage)
        for kind, typed in types.items():
            row = rows.setdefault(
                kind,
                {"cases": 0, "errors": 0, "empty": 0, "retrieval_reported": 0, "gold_retrieved": 0},
            )
            row["cases"] += 1
            if result is None or response is None:
                row["errors"] += int(result is not None)
                continue
            row["empty"] += int(is_empty(response))
            if response.has("retrieved"):
                row["retrieval_reported"] += 1
                row["gold_retrieved"] += int(
                    any(matches(p, chunk, level) for p in typed for chunk in response.retrieved)
                )
    for row in rows.values():
        reported = row["retrieval_reported"]
        row["gold_retrieved_rate"] = row["gold_retrieved"] / reported if reported else None
    return dict(sorted(rows.items()))

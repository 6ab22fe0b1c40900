"""``ragmeter export``: a stored run as replayable responses, its run file, TREC files or CSV
(:mod:`ragmeter.reports.csv_export`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragmeter.models import CaseResult
from ragmeter.reports.json_report import run_document
from ragmeter.run_record import RunRecord
from ragmeter.store.sqlite import RunStore

EXPORT_FORMATS = (
    "responses",
    "json",
    "trec-run",
    "trec-qrels",
    "csv",
    "csv-wide",
    "ragas",
    "deepeval",
)
DEFAULT_FORMAT = "responses"


def response_lines(results: list[CaseResult]) -> list[dict[str, Any]]:
    """One JSON object a case: its response (``--target replay:FILE`` reads these) or its
    error."""
    lines = []
    for result in results:
        line: dict[str, Any] = {"case_id": result.case_id}
        if result.response is not None:
            line["response"] = result.response.model_dump(mode="json", exclude={"raw"})
        else:
            line["error_type"] = result.error_type
            line["error_message"] = result.error_message
        lines.append(line)
    return lines


def export_run(path: Path, fmt: str, run_store: RunStore, record: RunRecord) -> int:
    """Write ``record`` to ``path`` in ``fmt`` (one of :data:`EXPORT_FORMATS`); return the
    number of cases written."""
    results = run_store.get_results(record.id)
    if fmt in ("csv", "csv-wide"):
        from ragmeter.reports.csv_export import write_csv

        cases = run_store.get_cases(record.id)
        return write_csv(path, fmt, record, cases, results, run_store.get_scores(record.id))
    if fmt in ("ragas", "deepeval"):
        from ragmeter.datasets.interop import export_interop

        return export_interop(path, fmt, run_store.get_cases(record.id), results)
    if fmt == "json":
        document = run_document(record, results, run_store.get_scores(record.id))
        path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    elif fmt in ("trec-run", "trec-qrels"):
        from ragmeter.reports.trec_export import export_trec  # numpy: only when asked for

        export_trec(
            path,
            fmt,
            run_store.get_cases(record.id),
            results,
            record,
            require_snippet=bool(record.config.get("require_snippet", False)),
        )
    else:
        with path.open("w", encoding="utf-8") as handle:
            for line in response_lines(results):
                handle.write(json.dumps(line) + "\n")
    return len(results)

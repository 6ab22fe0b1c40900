"""CSV exports of a stored run (``ragmeter export --format csv|csv-wide``, ``ragmeter report
--format csv``).

``csv``: one row a case and metric: ``run_id, case_id, dataset, category, metric, group, value,
status, reason``. ``csv-wide``: one row a case: ``case_id, category, question, status,
latency_ms`` and one column a metric.

Numbers round-trip: a value is written with ``repr`` (``float(cell) == value``). A skipped or
failed score is an empty cell, never 0; in the long form its ``status`` says skipped or failed
and ``reason`` why. Text cells come from the dataset, the target or plugins: secrets are masked,
escape sequences and control characters removed, and a cell that starts with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return is prefixed with a single quote, so a spreadsheet reads
it as text, not as a formula (OWASP CSV injection).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from ragmeter.models import Case, CaseResult, Score
from ragmeter.redaction import redact_text
from ragmeter.reports.terminal import strip_unsafe
from ragmeter.run_record import RunRecord
from ragmeter.text import visible

__all__ = [
    "CSV_FORMATS",
    "LONG_COLUMNS",
    "WIDE_COLUMNS",
    "long_rows",
    "safe_cell",
    "wide_rows",
    "write_csv",
]

CSV_FORMATS = ("csv", "csv-wide")
LONG_COLUMNS = (
    "run_id",
    "case_id",
    "dataset",
    "category",
    "metric",
    "group",
    "value",
    "status",
    "reason",
)
WIDE_COLUMNS = ("case_id", "category", "question", "status", "latency_ms")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: object) -> str:
    """A text cell: secrets masked, escape sequences and control characters removed, and a
    leading ``= + - @``, tab or carriage return defused with a single quote."""
    if value is None:
        return ""
    raw = str(value)
    text = strip_unsafe(redact_text(raw))
    if raw.startswith(_FORMULA_START) or text.startswith(_FORMULA_START):
        return "'" + text
    return text


def number_cell(value: float | None) -> str:
    """A number written so that it reads back equal (``repr``), or empty."""
    return "" if value is None else repr(float(value))


def _metric_groups(record: RunRecord) -> dict[str, str]:
    card = record.scorecard
    return {m.name: m.group for m in card.metrics} if card else {}


def long_rows(
    record: RunRecord, cases: Sequence[Case], scores: Iterable[Score]
) -> Iterator[list[str]]:
    """One row a score, in the store's order."""
    groups = _metric_groups(record)
    case_of = {case.case_id: case for case in cases}
    run_id = safe_cell(record.id)
    for score in scores:
        case = case_of.get(score.case_id)
        ok = score.status == "ok" and score.value is not None
        yield [
            run_id,
            safe_cell(visible(score.case_id)),
            safe_cell(case.dataset if case else None),
            safe_cell(case.category if case else None),
            safe_cell(score.metric),
            safe_cell(groups.get(score.metric, "")),
            number_cell(score.value) if ok else "",
            score.status if score.value is not None or score.status != "ok" else "no value",
            safe_cell(score.reason),
        ]


def wide_metrics(record: RunRecord, scores: Sequence[Score]) -> list[str]:
    """The metric columns: the scorecard's order, then any other scored metric."""
    names = list(_metric_groups(record))
    seen = set(names)
    for score in scores:
        if score.metric not in seen:
            seen.add(score.metric)
            names.append(score.metric)
    return names


def wide_rows(
    record: RunRecord,
    cases: Sequence[Case],
    results: Sequence[CaseResult],
    scores: Sequence[Score],
) -> Iterator[list[str]]:
    """The header, then one row a case: its fields and one cell a metric (empty when the
    metric skipped or failed the case)."""
    metrics = wide_metrics(record, scores)
    yield [*WIDE_COLUMNS, *(safe_cell(name) for name in metrics)]
    column = {name: i for i, name in enumerate(metrics)}
    values: dict[str, list[str]] = defaultdict(lambda: [""] * len(metrics))
    for score in scores:
        if score.status == "ok" and score.value is not None:
            values[score.case_id][column[score.metric]] = number_cell(score.value)
    result_of = {result.case_id: result for result in results}
    for case in cases:
        result = result_of.get(case.case_id)
        if result is None:
            status = "not answered"
        elif result.status == "ok":
            status = "ok"
        else:
            status = f"error: {result.error_type or 'error'}"
        yield [
            safe_cell(visible(case.case_id)),
            safe_cell(case.category),
            safe_cell(case.question),
            safe_cell(status),
            number_cell(
                result.latency_ms if result is not None and result.status == "ok" else None
            ),
            *values.get(case.case_id, [""] * len(metrics)),
        ]


def write_csv(
    path: Path,
    fmt: str,
    record: RunRecord,
    cases: Sequence[Case],
    results: Sequence[CaseResult],
    scores: Sequence[Score],
) -> int:
    """Write ``fmt`` (``csv`` or ``csv-wide``) to ``path``; return the number of cases."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        if fmt == "csv-wide":
            writer.writerows(wide_rows(record, cases, results, scores))
        else:
            writer.writerow(LONG_COLUMNS)
            writer.writerows(long_rows(record, cases, scores))
    return len(cases)

"""The HTML run report's per-case table and its data: one ``<tbody>`` a case (id, category,
status, latency, the metrics it fails or scores low on) with a ``<details>`` drill-down that the
inline script fills from one embedded JSON blob when it is first opened.

The blob stays compact so a 10,000-case run fits in ~20 MB: scores are one dense array a case
aligned with the metric list (a number when scored; ``[1, reason]`` skipped, ``[2, reason]``
failed (a non-finite stored value too, with the reason "non-finite value"), ``[3, reason]``
stored "ok" with no value; ``null`` when the case has no score for the metric); reasons, chunk,
document and gold ids are interned in one string table and each distinct set of score details in
another (a case lists ``metric, details`` index pairs); numbers are rounded to 5 significant
digits, and retrieved chunk text is cut to a length that shrinks as the run grows (its full
length is kept and shown). Texts are masked for secrets and stripped of control characters and
escape sequences; the page escapes them (``script_json``) and the script inserts them as text
only.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from ragmeter.models import Case, CaseResult, Response, Score
from ragmeter.redaction import redact_text
from ragmeter.reports.case_details import is_low
from ragmeter.reports.detail_lines import detail_lines, useful_details
from ragmeter.reports.html.format import esc
from ragmeter.reports.terminal import strip_unsafe
from ragmeter.run_record import MetricSummary, RunRecord

__all__ = ["CaseData", "case_data", "case_table", "chunk_limit", "clean"]

TEXT_LIMIT = 4000  # characters of a question, reference, answer or error kept
REASON_LIMIT = 600
CHUNK_BUDGET = 4_000_000  # characters of chunk text for the whole report
CHUNK_MIN, CHUNK_MAX = 80, 600
NAMES_SHOWN = 3  # failing metrics named in a row before "+N more"
_STATUS = {"skipped": 1, "failed": 2}
NO_VALUE = 3  # a score stored "ok" without a value (the CSV's "no value")


def clean(text: str | None, limit: int = TEXT_LIMIT) -> str | None:
    """Secrets masked, escape sequences and control characters removed, cut to ``limit``
    characters (the cut marked with the full length)."""
    if text is None:
        return None
    shown = strip_unsafe(redact_text(text[: limit + 256]))
    if len(text) > limit:
        return shown[:limit] + f" … ({len(text)} chars)"
    return shown


def chunk_limit(results: Sequence[CaseResult]) -> int:
    """Characters of each retrieved chunk's text kept: the budget shared by every chunk,
    between :data:`CHUNK_MIN` and :data:`CHUNK_MAX`."""
    total = sum(len(r.response.retrieved) for r in results if r.response is not None)
    return max(CHUNK_MIN, min(CHUNK_MAX, CHUNK_BUDGET // max(total, 1)))


def _number(value: float) -> float | int | None:
    """``value`` rounded to 5 significant digits; ``None`` for Inf and NaN (not JSON)."""
    if not math.isfinite(value):
        return None
    if float(value).is_integer() and abs(value) < 1e15:
        return int(value)
    return float(f"{value:.5g}")


def metric_format(summary: MetricSummary | None) -> str:
    """How the script formats a metric's value (``format_value``'s rules): t a total, d a
    duration, c a cost, n a count, p three decimals."""
    if summary is None:
        return "p"
    if summary.aggregation == "sum":
        return "t"
    return {"duration": "d", "cost": "c", "count": "n"}.get(summary.value_kind() or "", "p")


def _gold_match(case: Case) -> tuple[set[str], set[str], set[str], set[tuple[str, str]]]:
    passages = [*case.gold_passages, *(p for g in case.required_support_groups for p in g.passages)]
    chunks = {p.chunk_id for p in passages if p.chunk_id} | set(case.expected_chunks)
    docs = {p.doc_id for p in passages if p.doc_id and not p.chunk_id}
    paths = {p.rel_path for p in passages if p.rel_path and not (p.chunk_id or p.doc_id)}
    headed = {
        (p.rel_path, p.heading_path)
        for p in passages
        if p.rel_path and p.heading_path and not (p.chunk_id or p.doc_id)
    }
    return chunks, docs, paths - {path for path, _ in headed}, headed


def _chunks(
    case: Case, response: Response, limit: int, intern: Callable[[str | None], int]
) -> list[list[Any]]:
    chunks, docs, paths, headed = _gold_match(case)
    rows = []
    for chunk in response.retrieved:
        gold = (
            (chunk.id is not None and chunk.id in chunks)
            or (chunk.doc_id is not None and chunk.doc_id in docs)
            or (chunk.rel_path is not None and chunk.rel_path in paths)
            or (chunk.rel_path, chunk.heading_path) in headed
        )
        text = chunk.text or ""
        rows.append(
            [
                intern(chunk.id),
                intern(chunk.doc_id),
                chunk.rank,
                None if chunk.score is None else _number(chunk.score),
                1 if gold else 0,
                clean(text[:limit], limit) or "",
                len(text),
            ]
        )
    return rows


class CaseData:
    """The data blob and the failing metrics of each case, built in one pass."""

    def __init__(
        self,
        record: RunRecord,
        cases: Sequence[Case],
        results: Sequence[CaseResult],
        scores: Sequence[Score],
    ) -> None:
        card = record.scorecard
        self.summaries: dict[str, MetricSummary] = {m.name: m for m in card.metrics} if card else {}
        names = list(self.summaries)
        seen = set(names)
        for score in scores:
            if score.metric not in seen:
                seen.add(score.metric)
                names.append(score.metric)
        self.names = names
        self.index = {name: i for i, name in enumerate(names)}
        self.strings: dict[str, int] = {}
        self._cleaned: dict[str, int] = {}
        self.details: dict[str, int] = {}
        self._detail_lines: list[list[tuple[str, str]]] = []
        self.limit = chunk_limit(results)
        by_case: dict[str, list[Score]] = defaultdict(list)
        for score in scores:
            by_case[score.case_id].append(score)
        result_of = {r.case_id: r for r in results}
        self.cases = list(cases)
        self.results = [result_of.get(case.case_id) for case in self.cases]
        self.failing: list[list[str]] = []
        self.blob: list[dict[str, Any]] = []
        for case, result in zip(self.cases, self.results, strict=True):
            self._add(case, result, by_case.get(case.case_id, []))

    def intern(self, text: str | None) -> int:
        """The index of ``text`` (cleaned, cut at :data:`REASON_LIMIT`) in the string table; -1
        for none."""
        if not text:
            return -1
        found = self._cleaned.get(text)
        if found is None:
            shown = clean(text, REASON_LIMIT) or ""
            found = self._cleaned[text] = self.strings.setdefault(shown, len(self.strings))
        return found

    def _details(self, details: dict[str, Any]) -> int:
        """The index of the lines of ``details`` in the details table; -1 for none worth
        showing."""
        useful = useful_details(details)
        if not useful:
            return -1
        key = json.dumps(useful, sort_keys=True, default=str)
        found = self.details.get(key)
        if found is None:
            lines = detail_lines(details)
            found = self.details[key] = len(self._detail_lines) if lines else -1
            if lines:
                self._detail_lines.append(lines)
        return found

    def _add(self, case: Case, result: CaseResult | None, own: list[Score]) -> None:
        response = result.response if result is not None else None
        dense: list[Any] = [None] * len(self.names)
        details: list[int] = []
        failing: list[str] = []
        if result is not None and result.status != "ok":
            failing.append("e")
        for score in own:
            position = self.index[score.metric]
            summary = self.summaries.get(score.metric)
            broken = score.value is not None and not math.isfinite(score.value)
            if score.status == "ok" and score.value is not None and not broken:
                dense[position] = _number(score.value)
            elif broken:
                dense[position] = [2, self.intern(f"non-finite value ({score.value})")]
            elif score.status == "ok":
                dense[position] = [NO_VALUE, self.intern(score.reason)]
            else:
                dense[position] = [_STATUS.get(score.status, 2), self.intern(score.reason)]
            failed = score.status == "failed" or broken
            if failed or (not broken and is_low(score, summary)):
                failing.append(str(position))
            if failed and "!" not in failing:
                failing.append("!")
            if score.details:
                found = self._details(score.details)
                if found >= 0:
                    details += [position, found]
        entry: dict[str, Any] = {
            "id": clean(case.case_id, 300),
            "q": clean(case.question),
            "r": clean(case.reference_answer)
            if case.reference_answer
            else (None if case.answerable else "(unanswerable)"),
            "a": clean(response.answer) if response is not None else None,
            "ab": response.abstained if response is not None else None,
            "e": clean(f"{result.error_type or 'error'}: {result.error_message or ''}")
            if result is not None and result.status != "ok"
            else None,
            "g": [
                self.intern(p.chunk_id or p.doc_id or p.rel_path)
                for p in [
                    *case.gold_passages,
                    *(p for g in case.required_support_groups for p in g.passages),
                ]
            ],
            "s": dense,
        }
        if response is not None and response.has("retrieved"):
            entry["k"] = _chunks(case, response, self.limit, self.intern)
        if response is not None and response.has("citations"):
            retrieved = {c.id for c in response.retrieved if c.id}
            entry["c"] = [
                [
                    self.intern(c.chunk_id or c.doc_id or c.rel_path),
                    clean(c.quote, 600),
                    1 if c.chunk_id is None or c.chunk_id in retrieved else 0,
                ]
                for c in response.citations
            ]
        if details:
            entry["d"] = details
        self.failing.append(failing)
        self.blob.append(entry)

    def document(self) -> dict[str, Any]:
        """The JSON the page embeds."""
        metrics = []
        for name in self.names:
            summary = self.summaries.get(name)
            metrics.append(
                [
                    clean(name, 200),
                    metric_format(summary),
                    clean(summary.unit, 40) if summary and summary.unit else None,
                    1 if summary is None or summary.higher_is_better else 0,
                ]
            )
        return {
            "metrics": metrics,
            "strings": list(self.strings),
            "details": self._detail_lines,
            "chunk_chars": self.limit,
            "cases": self.blob,
        }


def case_data(
    record: RunRecord,
    cases: Sequence[Case],
    results: Sequence[CaseResult],
    scores: Sequence[Score],
) -> CaseData:
    return CaseData(record, cases, results, scores)


def _cases(count: int) -> str:
    return f"{count} case" if count == 1 else f"{count} cases"


def _filters(data: CaseData) -> str:
    per_metric: dict[str, int] = defaultdict(int)
    for failing in data.failing:
        for key in failing:
            per_metric[key] += 1
    failing_cases = sum(1 for failing in data.failing if "e" in failing or "!" in failing)
    options = ['<option value="">all cases</option>']
    options.append(
        f'<option value="any">a target error or a failed score ({_cases(failing_cases)})</option>'
    )
    if per_metric.get("e"):
        options.append(f'<option value="e">target error ({_cases(per_metric["e"])})</option>')
    for position, name in enumerate(data.names):
        count = per_metric.get(str(position))
        if count:
            options.append(f'<option value="{position}">{esc(name)} ({_cases(count)})</option>')
    categories = sorted({case.category or "(none)" for case in data.cases})
    cat_options = ['<option value="">all categories</option>'] + [
        f'<option value="{esc(c)}">{esc(c)}</option>' for c in categories
    ]
    return (
        '<div class="filters" role="search" aria-label="Filter the cases">'
        '<div><label for="f-metric">Failing or low on</label>'
        f'<select id="f-metric">{"".join(options)}</select></div>'
        '<div><label for="f-cat">Category</label>'
        f'<select id="f-cat">{"".join(cat_options)}</select></div>'
        '<div><label for="f-text">Case id contains</label>'
        '<input id="f-text" type="search" autocomplete="off"></div>'
        f'<p id="f-count" class="note" aria-live="polite">{len(data.cases)} cases</p></div>'
    )


def case_table(data: CaseData) -> str:
    """The filters and the table: one ``<tbody>`` a case; the script adds its drill-down row
    when the case's ``<details>`` first opens."""
    rows = []
    for position, (case, result, failing) in enumerate(
        zip(data.cases, data.results, data.failing, strict=True)
    ):
        status = "not answered" if result is None else result.status
        latency = "-" if result is None or result.latency_ms is None else f"{result.latency_ms:.1f}"
        names = [data.names[int(key)] for key in failing if key not in ("e", "!")]
        shown = ", ".join(esc(name) for name in names[:NAMES_SHOWN])
        if len(names) > NAMES_SHOWN:
            shown += f" (+{len(names) - NAMES_SHOWN} more)"
        status_class = "pass" if status == "ok" else "fail"
        category = case.category or "(none)"
        rows.append(
            f'<tbody class="case" data-c="{esc(category)}" '
            f'data-f="{" ".join(failing)}"><tr><th scope="row"><details data-i="{position}">'
            f"<summary>{esc(case.case_id)}</summary></details></th><td>{esc(category)}</td>"
            f'<td class="{status_class}">{esc(status)}</td><td class="num">{latency}</td>'
            f"<td>{shown}</td></tr></tbody>"
        )
    head = (
        '<table class="cases"><caption class="note">One row a case; open a case id for its '
        "question, answer, retrieved chunks (gold ones marked), citations and every score."
        '</caption><thead><tr><th scope="col">case</th><th scope="col">category</th>'
        '<th scope="col">status</th><th scope="col" class="num">latency ms</th>'
        '<th scope="col">failing or low metrics</th></tr></thead>'
    )
    return _filters(data) + '<div class="scroll">' + head + "".join(rows) + "</table></div>"

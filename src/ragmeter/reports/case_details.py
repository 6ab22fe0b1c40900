"""``ragmeter show RUN --details``: every case's question, answer, reference and outcome, and
each metric's value or the reason it was skipped or failed, with the parts of the score's
details a person debugging wants (unsupported claims, missing keywords, judge reasoning, ...).

Everything shown here was written by the dataset, the target or the judge: it is masked for
secrets (:func:`ragmeter.redaction.redact_text`), made inert
(:func:`ragmeter.reports.terminal.inert`) and built into rich ``Text`` (never parsed as markup).
:func:`case_details_json` gives the same selection as plain data.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from ragmeter.errors import InputError
from ragmeter.models import Case, CaseResult, Response, Score
from ragmeter.redaction import masked
from ragmeter.reports.console import format_value
from ragmeter.reports.detail_lines import ITEM_LIMIT, clip, detail_lines, useful_details
from ragmeter.run_record import MetricSummary, Scorecard
from ragmeter.text import visible

ANSWER_LIMIT = 600  # characters of a question, answer, reference or error shown by default
IDS = 10  # retrieved / cited / gold ids shown
REPAIRED = "lone surrogate(s) in the reply's text replaced by U+FFFD (not valid Unicode)"
LOW_BELOW = 0.5  # a 0..1 (or 0-5) score below half its scale (above, for lower-is-better)


@dataclass
class _Shown:
    case: Case
    result: CaseResult | None
    scores: list[Score]
    failing: bool


def _directions(scorecard: Scorecard | None, names: set[str]) -> dict[str, MetricSummary]:
    """Direction and unit of each metric: the run's scorecard, else the registered metrics."""
    known = {m.name: m for m in scorecard.metrics} if scorecard else {}
    missing = names - set(known)
    if missing:
        try:
            from ragmeter.metrics.family import declarations
            from ragmeter.registry import registry

            for family in registry.names("metrics"):
                for metric in declarations(family):
                    if metric.name in missing:
                        known[metric.name] = MetricSummary(
                            **metric.model_dump(exclude={"family", "requires", "description"}),
                            value=None,
                            n_scored=0,
                            n_skipped=0,
                            n_failed=0,
                        )
        except Exception:  # a broken plugin must not stop the view: direction unknown
            pass
    return known


def is_low(score: Score, summary: MetricSummary | None, below: float = LOW_BELOW) -> bool:
    """True when an ok score is in the bad part of its scale: under ``below`` of a 0..1 (or
    0-5) higher-is-better scale, over 1 - ``below`` of a lower-is-better one, any count of a
    lower-is-better count (unsupported claims). Latency and cost are never low."""
    if score.status != "ok" or score.value is None or summary is None:
        return False
    if summary.aggregation in ("auc", "tpr_at_fpr_1", "tpr_at_fpr_5"):
        return False  # a detector's score (metrics.base.DETECTOR_AGGREGATIONS): not good or bad
    kind, scale = summary.value_kind(), summary.value_scale()
    if kind in ("binary", "proportion", "score") and scale is not None:
        share = (score.value - scale[0]) / (scale[1] - scale[0])
        return share < below if summary.higher_is_better else share > 1.0 - below
    if kind != "count" or summary.higher_is_better:
        return False
    return score.value > 0


def _select(
    cases: Sequence[Case],
    results: Sequence[CaseResult],
    scores: Sequence[Score],
    only_failing: bool,
    metrics: list[str] | None,
    scorecard: Scorecard | None,
    low_below: float,
) -> tuple[list[_Shown], dict[str, MetricSummary]]:
    if metrics:
        known = {s.metric for s in scores}
        unknown = [m for m in metrics if m not in known]
        if unknown:
            names = sorted(known)
            listed = ", ".join(names[:30]) + (
                f" (+{len(names) - 30} more)" if len(names) > 30 else ""
            )
            raise InputError(
                f"no scores for metric(s) {', '.join(map(repr, unknown))} in this run; "
                f"scored metrics: {listed or 'none'}"
            )
    wanted = set(metrics) if metrics else None
    by_case: dict[str, list[Score]] = defaultdict(list)
    for score in scores:
        if wanted is None or score.metric in wanted:
            by_case[score.case_id].append(score)
    result_of = {r.case_id: r for r in results}
    summaries = (
        _directions(scorecard, set(wanted or ()))
        if wanted
        else ({m.name: m for m in scorecard.metrics} if scorecard else {})
    )
    shown = []
    for case in cases:
        result = result_of.get(case.case_id)
        own = by_case.get(case.case_id, [])
        failing = (
            (result is not None and result.status != "ok")
            or any(s.status == "failed" for s in own)
            or bool(wanted and any(is_low(s, summaries.get(s.metric), low_below) for s in own))
        )
        if only_failing and not failing:
            continue
        shown.append(_Shown(case, result, own, failing))
    return shown, summaries


def _ids(values: Sequence[str | None]) -> str:
    present = [v for v in values if v]
    more = len(present) - IDS
    return ", ".join(present[:IDS]) + (f" (+{more} more)" if more > 0 else "")


def _retrieved(response: Response | None) -> str:
    if response is None or not response.has("retrieved"):
        return ""
    if not response.retrieved:
        return "(none)"
    return _ids([c.id or c.doc_id or c.rel_path for c in response.retrieved])


def _cited(response: Response | None) -> str:
    if response is None or not response.has("citations"):
        return ""
    if not response.citations:
        return "(none)"
    return _ids([c.chunk_id or c.doc_id or c.rel_path for c in response.citations])


def _gold(case: Case) -> str:
    passages = [*case.gold_passages, *(p for g in case.required_support_groups for p in g.passages)]
    return _ids([p.chunk_id or p.doc_id or p.rel_path for p in passages])


def _status(result: CaseResult | None) -> str:
    return "not answered" if result is None else result.status


def _header(item: _Shown) -> Text:
    result = item.result
    title = Text("case ")
    title.append(clip(visible(item.case.case_id), ITEM_LIMIT), style="bold")
    title.append(" · ")
    title.append(_status(result), style="green" if result and result.status == "ok" else "red")
    if result is not None and result.latency_ms is not None:
        title.append(f" · {result.latency_ms:.1f} ms")
    if result is not None and result.attempts > 1:
        title.append(f" · {result.attempts} attempts")
    if item.failing and result is not None and result.status == "ok":
        title.append(" · failing", style="yellow")
    return title


def _fields(item: _Shown, max_chars: int) -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    case, result = item.case, item.result
    response = result.response if result is not None else None

    def add(label: str, text: str | None, style: str = "") -> None:
        if text is None or text == "":
            return
        limit = max_chars or len(text)
        shown = Text(clip(text, limit), style=style)
        if len(text) > limit:
            more = f" ({len(text) - limit:,} more characters; --max-chars 0 shows them)"
            shown.append(more, style="dim")
        grid.add_row(label, shown)

    add("question", case.question)
    if result is not None and result.status != "ok":
        error = f"{result.error_type or 'error'}: {result.error_message or ''}".rstrip(": ")
        add("error", error, style="red")
    if response is not None:
        add("answer", response.answer if response.answer.strip() else "(empty)")
        if response.abstained is not None:
            add("abstained", "yes" if response.abstained else "no")
        if response.text_repairs:
            add("repaired", f"{response.text_repairs} {REPAIRED}", style="yellow")
    add("reference", case.reference_answer or ("(unanswerable)" if not case.answerable else ""))
    add("gold", _gold(case))
    add("retrieved", _retrieved(response))
    add("cited", _cited(response))
    return grid


def _value(score: Score, summary: MetricSummary | None, low: bool) -> Text:
    if score.status == "skipped":
        return Text("skipped", style="dim")
    if score.status == "failed":
        return Text("failed", style="red")
    value = format_value(summary, score.value) if summary is not None else f"{score.value:.3f}"
    return Text(value, style="yellow" if low else "")


def _scores(item: _Shown, summaries: dict[str, MetricSummary], low_below: float) -> Table:
    table = Table(show_edge=False, pad_edge=False, box=None, show_header=True)
    table.add_column("metric", no_wrap=True, style="cyan")
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("why", overflow="fold", ratio=1)
    for score in item.scores:
        summary = summaries.get(score.metric)
        why = Text()
        if score.reason:
            why.append(
                clip(score.reason, ITEM_LIMIT * 3),
                style="dim"
                if score.status == "skipped"
                else "red"
                if score.status == "failed"
                else "",
            )
        for label, text in detail_lines(score.details):
            if why:
                why.append("\n")
            if label:
                why.append(f"{label}: ", style="bold")
            why.append(text)
        table.add_row(
            clip(score.metric, ITEM_LIMIT),
            _value(score, summary, is_low(score, summary, low_below)),
            why,
        )
    return table


def case_details(
    cases: list[Case],
    results: list[CaseResult],
    scores: list[Score],
    *,
    only_failing: bool = False,
    metrics: list[str] | None = None,
    scorecard: Scorecard | None = None,
    low_below: float = LOW_BELOW,
    max_chars: int = ANSWER_LIMIT,
) -> list[RenderableType]:
    """One block a case: id, status, latency; question, answer (cut at ``max_chars``, 0: whole),
    reference, error, gold / retrieved / cited ids; then each metric's value, or skipped /
    failed with the reason, and its useful details.

    ``metrics`` limits the metrics shown (ValueError for a metric the run has no score of).
    ``only_failing`` keeps the cases whose query failed, with a failed score, or (for the
    metrics named in ``metrics``) with a low score (:func:`is_low`; the run's ``scorecard``
    gives each metric's direction and scale, else the registered metrics do).
    """
    shown, summaries = _select(cases, results, scores, only_failing, metrics, scorecard, low_below)
    blocks: list[RenderableType] = []
    for item in shown:
        parts: list[RenderableType] = [
            Rule(_header(item), align="left"),
            _fields(item, max_chars),
        ]
        if item.scores:
            parts.append(_scores(item, summaries, low_below))
        elif item.result is not None:
            parts.append(Text("no scores", style="dim"))
        blocks.append(Group(*parts))
    what = "failing " if only_failing else ""
    footer = Text(f"{len(shown)} {what}case(s) of {len(cases)}", style="dim")
    if only_failing:
        footer.append(
            " (failing: the query failed, a score failed"
            + (", or a named metric scored low)" if metrics else ")"),
            style="dim",
        )
    blocks.append(footer)
    return blocks


def case_details_json(
    cases: list[Case],
    results: list[CaseResult],
    scores: list[Score],
    *,
    only_failing: bool = False,
    metrics: list[str] | None = None,
    scorecard: Scorecard | None = None,
    low_below: float = LOW_BELOW,
) -> list[dict[str, Any]]:
    """The cases :func:`case_details` shows, as JSON-ready dicts: texts whole, masked for
    secrets as in every other view (:func:`ragmeter.redaction.masked`); ``json.dumps`` escapes
    their control characters."""
    shown, summaries = _select(cases, results, scores, only_failing, metrics, scorecard, low_below)
    documents = []
    for item in shown:
        case, result = item.case, item.result
        response = result.response if result is not None else None
        documents.append(
            masked(
                {
                    "case_id": case.case_id,
                    "status": _status(result),
                    "failing": item.failing,
                    "error_type": result.error_type if result else None,
                    "error_message": result.error_message if result else None,
                    "latency_ms": result.latency_ms if result else None,
                    "attempts": result.attempts if result else None,
                    "question": case.question,
                    "answer": response.answer if response is not None else None,
                    "abstained": response.abstained if response is not None else None,
                    "text_repairs": response.text_repairs if response is not None else 0,
                    "reference_answer": case.reference_answer,
                    "answerable": case.answerable,
                    "gold": [
                        p.chunk_id or p.doc_id or p.rel_path
                        for p in [
                            *case.gold_passages,
                            *(p for g in case.required_support_groups for p in g.passages),
                        ]
                    ],
                    "retrieved": [c.id or c.doc_id or c.rel_path for c in response.retrieved]
                    if response is not None
                    else [],
                    "cited": [c.chunk_id or c.doc_id or c.rel_path for c in response.citations]
                    if response is not None
                    else [],
                    "scores": {
                        s.metric: {
                            "status": s.status,
                            "value": s.value,
                            "low": is_low(s, summaries.get(s.metric), low_below),
                            "reason": s.reason,
                            "details": useful_details(s.details),
                        }
                        for s in item.scores
                    },
                }
            )
        )
    return documents

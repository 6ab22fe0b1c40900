"""The Markdown report (seed 003's "Output Files"): written beside the run JSON as
``<same stem>.md``, with the run's header, a section a perspective (every metric: value, 95%
interval, n/skip/fail) and the goals with pass, fail or not measured.

Text that comes from the run (names, datasets, metric names) is made inert: pipes,
backticks, brackets, asterisks and the like are escaped and ``<`` / ``>`` / ``&`` become
entities, so nothing in a dataset or a goals file can change the table or inject HTML.
"""

from __future__ import annotations

import re
from pathlib import Path

from ragmeter.reports.console import format_value, goal_value, under_coverage
from ragmeter.reports.failures import failure_summary
from ragmeter.reports.operational import reading_notes
from ragmeter.reports.perspectives import by_perspective, goal_perspective
from ragmeter.run_record import GoalResult, MetricSummary, RunRecord, Scorecard
from ragmeter.scoring.goals import goal_condition

__all__ = ["markdown_path", "md_text", "render_markdown", "write_markdown"]

_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~])")


def md_text(value: object) -> str:
    """``value`` as inert Markdown inline text (one line, no HTML, no markup)."""
    text = " ".join(str(value).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", text)


def _interval(summary: MetricSummary) -> str:
    if summary.ci_low is None or summary.ci_high is None:
        return "-"
    return f"{format_value(summary, summary.ci_low)} - {format_value(summary, summary.ci_high)}"


def _metric_rows(summaries: list[MetricSummary]) -> list[str]:
    rows = [
        "| metric | value | 95% CI | n | skip | fail | coverage |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for summary in summaries:
        arrow = "↑" if summary.higher_is_better else "↓"
        coverage = "-" if summary.coverage is None else f"{summary.coverage:.0%}"
        if summary.failed_as and summary.n_failed:
            coverage += f" (failed as {summary.failed_as})"
        rows.append(
            f"| {md_text(summary.name)} {arrow} | {md_text(format_value(summary, summary.value))}"
            f" | {md_text(_interval(summary))} | {summary.n_scored} | {summary.n_skipped} "
            f"| {summary.n_failed} | {md_text(coverage)} |"
        )
    return rows


def _goal_rows(results: list[GoalResult], scorecard: Scorecard | None) -> list[str]:
    rows = ["| metric | goal | value | status |", "|---|---|---:|---|"]
    for result in results:
        status = {"pass": "✅ pass", "fail": "❌ fail"}.get(result.status, "not measured")
        if result.reason:
            status += f": {md_text(result.reason)}"
        if result.optional and result.status == "not_measured":
            status += " (optional)"
        value = md_text(goal_value(result, scorecard))
        condition = md_text(goal_condition(result))
        rows.append(f"| {md_text(result.metric)} | {condition} | {value} | {status} |")
    return rows


def _failure_lines(record: RunRecord) -> list[str]:
    """The failure summary (``reports/failures.py``): failed cases by error type with an
    example each, metrics skipped on every case with the reason."""
    summary = failure_summary(record)
    if not summary:
        return []
    lines = ["", "## Failures and skips", ""]
    if summary.all_failed:
        lines += [
            f"**Every case failed** ({summary.failed} of {summary.questions}): nothing was "
            "measured.",
            "",
        ]
    elif summary.failed:
        lines += [f"{summary.failed} of {summary.questions} case(s) failed (target errors).", ""]
    for group in summary.errors:
        example = f": {md_text(group.example)}" if group.example else ""
        lines.append(f"- {md_text(group.error_type)} {group.count}{example}")
    for skipped in summary.skipped:
        lines.append(
            f"- {md_text(skipped.names(None))}: {skipped.outcome}: {md_text(skipped.reason)}"
        )
    return lines


def render_markdown(record: RunRecord) -> str:
    """The run as a Markdown document."""
    config = record.config
    lines = [
        f"# Evaluation report: {md_text(record.name)}",
        "",
        f"- run: `{record.id}`" if re.fullmatch(r"[\w-]+", record.id) else f"- run: {record.id}",
        f"- status: {md_text(record.status)}",
        f"- created: {md_text(record.created_at)}",
        f"- datasets: {', '.join(md_text(d) for d in record.datasets) or '-'}",
        f"- questions: {record.question_count} · errors: {record.error_count}",
        f"- suite: {md_text(config.get('suite', 'full'))}",
        f"- perspectives: {', '.join(md_text(p) for p in config.get('perspectives') or ['all'])}",
    ]
    if record.status != "completed":
        lines.append(
            f"- **not finished**: the run is {md_text(record.status)} and not scored yet; "
            f"finish it with `ragmeter eval --resume {md_text(record.id)}`"
        )
    weighted = record.weighted_score
    thin = under_coverage(weighted, md_text) if weighted is not None else ""
    if weighted is not None and (weighted.score is not None or thin):
        shown = "-" if weighted.score is None else f"{weighted.score:.3f}"
        notes = (
            [f"missing: {', '.join(map(md_text, weighted.missing))}"] if weighted.missing else []
        )
        if thin:
            notes.append(thin)
        lines.append(f"- weighted score: {shown}" + (f" ({'; '.join(notes)})" if notes else ""))
    lines += [f"- {md_text(note)}" for note in reading_notes(record)]
    lines += _failure_lines(record)
    goals: dict[str, list[GoalResult]] = {}
    for result in record.goals:
        goals.setdefault(goal_perspective(result, record), []).append(result)
    for perspective, summaries in by_perspective(record).items():
        lines += ["", f"## {md_text(perspective)}", "", *_metric_rows(summaries)]
        if perspective in goals:
            lines += ["", "Goals:", "", *_goal_rows(goals.pop(perspective), record.scorecard)]
    lines += ["", "## Goals", ""]
    if record.goals:
        lines += _goal_rows(record.goals, record.scorecard)
    elif record.status != "completed":
        lines.append("Not evaluated: the run is not scored yet.")
    else:
        lines.append("No goals.")
    lines += ["", "Counts: n scored, skipped and failed cases. Intervals: 95% bootstrap.", ""]
    return "\n".join(lines)


def markdown_path(run_file: Path) -> Path:
    """The Markdown report's path: beside the run file, with its stem."""
    return run_file.with_suffix(".md")


def write_markdown(record: RunRecord, run_file: Path) -> Path:
    path = markdown_path(run_file)
    path.write_text(render_markdown(record), encoding="utf-8")
    return path

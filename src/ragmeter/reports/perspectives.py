"""The scorecard by seed 003's perspectives: the compact console view of ``ragmeter eval`` (its
default; ``-v`` prints the full scorecard) and the sections the Markdown report is made of.

A perspective is a set of metric groups (:data:`ragmeter.metrics.base.PERSPECTIVES`). The
compact view shows each perspective's headline metrics (:data:`HEADLINES`; a perspective none of
whose headline metrics was measured shows its first metric), then the goals and what failed.
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from ragmeter.metrics.base import PERSPECTIVES, perspective_of
from ragmeter.reports.console import (
    _counts,
    _interval,
    format_value,
    goals_table,
    reliability_line,
    weighted_line,
)
from ragmeter.reports.failures import SkipGroup, failure_summary
from ragmeter.reports.operational import response_format_line, retrieval_matching_line
from ragmeter.reports.terminal import inert
from ragmeter.run_record import GoalResult, MetricSummary, RunRecord
from ragmeter.runner.selection import TARGET_PERSPECTIVE_ALIASES

# perspective -> its headline metrics, in the order shown (docs/runs.md)
HEADLINES: dict[str, tuple[str, ...]] = {
    "retrieval": ("ndcg_at_5", "recall_at_5", "mrr"),
    "context_quality": ("redundancy_ngram", "fact_recall_in_context"),
    "groundedness": ("claim_support_rate", "citation_validity_form", "numeric_fabrication_count"),
    "safety": ("injection_auc", "injection_tpr_at_fpr_1", "leakage_detection_rate"),
    "pipeline": ("pipeline_pass_rate", "pipeline_outcome_match"),
    "answer": ("correctness", "token_f1", "unanswerable_accuracy", "abstention_accuracy"),
    "operational": ("latency_p95", "error_rate"),
}

# headline metrics shown only when the run scored them: abstention_accuracy is over the
# unanswerable cases alone, beside unanswerable_accuracy over all (which a run of mostly
# answerable cases keeps high however few unanswerable ones the system refused)
SHOWN_WHEN_SCORED = frozenset({"abstention_accuracy"})

__all__ = [
    "HEADLINES",
    "by_perspective",
    "failure_notes",
    "goal_perspective",
    "headline_metrics",
    "print_compact",
    "summary_notes",
]


def by_perspective(record: RunRecord) -> dict[str, list[MetricSummary]]:
    """The scorecard's metrics by perspective, in :data:`PERSPECTIVES` order (only those the
    run measured, and only the run's own perspectives when it named some)."""
    found: dict[str, list[MetricSummary]] = {name: [] for name in PERSPECTIVES}
    if record.scorecard is None:
        return {}
    for group, names in record.scorecard.by_group.items():
        for name in names:
            summary = record.scorecard.get(name)
            if summary is not None:
                found[perspective_of(group)].append(summary)
    chosen = record.config.get("perspectives")
    return {
        name: summaries
        for name, summaries in found.items()
        if summaries and (not chosen or name in chosen)
    }


def headline_metrics(perspective: str, summaries: list[MetricSummary]) -> list[MetricSummary]:
    """A perspective's headline metrics that the run has (else its first metric)."""
    named = {summary.name: summary for summary in summaries}
    chosen = [
        named[name]
        for name in HEADLINES.get(perspective, ())
        if name in named and (name not in SHOWN_WHEN_SCORED or named[name].n_scored)
    ]
    return chosen or summaries[:1]


def goal_perspective(result: GoalResult, record: RunRecord) -> str:
    """The perspective of a target: of its metric's group, else the target's own label."""
    if record.scorecard is not None:
        for group, names in record.scorecard.by_group.items():
            if result.metric in names:
                return perspective_of(group)
    label = result.perspective or "other"
    return TARGET_PERSPECTIVE_ALIASES.get(label, label)


def _headline_table(record: RunRecord) -> Table:
    title = f"Scorecard: {inert(record.name)} ({inert(record.id)}), headline metrics"
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False
    )
    table.add_column("perspective", no_wrap=True)
    table.add_column("metric", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("95% CI", justify="right", no_wrap=True)
    table.add_column("n/skip/fail", justify="right", no_wrap=True)
    for perspective, summaries in by_perspective(record).items():
        for position, summary in enumerate(headline_metrics(perspective, summaries)):
            arrow = "↑" if summary.higher_is_better else "↓"
            table.add_row(
                f"[bold]{perspective}[/bold]" if position == 0 else "",
                f"{inert(summary.name)} {arrow}",
                format_value(summary, summary.value),
                _interval(summary),
                _counts(summary),
            )
    return table


def summary_notes(record: RunRecord, headline: list[str] | None = None) -> list[str]:
    """The failure summary (``reports/failures.py``) as console lines: the failed cases by
    error type with an example each, the metrics skipped on every case with the reason (text
    from the run made inert). With ``headline`` (the compact view) only the reasons of those
    metrics, the others of the same reason counted."""
    summary = failure_summary(record, headline)
    skipped = summary.skipped
    if headline is not None:
        skipped = [
            SkipGroup(group.reason, group.metrics, shown, group.partly_failed, group.failed)
            for group in skipped
            if (shown := sum(name in headline for name in group.metrics))
        ]
    notes = []
    if summary.failed:
        head = f"{summary.failed} of {summary.questions} case(s) failed (target errors)"
        if summary.all_failed:
            head = f"every case failed ({summary.failed} of {summary.questions}): nothing measured"
        notes.append(f"[red]{head}[/red]")
        for group in summary.errors:
            example = f": {inert(group.example)}" if group.example else ""
            notes.append(f"  [red]{inert(group.error_type)}[/red] {group.count}{example}")
    for skip in skipped:
        colour = "red" if skip.failed else "yellow"
        notes.append(f"[{colour}]{inert(skip.line())}[/{colour}]")
    return notes


def failure_notes(record: RunRecord) -> list[str]:
    """What failed: target errors by type, metrics skipped on every case, metrics with failed
    scores, failed or unmeasured goals."""
    headline = [
        summary.name
        for perspective, summaries in by_perspective(record).items()
        for summary in headline_metrics(perspective, summaries)
    ]
    notes = summary_notes(record, headline)
    if record.scorecard is not None:
        # a target error fails every metric of its case, which the summary above says: the
        # metrics listed here failed on more cases than that (a judge error, a bad value)
        errors = record.error_count
        failing = [
            f"{inert(m.name)} ({m.n_failed})"
            for m in record.scorecard.metrics
            if m.n_failed > errors
        ]
        if failing:
            label = "metrics with failed scores" + (" besides target errors" if errors else "")
            notes.append(f"[red]{label}:[/red] {', '.join(failing)}")
    missed = [inert(t.metric) for t in record.goals if t.status == "fail"]
    if missed:
        notes.append(f"[red]goals failed:[/red] {', '.join(missed)}")
    return notes


def print_compact(record: RunRecord, console: Console) -> None:
    """The compact scorecard: headline metrics per perspective, goals, failures."""
    console.print(_headline_table(record))
    if record.weighted_score is not None and not record.config.get("perspectives"):
        console.print(weighted_line(record.weighted_score))
    if record.goals:
        table = goals_table(record.goals, record.scorecard)
        table.box, table.show_edge = box.SIMPLE_HEAD, False
        console.print(table)
    for note in failure_notes(record):
        console.print(note)
    if record.judge_reliability:
        console.print(reliability_line(record.judge_reliability))
    formats = response_format_line(record)  # what read the target's replies (targets/formats.py)
    for line in (formats, retrieval_matching_line(record)):
        if line:
            console.print(line)
    total = len(record.scorecard.metrics) if record.scorecard is not None else 0
    console.print(
        f"run [bold]{inert(record.id)}[/bold] · {inert(record.status)} · "
        f"datasets: {', '.join(map(inert, record.datasets))} · "
        f"questions: {record.question_count} · errors: {record.error_count} · "
        f"[dim]{total} metrics, -v shows them all[/dim]"
    )

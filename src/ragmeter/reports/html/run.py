"""The HTML report of one run (``ragmeter report RUN_ID``): header, scorecard by perspective
with intervals, goals, breakdowns, latency distribution and cost, and the per-case table with
its drill-down (:mod:`ragmeter.reports.html.cases`). One self-contained page
(:func:`ragmeter.reports.html.page.page`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragmeter import __version__
from ragmeter.models import Case, CaseResult, Score
from ragmeter.redaction import redact_text, redact_url
from ragmeter.reports.console import format_value, goal_value, under_coverage
from ragmeter.reports.failures import failure_summary
from ragmeter.reports.html.cases import case_data, case_table
from ragmeter.reports.html.format import esc, is_finite, metric_interval
from ragmeter.reports.html.page import page
from ragmeter.reports.html.svg import histogram, interval_bar
from ragmeter.reports.perspectives import by_perspective, goal_perspective, headline_metrics
from ragmeter.run_record import GoalResult, MetricSummary, Performance, RunRecord
from ragmeter.scoring.goals import goal_condition

__all__ = [
    "describe_target",
    "failures_section",
    "render_run_html",
    "run_header",
    "scorecard_section",
]

BREAKDOWN_METRICS = 8  # columns of a breakdown table


def describe_target(config: dict[str, Any]) -> str:
    """The target as the run's config names it (type and url, path or callable; secrets in a
    URL masked)."""
    target = config.get("target")
    if not isinstance(target, dict):
        return str(target or "-")
    target_type = str(target.get("type") or target.get("kind") or "-")  # "kind": an older run
    where = target.get("url") or target.get("path") or target.get("callable")
    if target.get("url"):
        where = redact_url(str(target["url"]))
    return f"{target_type} {redact_text(str(where))}" if where else target_type


def run_header(record: RunRecord, heading: str = "Evaluation report") -> str:
    config = record.config
    rows = [
        ("run id", record.id),
        ("status", record.status),
        ("datasets", ", ".join(record.datasets) or "-"),
        ("target", describe_target(config)),
        ("created", record.created_at),
        ("completed", record.completed_at or "-"),
        ("suite", config.get("suite") or "full"),
        ("perspectives", ", ".join(config.get("perspectives") or ["all"])),
    ]
    meta = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in rows)
    passed = sum(t.status == "pass" for t in record.goals)
    failed = sum(t.status == "fail" for t in record.goals)
    metrics = len(record.scorecard.metrics) if record.scorecard else 0
    cards = [
        ("questions", str(record.question_count)),
        ("target errors", str(record.error_count)),
        ("metrics", str(metrics)),
        ("goals passed", f"{passed} of {len(record.goals)}" if record.goals else "none"),
    ]
    if failed:
        cards.append(("goals failed", str(failed)))
    weighted = record.weighted_score
    if weighted is not None and weighted.score is not None:
        cards.insert(0, ("weighted score", f"{weighted.score:.3f}"))
    if weighted is not None and (thin := under_coverage(weighted, str)):
        cards.insert(1, ("weighted score", thin))
    card_html = "".join(
        f'<div class="card"><span class="muted">{esc(k)}</span><b>{esc(v)}</b></div>'
        for k, v in cards
    )
    return (
        f"<header><h1>{esc(heading)}: {esc(record.name)}</h1>"
        f'<dl class="meta">{meta}</dl><div class="cards">{card_html}</div></header>'
    )


def _metric_row(summary: MetricSummary, headline: bool) -> str:
    arrow = "↑" if summary.higher_is_better else "↓"
    value = format_value(summary, summary.value)
    interval = metric_interval(summary)
    label = f"{summary.name}: {value}, 95% interval {interval}"
    bar = interval_bar(summary.value, summary.ci_low, summary.ci_high, summary.value_scale(), label)
    failed = f'<span class="fail">{summary.n_failed}</span>' if summary.n_failed else "0"
    bold = ' class="head-metric"' if headline else ""
    return (
        f'<tr data-metric="{esc(summary.name)}"><th scope="row"'
        f"{bold}>{esc(summary.name)} {arrow}</th>"
        f'<td class="num value">{esc(value)}</td><td>{bar}</td>'
        f'<td class="num">{esc(interval)}</td><td class="num">{summary.n_scored}</td>'
        f'<td class="num">{summary.n_skipped}</td><td class="num">{failed}</td></tr>'
    )


_METRIC_HEAD = (
    '<thead><tr><th scope="col">metric</th><th scope="col" class="num">value</th>'
    '<th scope="col">interval</th><th scope="col" class="num">95% CI</th>'
    '<th scope="col" class="num">n</th><th scope="col" class="num">skip</th>'
    '<th scope="col" class="num">fail</th></tr></thead>'
)


def scorecard_section(record: RunRecord) -> str:
    """A table a perspective: every metric with its value, interval bar, 95% interval and
    counts; headline metrics first and bold."""
    groups = by_perspective(record)
    if not groups and record.status != "completed":
        return (
            '<section id="scorecard"><h2>Scorecard</h2><p class="fail">Not finished: the run is '
            f"{esc(record.status)} and not scored yet; finish it with <code>ragmeter eval "
            f"--resume {esc(record.id)}</code>.</p></section>"
        )
    if not groups:
        return '<section id="scorecard"><h2>Scorecard</h2><p>No scorecard.</p></section>'
    parts = ['<section id="scorecard"><h2>Scorecard by perspective</h2>']
    parts.append(
        '<p class="note">Value, 95% bootstrap interval (the band; the tick is the value) and '
        "counts: n scored, skipped and failed cases. ↑ higher is better, ↓ lower is better."
        "</p>"
    )
    for perspective, summaries in groups.items():
        headline = {s.name for s in headline_metrics(perspective, summaries)}
        ordered = sorted(summaries, key=lambda s: s.name not in headline)
        rows = "".join(_metric_row(s, s.name in headline) for s in ordered)
        parts.append(
            f'<h3 id="p-{esc(perspective)}">{esc(perspective)}</h3><div class="scroll">'
            f'<table class="scorecard"><caption class="note">{len(summaries)} metrics'
            f"</caption>{_METRIC_HEAD}<tbody>{rows}</tbody></table></div>"
        )
    parts.append("</section>")
    return "".join(parts)


def failures_section(record: RunRecord) -> str:
    """The failure summary (``reports/failures.py``): failed cases by error type with an
    example each, metrics skipped on every case with the reason; nothing when there is none."""
    summary = failure_summary(record)
    if not summary:
        return ""
    parts = ['<section id="failures"><h2>Failures and skips</h2>']
    if summary.all_failed:
        parts.append(
            f'<p class="fail">Every case failed ({summary.failed} of {summary.questions}): '
            "nothing was measured.</p>"
        )
    elif summary.failed:
        parts.append(
            f'<p class="fail">{summary.failed} of {summary.questions} case(s) failed (target '
            "errors).</p>"
        )
    if summary.errors:
        rows = "".join(
            f'<tr><th scope="row">{esc(g.error_type)}</th><td class="num">{g.count}</td>'
            f'<td class="example">{esc(g.example or "-")}</td></tr>'
            for g in summary.errors
        )
        parts.append(
            '<table class="failures"><thead><tr><th scope="col">error type</th>'
            '<th scope="col" class="num">cases</th><th scope="col">example</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>"
        )
    if summary.skipped:
        items = "".join(
            f"<li>{esc(g.names(None))}: {g.outcome}: {esc(g.reason)}</li>" for g in summary.skipped
        )
        parts.append(f'<ul class="skipped">{items}</ul>')
    parts.append("</section>")
    return "".join(parts)


def _goal_status(result: GoalResult) -> str:
    text = {"pass": "pass", "fail": "fail"}.get(result.status, "not measured")
    cls = {"pass": "pass", "fail": "fail"}.get(result.status, "unmeasured")
    if result.optional and result.status == "not_measured":
        text += " (optional)"
    if result.reason:
        text += f": {result.reason}"
    return f'<td class="{cls}">{esc(text)}</td>'


def goals_section(record: RunRecord) -> str:
    if not record.goals and record.status != "completed":
        return (
            '<section id="goals"><h2>Goals</h2><p>Not evaluated: the run is not scored '
            "yet.</p></section>"
        )
    if not record.goals:
        return '<section id="goals"><h2>Goals</h2><p>No goals.</p></section>'
    rows = "".join(
        f'<tr><th scope="row">{esc(t.metric)}</th><td>{esc(goal_perspective(t, record))}</td>'
        f"<td>{esc(goal_condition(t))}</td>"
        f'<td class="num">{esc(goal_value(t, record.scorecard))}</td>'
        f"{_goal_status(t)}</tr>"
        for t in record.goals
    )
    return (
        '<section id="goals"><h2>Goals</h2><table class="goals"><thead><tr>'
        '<th scope="col">metric</th><th scope="col">perspective</th><th scope="col">goal</th>'
        '<th scope="col" class="num">value</th><th scope="col">status</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></section>"
    )


def _breakdown_metrics(record: RunRecord, groups: dict[str, list[MetricSummary]]) -> list[str]:
    measured = {s.name for summaries in groups.values() for s in summaries if s.n_scored}
    chosen: list[str] = []
    for perspective, summaries in by_perspective(record).items():
        chosen += [s.name for s in headline_metrics(perspective, summaries) if s.name in measured]
    return chosen[:BREAKDOWN_METRICS]


def breakdowns_section(record: RunRecord) -> str:
    if not record.breakdowns:
        return ""
    parts = [
        '<section id="breakdowns"><h2>Breakdowns</h2><p class="note">The headline metrics '
        "recomputed within each group of cases: value, 95% interval and n scored.</p>"
    ]
    for field, groups in record.breakdowns.items():
        metrics = _breakdown_metrics(record, groups)
        if not metrics:
            continue
        head = "".join(f'<th scope="col" class="num">{esc(m)}</th>' for m in metrics)
        rows = []
        for label, summaries in groups.items():
            named = {s.name: s for s in summaries}
            cells = []
            for metric in metrics:
                s = named.get(metric)
                if s is None or s.value is None:
                    cells.append('<td class="num">-</td>')
                    continue
                cells.append(
                    f'<td class="num">{esc(format_value(s, s.value))}<br><span class="note">'
                    f"{esc(metric_interval(s))} · n {s.n_scored}</span></td>"
                )
            rows.append(f'<tr><th scope="row">{esc(label)}</th>{"".join(cells)}</tr>')
        parts.append(
            f'<h3>By {esc(field)}</h3><div class="scroll"><table class="breakdown"><thead><tr>'
            f'<th scope="col">{esc(field)}</th>{head}</tr></thead><tbody>{"".join(rows)}'
            "</tbody></table></div>"
        )
    parts.append("</section>")
    return "".join(parts)


def _cost_text(performance: Performance) -> str:
    cost = performance.cost
    if cost is None:
        return "Cost: not measured."
    system, judge = cost.system, cost.judge
    if system.per_query_usd is None or system.total_usd is None:
        text = "System cost: not reported by the target."
    else:
        text = (
            f"System cost: ${system.per_query_usd:.5f} a query, ${system.total_usd:.4f} "
            f"in total ({system.n_costed} costed, {system.n_priced_from_tokens} priced from "
            "tokens)."
        )
    if judge.get("total_usd") is not None:
        text += f" Judge cost: ${judge['total_usd']:.4f}."
    else:
        text += f" Judge cost: {str(judge.get('status', '-')).replace('_', ' ')}."
    return text


def performance_section(record: RunRecord, results: Sequence[CaseResult]) -> str:
    # answered cases only, as the scorecard's latency metrics (a failure's time is not one)
    latencies = [r.latency_ms for r in results if r.status == "ok" and is_finite(r.latency_ms)]
    parts = ['<section id="latency"><h2>Latency and cost</h2>']
    if latencies:
        parts.append(
            "<figure>"
            + histogram(latencies, "end-to-end latency per case", "ms")
            + f"<figcaption class='note'>{len(latencies)} answered cases with a latency."
            "</figcaption>"
            "</figure>"
        )
    else:
        parts.append("<p>No case has a latency.</p>")
    stages = record.performance.latency_ms
    if stages:
        rows = "".join(
            f'<tr><th scope="row">{esc(stage)}</th><td class="num">{row.get("n", 0)}</td>'
            + "".join(
                f'<td class="num">{row[key]:.1f}</td>'
                if isinstance(row.get(key), int | float)
                else '<td class="num">-</td>'
                for key in ("mean", "p50", "p95", "p99")
            )
            + "</tr>"
            for stage, row in stages.items()
            if isinstance(row, dict)
        )
        parts.append(
            '<table class="stages"><caption class="note">Latency by stage (ms)</caption><thead>'
            '<tr><th scope="col">stage</th><th scope="col" class="num">n</th>'
            '<th scope="col" class="num">mean</th><th scope="col" class="num">p50</th>'
            '<th scope="col" class="num">p95</th><th scope="col" class="num">p99</th></tr>'
            f"</thead><tbody>{rows}</tbody></table>"
        )
    parts.append(f'<p id="cost">{esc(_cost_text(record.performance))}</p></section>')
    return "".join(parts)


def render_run_html(
    record: RunRecord,
    cases: Sequence[Case],
    results: Sequence[CaseResult],
    scores: Sequence[Score],
) -> str:
    """The run as one self-contained HTML page."""
    data = case_data(record, cases, results, scores)
    failures = failures_section(record)
    sections = [("failures", "Failures")] if failures else []
    sections += [("scorecard", "Scorecard"), ("goals", "Goals")]
    if record.breakdowns:
        sections.append(("breakdowns", "Breakdowns"))
    sections += [("latency", "Latency and cost"), ("cases", "Cases")]
    links = " · ".join(f'<a href="#{key}">{label}</a>' for key, label in sections)
    nav = f'<nav aria-label="Sections"><p class="note">{links}</p></nav>'
    body = "".join(
        [
            run_header(record),
            nav,
            failures,
            scorecard_section(record),
            goals_section(record),
            breakdowns_section(record),
            performance_section(record, results),
            f'<section id="cases"><h2>Cases</h2>{case_table(data)}</section>',
            f'<footer class="note"><p>ragmeter {esc(__version__)} · a self-contained report: '
            "no network request, works offline.</p></footer>",
        ]
    )
    return page(f"ragmeter report: {esc(record.name)} ({esc(record.id)})", body, data.document())

"""The run page (scorecard, goals, breakdowns, latency, cost, the case table, progress) and
the case drill-down (question, answers with highlights, chunks, citations, scores, judge
calls)."""

from __future__ import annotations

from typing import Any

from ragmeter.reports.console import format_value, goal_value
from ragmeter.reports.html.format import esc, metric_interval, number
from ragmeter.reports.perspectives import by_perspective, headline_metrics
from ragmeter.run_record import MetricSummary, RunRecord
from ragmeter.web.charts import latency_histogram
from ragmeter.web.html import (
    Header,
    case_url,
    cell,
    layout,
    pager,
    pretty_json,
    raw_cell,
    run_url,
    select,
    table,
)
from ragmeter.web.views import CASE_STATUSES

_STATUS_CSS = {"ok": "good", "pass": "good", "fail": "bad", "error": "bad", "failed": "bad"}


def _facts(items: list[tuple[str, object]]) -> str:
    body = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items if v not in (None, ""))
    return f'<dl class="facts">{body}</dl>'


def _scorecard(record: RunRecord) -> str:
    parts = []
    for perspective, summaries in by_perspective(record).items():
        rows = [
            f'<tr data-metric="{esc(s.name)}"><th scope="row">{esc(s.name)} '
            f'<span class="muted">{"↑" if s.higher_is_better else "↓"}</span></th>'
            + cell(format_value(s, s.value), "num", ' data-role="value"')
            + cell(metric_interval(s), "num", ' data-role="ci"')
            + cell(s.n_scored, "num")
            + cell(s.n_skipped, "num")
            + cell(s.n_failed, "num bad" if s.n_failed else "num")
            + cell(s.group)
            + "</tr>"
            for s in summaries
        ]
        headers: list[Header] = [
            "metric",
            ("value", "num"),
            ("95% interval", "num"),
            ("scored", "num"),
            ("skipped", "num"),
            ("failed", "num"),
            "group",
        ]
        key = esc(perspective)
        parts.append(
            f'<section aria-labelledby="p-{key}" data-perspective="{key}">'
            f'<h3 id="p-{esc(perspective)}">{esc(perspective.replace("_", " "))}</h3>'
            f"{table(headers, rows)}</section>"
        )
    return "".join(parts) or '<p class="muted">No scorecard yet.</p>'


def _targets(record: RunRecord) -> str:
    if not record.goals:
        return '<p class="muted">No goals.</p>'
    rows = [
        f'<tr data-metric="{esc(t.metric)}"><th scope="row">{esc(t.metric)}</th>'
        + cell(f"{t.op} {t.threshold:g}", "num")
        + cell(goal_value(t, record.scorecard), "num", ' data-role="value"')
        + cell(t.status.replace("_", " "), _STATUS_CSS.get(t.status, ""), ' data-role="status"')
        + cell(t.reason or "", "text", ' data-role="reason"')
        + cell("optional" if t.optional else "")
        + "</tr>"
        for t in record.goals
    ]
    return table(["metric", ("goal", "num"), ("value", "num"), "status", "why", ""], rows)


def _breakdown_metrics(record: RunRecord) -> list[str]:
    names: list[str] = []
    for perspective, summaries in by_perspective(record).items():
        names += [s.name for s in headline_metrics(perspective, summaries)][:2]
    return names[:8]


def _breakdowns(record: RunRecord) -> str:
    if not record.breakdowns:
        return '<p class="muted">No breakdowns.</p>'
    names = _breakdown_metrics(record)
    parts = []
    for field, groups in record.breakdowns.items():
        rows = []
        for group, summaries in groups.items():
            by_name: dict[str, MetricSummary] = {s.name: s for s in summaries}
            values = []
            for name in names:
                s = by_name.get(name)
                values.append(cell(format_value(s, s.value) if s else "-", "num"))
            count = max((s.n_scored + s.n_skipped + s.n_failed for s in summaries), default=0)
            rows.append(
                f'<tr><th scope="row">{esc(group)}</th>{cell(count, "num")}{"".join(values)}</tr>'
            )
        headers: list[Header] = [field, ("cases", "num")]
        headers += [(name, "num") for name in names]
        parts.append(
            f"<details><summary>by {esc(field)} ({len(groups)} groups)</summary>"
            f"{table(headers, rows)}</details>"
        )
    return "".join(parts)


def _latency_facts(record: RunRecord) -> str:
    card = record.scorecard
    found = (
        [card.get(name) for name in ("latency_p50", "latency_p95", "latency_p99")] if card else []
    )
    return _facts([(s.name, format_value(s, s.value)) for s in found if s is not None])


def _cost(record: RunRecord, document: dict[str, Any]) -> str:
    judge = document["judge_cost"]
    items: list[tuple[str, object]] = []
    cost = record.scorecard.get("cost_per_query") if record.scorecard else None
    if cost is not None and cost.value is not None:
        items.append(("cost per query", format_value(cost, cost.value)))
    system = record.performance.cost.system if record.performance.cost is not None else None
    if system is not None and system.total_usd is not None:
        items.append(("target cost", f"${system.total_usd:.4f} ({system.n_costed} answers costed)"))
    items += [
        ("judge calls", f"{judge['calls']} ({judge['cached']} cached)"),
        ("judge tokens", f"{judge['prompt_tokens']} prompt, {judge['completion_tokens']} output"),
        ("judge cost", "-" if judge["total_usd"] is None else f"${judge['total_usd']:.4f}"),
    ]
    return _facts(items)


def _progress(document: dict[str, Any]) -> str:
    progress = document["progress"]
    if progress["status"] != "running":
        return ""
    state = "in flight" if progress["live"] else "not driven by any process (interrupted?)"
    fields = "".join(
        f'<dt>{esc(label)}</dt><dd data-field="{key}">{esc(progress[key])}</dd>'
        for key, label in (
            ("status", "status"),
            ("questions", "questions"),
            ("answered", "answered"),
            ("scored", "scored"),
            ("errors", "errors"),
        )
    )
    live = "yes" if progress["live"] else "no"
    refresh = "; refreshes every 2 s" if progress["live"] else ""
    return (
        f'<section id="progress" data-run="{esc(progress["run_id"])}" data-live="{live}"'
        ' aria-live="polite">'
        f'<h2>Progress (<span data-role="state">{esc(state)}</span>{refresh})</h2>'
        f'<dl class="facts">{fields}</dl></section>'
    )


def _case_table(record: RunRecord, document: dict[str, Any]) -> str:
    filters = document["case_filters"]
    metrics = [m.name for m in record.scorecard.metrics] if record.scorecard else []
    form = (
        f'<form class="filters" method="get" action="{esc(run_url(record.id))}#cases"'
        ' aria-label="Filter cases">'
        + select(
            "status",
            "Status",
            [("", "any status"), *((s, s) for s in CASE_STATUSES)],
            filters["status"],
        )
        + select(
            "category",
            "Category",
            [("", "any category"), *((c, c) for c in document["categories"])],
            filters["category"],
        )
        + select(
            "failing",
            "Failing metric",
            [
                ("", "any outcome"),
                ("any", "error or failed score"),
                *((m, f"low or failed: {m}") for m in metrics),
            ],
            filters["failing"],
        )
        + '<button type="submit">Filter cases</button></form>'
    )
    rows = []
    for item in document["cases"]:
        problems = [*(f"{m} failed" for m in item["failed_metrics"]), *item["low_metrics"]]
        shown = ", ".join(problems[:6]) + (f" (+{len(problems) - 6})" if len(problems) > 6 else "")
        question = item["question"]
        rows.append(
            f'<tr data-case="{esc(item["case_id"])}">'
            + raw_cell(
                f'<a href="{esc(case_url(record.id, item["case_id"]))}">{esc(item["case_id"])}</a>'
            )
            + cell(question if len(question) <= 120 else question[:119] + "…", "text")
            + cell(item["category"] or "")
            + cell(item["status"], _STATUS_CSS.get(item["status"], "bad"))
            + cell(number(item["latency_ms"], 1), "num")
            + cell(shown, "text")
            + "</tr>"
        )
    params = {k: v for k, v in filters.items() if v}
    headers: list[Header] = [
        "case",
        "question",
        "category",
        "status",
        ("latency ms", "num"),
        "failed or low metrics",
    ]
    listing = table(headers, rows) if rows else '<p class="muted">No case matches.</p>'
    paging = pager(run_url(record.id), params, document["case_paging"], "cases")
    return f'<h2 id="cases">Cases</h2>{form}{paging}{listing}{paging}'


def run_page(record: RunRecord, document: dict[str, Any]) -> str:
    run = document["run"]
    weighted = document["weighted_score"]
    facts = _facts(
        [
            ("id", record.id),
            ("status", record.status),
            ("created", record.created_at),
            ("completed", record.completed_at),
            ("datasets", ", ".join(record.datasets)),
            ("questions", record.question_count),
            ("errors", record.error_count),
            ("weighted score", number(weighted["score"]) if weighted else None),
        ]
    )
    body = [
        f"<h1>{esc(record.name)}</h1>",
        facts,
        _progress(document),
        "<h2>Scorecard by perspective</h2>",
        _scorecard(record),
        "<h2>Goals</h2>",
        _targets(record),
        "<h2>Breakdowns</h2>",
        _breakdowns(record),
        "<h2>Latency</h2>",
        latency_histogram(
            [(b["low"], b["high"], b["count"]) for b in document["latency_histogram"]]
        ),
        _latency_facts(record),
        "<h2>Cost</h2>",
        _cost(record, document),
        _case_table(record, document),
        f"<h2>Configuration</h2><details><summary>as stored (secrets redacted)</summary>"
        f"<pre>{pretty_json(run['config'])}</pre></details>",
    ]
    return layout(record.name, "".join(body), [("Runs", "/"), (record.name, None)])

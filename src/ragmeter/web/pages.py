"""The runs list and the comparison page (the run and case pages: ``run_pages.py``)."""

from __future__ import annotations

from typing import Any

from ragmeter.models import RunRecord
from ragmeter.scoring.pareto import ParetoPoint
from ragmeter.web.charts import pareto_chart
from ragmeter.web.html import (
    Header,
    case_url,
    cell,
    e,
    layout,
    number,
    pager,
    raw_cell,
    run_url,
    select,
    table,
    with_query,
)
from ragmeter.web.views import STATUSES

_VERDICT_CSS = {"better": "good", "worse": "warn", "regression": "bad"}


def _run_link(run: dict[str, Any]) -> str:
    return f'<a href="{e(run_url(run["id"]))}">{e(run["name"])}</a>'


def runs_page(document: dict[str, Any]) -> str:
    filters = document["filters"]
    status_options = [("", "any status"), *((s, s) for s in STATUSES)]
    dataset_options = [("", "any dataset"), *((d, d) for d in document["datasets"])]
    form = (
        '<form class="filters" method="get" action="/" role="search" aria-label="Filter runs">'
        '<label>Search name or id<input type="search" name="q" id="run-search"'
        f' value="{e(filters["q"] or "")}"></label>'
        f"{select('status', 'Status', status_options, filters['status'])}"
        f"{select('dataset', 'Dataset', dataset_options, filters['dataset'])}"
        '<button type="submit">Apply</button></form>'
    )
    rows = []
    for run in document["runs"]:
        failed = run["targets_failed"]
        targets = f"{run['targets_passed']} pass" + (f", {len(failed)} fail" if failed else "")
        box = (
            f'<input type="checkbox" name="run" value="{e(run["id"])}"'
            f' aria-label="Select run {e(run["name"])} ({e(run["id"])}) for comparison">'
        )
        rows.append(
            f'<tr data-run="{e(run["id"])}">'
            + raw_cell(box)
            + raw_cell(_run_link(run), "text")
            + cell(run["id"])
            + cell(run["status"], "bad" if run["status"] == "interrupted" else "")
            + cell(", ".join(run["datasets"]), "text")
            + cell(run["created_at"])
            + cell(run["question_count"], "num")
            + cell(run["error_count"], "num bad" if run["error_count"] else "num")
            + cell(number(run["weighted_score"]), "num", ' data-role="weighted"')
            + cell(targets, "bad" if failed else "")
            + "</tr>"
        )
    headers: list[Header] = [
        "compare",
        "run",
        "id",
        "status",
        "datasets",
        "created",
        ("questions", "num"),
        ("errors", "num"),
        ("weighted score", "num"),
        "targets",
    ]
    listing = (
        table(headers, rows, css="runs")
        if rows
        else '<p class="muted">No runs match. Store runs with <code>ragmeter eval</code>.</p>'
    )
    compare = (
        '<form id="compare-form" method="get" action="/compare">'
        '<p><button type="submit" id="compare-button">Compare selected runs</button> '
        '<span id="compare-count" class="muted" aria-live="polite"></span> '
        '<span class="muted">(the first ticked run is the baseline)</span></p>'
        f"{listing}</form>"
    )
    params = {k: v for k, v in filters.items() if v}
    body = (
        "<h1>Runs</h1>"
        + form
        + pager("/", params, document["paging"], "runs")
        + compare
        + pager("/", params, document["paging"], "runs")
    )
    return layout("Runs", body)


# comparisons --------------------------------------------------------------------------------
def _p_value(value: float | None) -> str:
    if value is None:
        return "-"
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def _interval(row: dict[str, Any]) -> str:
    if row["ci_low"] is None or row["ci_high"] is None:
        return "-"
    return f"{row['ci_low']:.3f} \u2013 {row['ci_high']:.3f}"


def _comparison_table(comparison: dict[str, Any], show: str) -> str:
    rows = []
    quiet = 0
    for row in comparison["rows"]:
        changed = row["verdict"] in _VERDICT_CSS or (row["delta"] not in (None, 0.0))
        if show != "all" and not changed:
            quiet += 1
            continue
        arrow = "↑" if row["higher_is_better"] else "↓"
        rows.append(
            f'<tr data-metric="{e(row["metric"])}">'
            f'<th scope="row">{e(row["metric"])} <span class="muted">{arrow}</span></th>'
            + cell(number(row["baseline"]), "num", ' data-role="baseline"')
            + cell(number(row["candidate"]), "num", ' data-role="candidate"')
            + cell(number(row["delta"]), "num", ' data-role="delta"')
            + cell(number(row["mean_diff"]), "num")
            + cell(_interval(row), "num")
            + cell(_p_value(row["p_value"]), "num", ' data-role="p"')
            + cell(row["test"])
            + cell(row["verdict"].replace("_", " "), _VERDICT_CSS.get(row["verdict"], ""))
            + "</tr>"
        )
    headers: list[Header] = [
        "metric",
        ("baseline", "num"),
        ("candidate", "num"),
        ("Δ", "num"),
        ("paired Δ", "num"),
        ("95% CI of paired Δ", "num"),
        ("p", "num"),
        "test",
        "verdict",
    ]
    caption = (
        f"{comparison['n_shared_cases']} shared cases, alpha {comparison['alpha']}, margin "
        f"{comparison['margin']}"
        + (f"; {quiet} metrics with no difference hidden" if quiet else "")
    )
    return table(headers, rows, caption=caption, css="compare")


def _flips(comparison: dict[str, Any], limit: int = 30) -> str:
    candidate = comparison["candidate"]
    items = []
    for row in comparison["rows"]:
        if not (row["pass_to_fail"] or row["fail_to_pass"]):
            continue

        def links(ids: list[str]) -> str:
            shown = ", ".join(
                f'<a href="{e(case_url(candidate, case_id))}">{e(case_id)}</a>'
                for case_id in ids[:limit]
            )
            return shown + (f" (+{len(ids) - limit} more)" if len(ids) > limit else "")

        items.append(
            f"<li><strong>{e(row['metric'])}</strong>: "
            f'<span class="bad">pass → fail {len(row["pass_to_fail"])}</span> '
            f"{links(row['pass_to_fail'])} · "
            f'<span class="good">fail → pass {len(row["fail_to_pass"])}</span> '
            f"{links(row['fail_to_pass'])}</li>"
        )
    return f"<ul>{''.join(items)}</ul>" if items else '<p class="muted">No case flipped.</p>'


def compare_page(document: dict[str, Any], show: str, records: list[RunRecord]) -> str:
    names = {r.id: r.name for r in records}
    rows = []
    for position, run in enumerate(document["runs"]):
        rows.append(
            f'<tr data-run="{e(run["id"])}">'
            + cell("baseline" if position == 0 else f"candidate {position}")
            + raw_cell(_run_link(run), "text")
            + cell(run["id"])
            + cell(run["status"])
            + cell(run["question_count"], "num")
            + cell(number(run["weighted_score"]), "num", ' data-role="weighted"')
            + "</tr>"
        )
    parts = [
        "<h1>Compare runs</h1>",
        table(["role", "run", "id", "status", ("questions", "num"), ("weighted", "num")], rows),
    ]
    ids = ",".join(run["id"] for run in document["runs"])
    toggle = "all" if show != "all" else ""
    label = "Show every metric" if show != "all" else "Show changed metrics only"
    href = with_query("/compare", {"runs": ids, "show": toggle})
    parts.append(f'<p><a href="{e(href)}">{label}</a></p>')
    for comparison in document["comparisons"]:
        title = (
            f"{names.get(comparison['candidate'], '')} ({comparison['candidate']}) vs baseline "
            f"{names.get(comparison['baseline'], '')} ({comparison['baseline']})"
        )
        parts += [
            f'<section aria-label="{e(title)}" data-candidate="{e(comparison["candidate"])}">',
            f"<h2>{e(title)}</h2>",
            _comparison_table(comparison, show),
            "<h3>Flipped cases (binary metrics)</h3>",
            _flips(comparison),
            "</section>",
        ]
    pareto = document["pareto"]
    points = [ParetoPoint(**point) for point in pareto["points"]]
    parts += ["<h2>Pareto: weighted score against latency and cost</h2>"]
    parts.append(pareto_chart(points, pareto["quality"]))
    if pareto["left_out"]:
        parts.append(
            f'<p class="muted">Left out (not measured for every run): '
            f"{e(', '.join(pareto['left_out']))}</p>"
        )
    point_rows = [
        f"<tr>{cell(p.run_id)}{cell(number(p.quality), 'num')}{cell(number(p.cost, 5), 'num')}"
        f"{cell(number(p.latency, 1), 'num')}{cell('yes' if p.on_frontier else 'no')}"
        f"{cell(', '.join(p.dominated_by), 'text')}</tr>"
        for p in points
    ]
    parts.append(
        table(
            [
                "run",
                ("weighted score", "num"),
                ("cost/query", "num"),
                ("latency p50 ms", "num"),
                "on frontier",
                "dominated by",
            ],
            point_rows,
        )
    )
    return layout("Compare runs", "".join(parts), [("Runs", "/"), ("Compare", None)])

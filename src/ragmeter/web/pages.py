"""The runs list and the comparison page (the run and case pages: ``run_pages.py``)."""

from __future__ import annotations

from typing import Any

from ragmeter.reports.html.compare import one_sided
from ragmeter.reports.html.format import (
    CORRECTIONS,
    change,
    change_interval_text,
    change_text,
    change_unit,
    correction_label,
    esc,
    number,
    p_text,
)
from ragmeter.run_record import RunRecord
from ragmeter.scoring.compare import Comparison, MetricComparison
from ragmeter.scoring.pareto import ParetoPoint
from ragmeter.web.charts import pareto_chart
from ragmeter.web.html import (
    Header,
    case_url,
    cell,
    layout,
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
    return f'<a href="{esc(run_url(run["id"]))}">{esc(run["name"])}</a>'


def _goals_text(run: dict[str, Any]) -> str:
    """``2 pass, 1 fail, 3 not measured, 2 optional not measured``: a run whose goals were
    not measured never reads as a bare ``0 pass``."""
    parts = [f"{run['goals_passed']} pass"]
    if run["goals_failed"]:
        parts.append(f"{len(run['goals_failed'])} fail")
    if run["goals_not_measured"]:
        parts.append(f"{len(run['goals_not_measured'])} not measured")
    if run["goals_optional_not_measured"]:
        parts.append(f"{run['goals_optional_not_measured']} optional not measured")
    return ", ".join(parts)


def runs_page(document: dict[str, Any]) -> str:
    filters = document["filters"]
    status_options = [("", "any status"), *((s, s) for s in STATUSES)]
    dataset_options = [("", "any dataset"), *((d, d) for d in document["datasets"])]
    form = (
        '<form class="filters" method="get" action="/" role="search" aria-label="Filter runs">'
        '<label>Search name or id<input type="search" name="q" id="run-search"'
        f' value="{esc(filters["q"] or "")}"></label>'
        f"{select('status', 'Status', status_options, filters['status'])}"
        f"{select('dataset', 'Dataset', dataset_options, filters['dataset'])}"
        '<button type="submit">Apply</button></form>'
    )
    rows = []
    for run in document["runs"]:
        failed, unmeasured = run["goals_failed"], run["goals_not_measured"]
        goals = _goals_text(run)
        box = (
            f'<input type="checkbox" name="runs" value="{esc(run["id"])}"'
            f' aria-label="Select run {esc(run["name"])} ({esc(run["id"])}) for comparison">'
        )
        rows.append(
            f'<tr data-run="{esc(run["id"])}">'
            + raw_cell(box)
            + raw_cell(_run_link(run), "text")
            + cell(run["id"])
            + cell(run["status"], "bad" if run["status"] == "interrupted" else "")
            + cell(", ".join(run["datasets"]), "text")
            + cell(run["created_at"])
            + cell(run["question_count"], "num")
            + cell(run["error_count"], "num bad" if run["error_count"] else "num")
            + cell(number(run["weighted_score"]), "num", ' data-role="weighted"')
            + cell(goals, "bad" if failed or unmeasured else "", ' data-role="goals"')
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
        "goals",
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
        '<span class="muted">(the oldest ticked run is the baseline; the others are compared'
        " with it)</span></p>"
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
def _comparison_table(document: dict[str, Any], show: str) -> str:
    comparison = Comparison.model_validate(document)
    adjusted = correction_label(comparison)
    rows = []
    quiet = 0
    for row in comparison.rows:
        changed = row.verdict in _VERDICT_CSS or (row.delta not in (None, 0.0))
        if show != "all" and not changed and not row.gate_failure:
            quiet += 1
            continue
        arrow = "↑" if row.higher_is_better else "↓"
        total = row.total_diff is not None
        rows.append(
            f'<tr data-metric="{esc(row.metric)}">'
            f'<th scope="row">{esc(row.metric)} <span class="muted">{arrow}</span></th>'
            + cell(number(row.baseline), "num", ' data-role="baseline"')
            + cell(number(row.candidate), "num", ' data-role="candidate"')
            + cell(number(row.delta), "num", ' data-role="delta"')
            + cell(
                change_text(change(row)[0], total, change_unit(row)), "num", ' data-role="paired"'
            )
            + cell(change_interval_text(row), "num", ' data-role="ci"')
            + cell(p_text(row.p_value), "num", ' data-role="p"')
            + cell(p_text(row.p_adjusted), "num", ' data-role="p-adjusted"')
            + cell(number(row.mde), "num", ' data-role="mde"')
            + cell(row.test)
            + _verdict_cell(row)
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
        (adjusted, "num"),
        ("MDE", "num"),
        "test",
        "verdict",
    ]
    caption = (
        f"{comparison.n_shared_cases} shared cases, alpha {comparison.alpha}, margin "
        f"{comparison.margin}, {CORRECTIONS.get(comparison.correction, '')}: {adjusted} is p "
        "corrected over the gated metrics (the verdict reads it); MDE: the smallest change "
        f"detectable at power {comparison.power:g} (per case); a total's paired Δ and interval "
        "are its change over the shared cases"
        + (f"; {quiet} metrics with no difference hidden" if quiet else "")
    )
    return one_sided(comparison, bad="bad", note="muted") + table(
        headers, rows, caption=caption, css="compare"
    )


def _verdict_cell(row: MetricComparison) -> str:
    """The verdict, or for a gated metric a gate cannot pass on (paired on too few cases, not
    paired) "not compared" with the reason, as the HTML comparison report shows it."""
    if row.gate_failure:
        return cell(f"not compared: {row.gate_failure}", "bad", ' data-role="verdict"')
    verdict = row.verdict.replace("_", " ")
    return cell(verdict, _VERDICT_CSS.get(row.verdict, ""), ' data-role="verdict"')


def _flips(comparison: dict[str, Any], limit: int = 30) -> str:
    candidate = comparison["candidate"]
    items = []
    for row in comparison["rows"]:
        if not (row["pass_to_fail"] or row["fail_to_pass"]):
            continue

        def links(ids: list[str]) -> str:
            shown = ", ".join(
                f'<a href="{esc(case_url(candidate, case_id))}">{esc(case_id)}</a>'
                for case_id in ids[:limit]
            )
            return shown + (f" (+{len(ids) - limit} more)" if len(ids) > limit else "")

        items.append(
            f"<li><strong>{esc(row['metric'])}</strong>: "
            f'<span class="bad">pass → fail {len(row["pass_to_fail"])}</span> '
            f"{links(row['pass_to_fail'])} · "
            f'<span class="good">fail → pass {len(row["fail_to_pass"])}</span> '
            f"{links(row['fail_to_pass'])}</li>"
        )
    return f"<ul>{''.join(items)}</ul>" if items else '<p class="muted">No case flipped.</p>'


def _order_note(document: dict[str, Any], names: dict[str, str]) -> str:
    """ "baseline X -> candidate Y" in words, how the order was chosen, and a link that swaps
    the baseline with each candidate."""
    runs = [run["id"] for run in document["runs"]]

    def named(run_id: str) -> str:
        return f"<strong>{esc(names.get(run_id, ''))}</strong> ({esc(run_id)})"

    candidates = ", ".join(named(run_id) for run_id in runs[1:])
    swaps = []
    for position, run_id in enumerate(runs[1:], start=1):
        order = [run_id, *runs[1:position], runs[0], *runs[position + 1 :]]
        href = with_query("/compare", {"runs": ",".join(order)})
        label = "swap" if len(runs) == 2 else f"make {names.get(run_id, run_id)} the baseline"
        swaps.append(f'<a href="{esc(href)}" data-role="swap">{esc(label)}</a>')
    how = (
        "the oldest of the ticked runs is the baseline"
        if document.get("order") == "created"
        else "in the order given"
    )
    return (
        f'<p id="compare-order">baseline {named(runs[0])} → '
        f"candidate{'s' if len(runs) > 2 else ''} {candidates} "
        f'<span class="muted">({esc(how)})</span> · {" · ".join(swaps)}</p>'
    )


def compare_page(document: dict[str, Any], show: str, records: list[RunRecord]) -> str:
    names = {r.id: r.name for r in records}
    rows = []
    for position, run in enumerate(document["runs"]):
        role = "baseline" if position == 0 else f"candidate {position}"
        rows.append(
            f'<tr data-run="{esc(run["id"])}">'
            + cell(role, "", ' data-role="role"')
            + raw_cell(_run_link(run), "text")
            + cell(run["id"])
            + cell(run["status"])
            + cell(run["created_at"])
            + cell(run["question_count"], "num")
            + cell(number(run["weighted_score"]), "num", ' data-role="weighted"')
            + "</tr>"
        )
    headers: list[Header] = [
        "role",
        "run",
        "id",
        "status",
        "created",
        ("questions", "num"),
        ("weighted", "num"),
    ]
    parts = ["<h1>Compare runs</h1>", _order_note(document, names), table(headers, rows)]
    ids = ",".join(run["id"] for run in document["runs"])
    toggle = "all" if show != "all" else ""
    label = "Show every metric" if show != "all" else "Show changed metrics only"
    href = with_query("/compare", {"runs": ids, "show": toggle})
    parts.append(f'<p><a href="{esc(href)}">{label}</a></p>')
    for comparison in document["comparisons"]:
        title = (
            f"baseline {names.get(comparison['baseline'], '')} ({comparison['baseline']}) → "
            f"candidate {names.get(comparison['candidate'], '')} ({comparison['candidate']})"
        )
        parts += [
            f'<section aria-label="{esc(title)}" data-candidate="{esc(comparison["candidate"])}">',
            f"<h2>{esc(title)}</h2>",
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
            f"{esc(', '.join(pareto['left_out']))}</p>"
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

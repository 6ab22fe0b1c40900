"""The HTML report of a comparison (``ragmeter report BASE CAND``): both runs' headers, the
paired difference of every metric with its interval and p value
(:func:`ragmeter.scoring.compare.compare_runs`), the cases that flipped on a 0/1 metric with
both answers side by side, and the Pareto chart of quality against latency or cost."""

from __future__ import annotations

from collections.abc import Sequence

from ragmeter import __version__
from ragmeter.models import Case, CaseResult
from ragmeter.reports.html.cases import clean
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
from ragmeter.reports.html.page import page
from ragmeter.reports.html.run import describe_target
from ragmeter.reports.html.svg import delta_bar, pareto_chart
from ragmeter.reports.pareto import pareto_points
from ragmeter.run_record import RunRecord
from ragmeter.scoring.compare import Comparison, MetricComparison
from ragmeter.scoring.pareto import ParetoPoint

__all__ = ["render_comparison_html"]

FLIPS_LISTED = 200  # case ids listed a metric and direction
SIDE_BY_SIDE = 100  # flipped cases shown with both answers
_VERDICT = {
    "regression": ("REGRESSED", "fail"),
    "worse": ("worse", "unmeasured"),
    "better": ("better", "pass"),
    "no_difference": ("no difference", "muted"),
    "not_paired": ("not paired", "muted"),
}
_TEST = {
    "mcnemar_exact": "McNemar",
    "sign_flip_permutation": "permutation",
    "paired_stratified_bootstrap": "bootstrap",
    "paired_quantile_bootstrap": "bootstrap",
}
_ORDER = {"regression": 0, "worse": 1, "better": 2, "no_difference": 3, "not_paired": 4}


def _runs_table(base: RunRecord, cand: RunRecord) -> str:
    def weighted(record: RunRecord) -> str:
        score = record.weighted_score.score if record.weighted_score else None
        return number(score)

    rows = [
        ("name", base.name, cand.name),
        ("run id", base.id, cand.id),
        ("status", base.status, cand.status),
        ("datasets", ", ".join(base.datasets), ", ".join(cand.datasets)),
        ("target", describe_target(base.config), describe_target(cand.config)),
        ("created", base.created_at, cand.created_at),
        ("questions", str(base.question_count), str(cand.question_count)),
        ("target errors", str(base.error_count), str(cand.error_count)),
        ("weighted score", weighted(base), weighted(cand)),
    ]
    body = "".join(
        f'<tr><th scope="row">{esc(k)}</th><td>{esc(b)}</td><td>{esc(c)}</td></tr>'
        for k, b, c in rows
    )
    return (
        '<table class="runs"><thead><tr><th scope="col"></th><th scope="col">baseline</th>'
        f'<th scope="col">candidate</th></tr></thead><tbody>{body}</tbody></table>'
    )


def _breakable(name: str) -> str:
    """A metric name, escaped, that may wrap after its underscores (the table fits 1,400 px)."""
    return esc(name).replace("_", "_<wbr>")


def _delta_row(row: MetricComparison) -> str:
    mean, low, high = change(row)
    bound = max((abs(v) for v in (mean, low, high) if v is not None), default=0.0) * 1.15
    verdict, cls = _VERDICT[row.verdict]
    if not row.gated:
        verdict += " (not gated)"
    if row.gate_failure:  # a gate cannot pass on it
        verdict, cls = f"not compared: {row.gate_failure}", "fail"
    arrow = "↑" if row.higher_is_better else "↓"
    shown = change_text(mean, row.total_diff is not None, change_unit(row))
    interval = change_interval_text(row)
    label = f"{row.metric}: paired difference {shown}, 95% interval {interval}"
    return (
        f'<tr data-metric="{esc(row.metric)}" data-verdict="{esc(row.verdict)}">'
        f'<th scope="row" title="group {esc(row.group)}">{_breakable(row.metric)} {arrow}</th>'
        f'<td class="num">{number(row.baseline)}</td><td class="num">{number(row.candidate)}</td>'
        f'<td class="num delta">{esc(shown)}</td>'
        f"<td>{delta_bar(mean, low, high, bound, label)}</td>"
        f'<td class="num ci">{esc(interval)}</td><td class="num">{number(row.effect_size, 2)}</td>'
        f'<td class="num pvalue">{esc(p_text(row.p_value))}</td>'
        f'<td class="num padj">{esc(p_text(row.p_adjusted))}</td>'
        f'<td class="num mde">{esc(number(row.mde))}</td>'
        f"<td>{esc(_TEST.get(row.test, row.test))}</td>"
        f'<td class="{cls}">{esc(verdict)}</td></tr>'
    )


def deltas_section(comparison: Comparison) -> str:
    rows = sorted(
        comparison.rows,
        key=lambda r: (_ORDER[r.verdict], r.p_value if r.p_value is not None else 2.0),
    )
    counts = {key: sum(r.verdict == key for r in rows) for key in _VERDICT}
    cards = "".join(
        f'<div class="card"><span class="muted">{esc(_VERDICT[key][0])}</span>'
        f"<b>{counts[key]}</b></div>"
        for key in ("regression", "worse", "better", "no_difference", "not_paired")
    )
    head = "".join(
        f'<th scope="col"{" class=num" if num else ""}>{esc(name)}</th>'
        for name, num in (
            ("metric", False),
            ("baseline", True),
            ("candidate", True),
            ("paired Δ", True),
            ("interval", False),
            ("95% CI", True),
            ("effect", True),
            ("p", True),
            (correction_label(comparison), True),
            ("MDE", True),
            ("test", False),
            ("verdict", False),
        )
    )
    return (
        '<section id="deltas"><h2>Differences by metric</h2>'
        f'<div class="cards">{cards}</div>'
        f'<p class="note">{comparison.n_shared_cases} shared cases, alpha {comparison.alpha}, '
        f"margin {comparison.margin}, {esc(CORRECTIONS.get(comparison.correction, ''))}. "
        f"p: the raw p value; {esc(correction_label(comparison))}: p corrected over the gated "
        "metrics, which the verdict reads. MDE: the smallest change detectable at power "
        f"{comparison.power:g} (per case). Paired Δ: mean of candidate minus baseline over the "
        "shared cases (for a total: the change of the total over them; for a percentile such "
        "as latency_p95: the change of that percentile), in the metric's unit, with its 95% "
        "paired bootstrap interval (the band; the dashed line is 0). Tests: exact McNemar for "
        "0/1 metrics, a paired bootstrap for percentiles and detector statistics, sign-flip "
        "permutation otherwise. A regression is significantly worse by at "
        "least the margin.</p>"
        f"{one_sided(comparison)}"
        f'<div class="scroll"><table class="deltas"><thead><tr>{head}</tr></thead><tbody>'
        f"{''.join(_delta_row(r) for r in rows)}</tbody></table></div></section>"
    )


def one_sided(comparison: Comparison, bad: str = "fail", note: str = "note") -> str:
    """The gated metrics a gate cannot pass on, with why (as ``ragmeter compare``'s NOT
    COMPARED lines), and the metrics in one run only; ``bad`` and ``note`` are the page's CSS
    classes for a failure and a note."""
    parts = []
    failures = comparison.gate_failures
    if failures:
        items = "".join(f"<li>{esc(metric)}: {esc(reason)}</li>" for metric, reason in failures)
        parts.append(
            f'<p class="{bad}" data-role="not-compared">{len(failures)} gated metric(s) not '
            f"compared: a gate fails on them (coverage floor {comparison.coverage_floor:g})."
            f'</p><ul class="uncompared">{items}</ul>'
        )
    for side, metrics in (
        ("baseline", comparison.only_in_baseline),
        ("candidate", comparison.only_in_candidate),
    ):
        if metrics:
            shown = ", ".join(f"{esc(m.metric)} {number(m.value)}" for m in metrics)
            parts.append(
                f'<p class="{note} only-{side}">Only in the {side} (not compared): {shown}.</p>'
            )
    return "".join(parts)


def _ids(ids: list[str]) -> str:
    shown = ", ".join(esc(i) for i in ids[:FLIPS_LISTED])
    more = len(ids) - FLIPS_LISTED
    return shown + (f" (+{more} more)" if more > 0 else "")


def flips_section(
    comparison: Comparison,
    cases: Sequence[Case],
    base_results: Sequence[CaseResult],
    cand_results: Sequence[CaseResult],
) -> str:
    flipped = [r for r in comparison.rows if r.pass_to_fail or r.fail_to_pass]
    parts = ['<section id="flips"><h2>Flipped cases</h2>']
    if not flipped:
        parts.append("<p>No case passed in one run and failed in the other on a 0/1 metric.</p>")
        return "".join(parts) + "</section>"
    rows = "".join(
        f'<tr><th scope="row">{esc(r.metric)}</th>'
        f'<td class="num">{len(r.pass_to_fail)}</td><td>{_ids(r.pass_to_fail)}</td>'
        f'<td class="num">{len(r.fail_to_pass)}</td><td>{_ids(r.fail_to_pass)}</td></tr>'
        for r in flipped
    )
    parts.append(
        '<p class="note">Cases that pass a 0/1 metric in one run and fail it in the other.</p>'
        '<div class="scroll"><table class="flips"><thead><tr><th scope="col">metric</th>'
        '<th scope="col" class="num">pass → fail</th><th scope="col">cases</th>'
        '<th scope="col" class="num">fail → pass</th><th scope="col">cases</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
    )
    what: dict[str, list[str]] = {}
    for r in flipped:
        for case_id in r.pass_to_fail:
            what.setdefault(case_id, []).append(f"{r.metric} pass → fail")
        for case_id in r.fail_to_pass:
            what.setdefault(case_id, []).append(f"{r.metric} fail → pass")
    case_of = {c.case_id: c for c in cases}
    base_of = {r.case_id: r for r in base_results}
    cand_of = {r.case_id: r for r in cand_results}
    if case_of:
        parts.append(f"<h3>Side by side (first {min(len(what), SIDE_BY_SIDE)} cases)</h3>")
    for case_id in list(what)[:SIDE_BY_SIDE] if case_of else []:
        case = case_of.get(case_id)
        answers = []
        for result in (base_of.get(case_id), cand_of.get(case_id)):
            if result is None:
                answers.append("(not answered)")
            elif result.response is None:
                answers.append(f"error: {result.error_type or ''} {result.error_message or ''}")
            else:
                answers.append(result.response.answer or "(empty)")
        question = case.question if case else ""
        reference = (case.reference_answer or "") if case else ""
        parts.append(
            f'<details class="flip"><summary>{esc(case_id)} · {esc("; ".join(what[case_id]))}'
            '</summary><table class="side"><thead><tr><th scope="col">question</th>'
            '<th scope="col">reference</th><th scope="col">baseline answer</th>'
            '<th scope="col">candidate answer</th></tr></thead><tbody><tr>'
            + "".join(
                f"<td>{esc(clean(text, 1500))}</td>"
                for text in (question, reference, answers[0], answers[1])
            )
            + "</tr></tbody></table></details>"
        )
    return "".join(parts) + "</section>"


def _errors(point: ParetoPoint) -> str:
    return "-" if point.errors is None or point.cases is None else f"{point.errors}/{point.cases}"


def _standing(point: ParetoPoint) -> str:
    if point.on_frontier:
        return "on the frontier"
    return "not comparable" if not point.comparable else "dominated"


def pareto_section(records: list[RunRecord]) -> str:
    points, dropped = pareto_points(records, None)
    axis = "latency" if "latency" not in dropped else "cost" if "cost" not in dropped else None
    parts = ['<section id="pareto"><h2>Pareto: quality against cost and latency</h2>']
    rows = "".join(
        f'<tr><th scope="row">{esc(p.run_id)}</th><td class="num">{number(p.quality)}</td>'
        f'<td class="num">{esc(_errors(p))}</td><td class="num">{number(p.coverage, 2)}</td>'
        f'<td class="num">{number(p.cost, 5)}</td><td class="num">{number(p.latency, 1)}</td>'
        f'<td class="{"pass" if p.on_frontier else "muted"}">'
        f"{_standing(p)}</td>"
        f"<td>{esc(p.note or ', '.join(p.dominated_by))}</td></tr>"
        for p in points
    )
    plotted = [
        (p.run_id, float(getattr(p, axis)), p.quality, p.on_frontier)
        for p in points
        if axis is not None and p.quality is not None and getattr(p, axis) is not None
    ]
    if plotted and axis is not None:
        x_label = "latency p50 (ms)" if axis == "latency" else "cost per query (USD)"
        parts.append("<figure>" + pareto_chart(plotted, x_label, "weighted score") + "</figure>")
    else:
        parts.append("<p>No run has both a weighted score and a latency or cost to plot.</p>")
    if dropped:
        parts.append(
            f'<p class="note">Left out (not measured for every run): {esc(", ".join(dropped))}.</p>'
        )
    parts.append(
        '<table class="pareto-points"><thead><tr><th scope="col">run</th>'
        '<th scope="col" class="num">weighted score</th><th scope="col" class="num">errors</th>'
        '<th scope="col" class="num">coverage</th><th scope="col" class="num">cost/query'
        '</th><th scope="col" class="num">latency p50 ms</th><th scope="col">frontier</th>'
        f'<th scope="col">dominated by</th></tr></thead><tbody>{rows}</tbody></table></section>'
    )
    return "".join(parts)


def render_comparison_html(
    comparison: Comparison,
    base: RunRecord,
    cand: RunRecord,
    cases: Sequence[Case] = (),
    base_results: Sequence[CaseResult] = (),
    cand_results: Sequence[CaseResult] = (),
) -> str:
    """The comparison as one self-contained HTML page."""
    body = "".join(
        [
            f"<header><h1>Comparison: {esc(cand.name)} against baseline {esc(base.name)}</h1>",
            _runs_table(base, cand),
            "</header>",
            '<nav aria-label="Sections"><p class="note"><a href="#deltas">Differences</a> · '
            '<a href="#flips">Flipped cases</a> · <a href="#pareto">Pareto</a></p></nav>',
            deltas_section(comparison),
            flips_section(comparison, cases, base_results, cand_results),
            pareto_section([base, cand]),
            f'<footer class="note"><p>ragmeter {esc(__version__)} · a self-contained report: '
            "no network request, works offline.</p></footer>",
        ]
    )
    title = f"ragmeter comparison: {esc(cand.id)} against {esc(base.id)}"
    return page(title, body)

"""The Markdown form of a comparison (``ragmeter report BASE CAND --format md``): the runs,
every metric's paired difference with interval and p value, and the flipped cases. Text from the
runs is made inert with :func:`ragmeter.reports.markdown.md_text`."""

from __future__ import annotations

from ragmeter.reports.html.format import (
    CORRECTIONS,
    change,
    change_interval_text,
    change_text,
    change_unit,
    correction_label,
    number,
    p_text,
)
from ragmeter.reports.markdown import md_text
from ragmeter.run_record import RunRecord
from ragmeter.scoring.compare import Comparison

__all__ = ["render_comparison_markdown"]

FLIPS_LISTED = 20


def render_comparison_markdown(comparison: Comparison, base: RunRecord, cand: RunRecord) -> str:
    adjusted = correction_label(comparison)
    lines = [
        f"# Comparison: {md_text(cand.name)} against baseline {md_text(base.name)}",
        "",
        f"- baseline: {md_text(base.id)} ({md_text(base.name)}, {base.question_count} questions)",
        f"- candidate: {md_text(cand.id)} ({md_text(cand.name)}, {cand.question_count} questions)",
        f"- shared cases: {comparison.n_shared_cases} · alpha {comparison.alpha} · "
        f"margin {comparison.margin} · {CORRECTIONS.get(comparison.correction, '')}",
        "",
        "## Differences by metric",
        "",
        f"| metric | baseline | candidate | paired Δ | 95% CI | p | {adjusted} | MDE | test "
        "| verdict |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for row in comparison.rows:
        mean = change(row)[0]
        interval = change_interval_text(row)
        arrow = "↑" if row.higher_is_better else "↓"
        verdict = row.verdict.replace("_", " ") + ("" if row.gated else " (not gated)")
        if row.gate_failure:  # a gate cannot pass on it
            verdict = f"**not compared**: {md_text(row.gate_failure)}"
        shown = change_text(mean, row.total_diff is not None, change_unit(row))
        lines.append(
            f"| {md_text(row.metric)} {arrow} | {number(row.baseline)} | "
            f"{number(row.candidate)} | {shown} | "
            f"{interval} | {p_text(row.p_value)} | {p_text(row.p_adjusted)} | "
            f"{number(row.mde)} | {row.test} | {verdict} |"
        )
    for side, metrics in (
        ("baseline", comparison.only_in_baseline),
        ("candidate", comparison.only_in_candidate),
    ):
        if metrics:
            shown = ", ".join(f"{md_text(m.metric)} {number(m.value)}" for m in metrics)
            lines += ["", f"Only in the {side} (not compared): {shown}."]
    if comparison.gate_failures:
        lines += ["", f"**Not compared** (a gate fails on them; coverage floor "
                  f"{comparison.coverage_floor:g}):", ""]  # fmt: skip
        lines += [f"- {md_text(m)}: {md_text(r)}" for m, r in comparison.gate_failures]
    flipped = [r for r in comparison.rows if r.pass_to_fail or r.fail_to_pass]
    lines += ["", "## Flipped cases", ""]
    if not flipped:
        lines.append("No case flipped on a 0/1 metric.")
    for row in flipped:
        for label, ids in (("pass → fail", row.pass_to_fail), ("fail → pass", row.fail_to_pass)):
            if not ids:
                continue
            shown = ", ".join(md_text(i) for i in ids[:FLIPS_LISTED])
            more = f" (+{len(ids) - FLIPS_LISTED} more)" if len(ids) > FLIPS_LISTED else ""
            lines.append(f"- {md_text(row.metric)} {label} ({len(ids)}): {shown}{more}")
    lines += [
        "",
        "Paired Δ: candidate minus baseline over the shared cases; intervals: 95% paired "
        "bootstrap; "
        "tests: exact McNemar (0/1 metrics), sign-flip permutation (others); "
        f"{adjusted}: p corrected over the gated metrics "
        f"({CORRECTIONS.get(comparison.correction, '')}), "
        "which the verdict reads; MDE: the smallest change detectable at power "
        f"{comparison.power:g} (per case).",
        "",
    ]
    return "\n".join(lines)

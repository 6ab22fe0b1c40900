"""``ragmeter report``: the HTML report (and the md and json formats) of runs built through the
real CLI. The numbers in the page equal the store's; a hostile case's markup, script, links,
rich markup and escape sequences appear as text only; the page names no external resource and
its Content-Security-Policy allows only its own script and style."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from ragmeter.reports.console import format_value
from ragmeter.reports.html.format import change_interval_text, esc, number, p_text
from ragmeter.reports.html.page import script_json
from ragmeter.reports.markdown import render_markdown
from ragmeter.scoring.compare import CaseValues, compare_runs
from ragmeter.store.sqlite import RunStore
from tests.reports.support import (
    HOSTILE,
    HOSTILE_CATEGORY,
    HOSTILE_ID,
    HOSTILE_NAME,
    NO_EMBEDDINGS,
    build_demo_runs,
    build_replay_runs,
    data_blob,
    ragmeter,
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str, str]:
    folder = tmp_path_factory.mktemp("report")
    store, base, cand = build_replay_runs(folder)
    return folder, store, base, cand


def _report(folder: Path, *args: str) -> str:
    done = ragmeter(folder, "report", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_scores_in_the_page_equal_the_store(runs: tuple[Path, Path, str, str]) -> None:
    folder, store, base, _ = runs
    out = folder / "base.html"
    printed = _report(folder, base, "--store", str(store), "-o", str(out))
    assert f"wrote {out}" in printed
    html = out.read_text(encoding="utf-8")
    blob = data_blob(html)
    run_store = RunStore(store, create=False)
    record = run_store.get_run(base)
    scores = run_store.get_scores(base)
    cases = run_store.get_cases(base)
    metrics = [m[0] for m in blob["metrics"]]  # type: ignore[index,union-attr]
    by_id = {c["id"]: c for c in blob["cases"]}  # type: ignore[union-attr]
    assert set(by_id) == {case.case_id for case in cases}
    strings = blob["strings"]
    checked = 0
    for score in scores:
        entry = by_id[score.case_id]["s"][metrics.index(score.metric)]
        if score.status == "ok":
            assert score.value is not None
            assert entry == pytest.approx(score.value, rel=1e-4, abs=1e-9)
        else:
            assert entry[0] == {"skipped": 1, "failed": 2}[score.status]
            assert (strings[entry[1]] if entry[1] >= 0 else None) == score.reason  # type: ignore[index]
        checked += 1
    assert checked == len(scores) > 100
    # the scorecard: every metric's value and counts as the console formats them
    assert record.scorecard is not None
    for summary in record.scorecard.metrics:
        row = re.search(rf'<tr data-metric="{re.escape(esc(summary.name))}">(.*?)</tr>', html, re.S)
        assert row, summary.name
        cells = re.findall(r'<td class="num[^"]*">(.*?)</td>', row.group(1))
        assert cells[0] == esc(format_value(summary, summary.value))
        assert cells[2:4] == [str(summary.n_scored), str(summary.n_skipped)]
    # headline numbers
    assert f"<b>{record.question_count}</b>" in html
    assert 'class="hist"' in html and 'class="ibar"' in html


def test_page_is_self_contained_with_a_strict_policy(runs: tuple[Path, Path, str, str]) -> None:
    folder, store, base, _ = runs
    _report(folder, base, "--store", str(store), "-o", str(folder / "self.html"))
    html = (folder / "self.html").read_text(encoding="utf-8")
    # no external resource of any kind
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:|//|javascript:)", html, re.I)
    assert "<link" not in html and "@import" not in html and "url(" not in html
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert policy
    assert "default-src 'none'" in policy.group(1)
    script = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert len(script) == 1
    digest = base64.b64encode(hashlib.sha256(script[0].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy.group(1)
    style = re.search(r"<style>(.*?)</style>", html, re.S)
    assert style
    style_digest = base64.b64encode(hashlib.sha256(style.group(1).encode()).digest()).decode()
    assert f"style-src 'sha256-{style_digest}'" in policy.group(1)
    assert " style=" not in html  # a style attribute would be blocked by the policy


def test_hostile_case_is_text(runs: tuple[Path, Path, str, str]) -> None:
    folder, store, base, _ = runs
    out = folder / "hostile.html"
    _report(folder, base, "--store", str(store), "-o", str(out))
    html = out.read_text(encoding="utf-8")
    # two script elements: the data block and the page's own script; none from the case
    assert len(re.findall(r"<script", html, re.I)) == 2
    assert "<img" not in html and 'onerror="window' not in html
    assert "<script>window" not in html and "\x1b" not in html
    assert 'href="javascript' not in html
    # in the table, the hostile id is escaped text
    assert f"<summary>{esc(HOSTILE_ID)}</summary>" in html
    blob = data_blob(html)
    case = next(c for c in blob["cases"] if c["id"] == HOSTILE_ID)  # type: ignore[union-attr]
    shown = HOSTILE.replace("\x1b[31m", "").replace("\x1b[0m", "")
    assert case["q"] == "Hostile: " + shown
    assert case["a"].startswith("Answer: " + shown)
    assert shown in case["k"][0][5]  # the chunk text, whole: shorter than the limit
    # the data block cannot be closed from inside
    assert "</script>" not in script_json({"x": HOSTILE})


def test_default_path_and_errors(runs: tuple[Path, Path, str, str]) -> None:
    folder, store, base, cand = runs
    printed = _report(folder, base[:6], "--store", str(store))
    assert (folder / f"{base}.html").is_file()
    assert f"{base}.html" in printed
    _report(folder, base, "--store", str(store), "--format", "md")
    assert (folder / f"{base}.md").read_text(encoding="utf-8") == render_markdown(
        RunStore(store, create=False).get_run(base)
    )
    _report(folder, base, "--store", str(store), "--format", "json")
    assert json.loads((folder / f"{base}.json").read_text())["id"] == base
    unknown = ragmeter(folder, "report", "feedbeef0000", "--store", str(store))
    assert unknown.returncode != 0 and "feedbeef0000" in unknown.stderr
    to_folder = ragmeter(folder, "report", base, "--store", str(store), "-o", str(folder))
    assert to_folder.returncode != 0 and "is a folder" in to_folder.stderr
    bad = ragmeter(folder, "report", base, "--store", str(store), "--format", "xml")
    assert bad.returncode != 0 and "xml" in bad.stderr
    pair_csv = ragmeter(folder, "report", base, cand, "--store", str(store), "--format", "csv")
    assert pair_csv.returncode != 0 and "comparison" in pair_csv.stderr
    three = ragmeter(folder, "report", base, cand, base, "--store", str(store))
    assert three.returncode != 0 and "two" in three.stderr


def test_comparison_numbers_equal_compare_runs(runs: tuple[Path, Path, str, str]) -> None:
    folder, store, base, cand = runs
    printed = _report(folder, base, cand, "--store", str(store))
    out = folder / f"{base}_vs_{cand}.html"
    assert out.name in printed
    html = out.read_text(encoding="utf-8")
    run_store = RunStore(store, create=False)
    comparison = compare_runs(
        CaseValues.from_store(run_store, base), CaseValues.from_store(run_store, cand)
    )
    assert comparison.rows
    for row in comparison.rows:
        found = re.search(
            rf'<tr data-metric="{re.escape(esc(row.metric))}" data-verdict="{row.verdict}">'
            r"(.*?)</tr>",
            html,
            re.S,
        )
        assert found, row.metric
        cells = found.group(1)
        assert f'<td class="num pvalue">{esc(p_text(row.p_value))}</td>' in cells
        assert f'<td class="num padj">{esc(p_text(row.p_adjusted))}</td>' in cells
        assert f'<td class="num mde">{number(row.mde)}</td>' in cells
        assert f'<td class="num ci">{esc(change_interval_text(row))}</td>' in cells
        base_text = "-" if row.baseline is None else f"{row.baseline:.3f}"
        assert f'<td class="num">{base_text}</td>' in cells
    flipped = [r for r in comparison.rows if r.pass_to_fail]
    assert flipped, "the candidate retrieves worse on two cases"
    assert "Flipped cases" in html and "pass → fail" in html
    assert 'class="pareto"' in html  # the chart
    assert "<script>window" not in html and "<img" not in html
    md = _report(folder, base, cand, "--store", str(store), "--format", "md", "-o", "c.md")
    assert "c.md" in md
    text = (folder / "c.md").read_text(encoding="utf-8")
    assert "| metric | baseline | candidate | paired Δ | 95% CI | p | p holm | MDE |" in text
    assert "Holm correction" in text
    assert "pass → fail" in text


def _deltas(html: str, metric: str) -> str:
    found = re.search(
        rf'<tr data-metric="{re.escape(esc(metric))}" data-verdict="[a-z_]+">(.*?)</tr>', html, re.S
    )
    assert found, metric
    return found.group(1)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str, str]:
    """build_demo_runs' pair, the candidate without the embedding families: the baseline keeps
    every family (its targets are the default table, read whole), the comparison pairs the
    metrics both runs measured."""
    folder = tmp_path_factory.mktemp("demo-report")
    store, base, cand = build_demo_runs(folder, "--metrics", NO_EMBEDDINGS)
    return folder, store, base, cand


def test_demo_comparison_corrected_p_mde_and_totals(demo: tuple[Path, Path, str, str]) -> None:
    """The demo pair: raw and corrected p, the interval and the MDE equal compare_runs'; the
    corrected column is named by the correction; a total shows its change over the shared cases
    with the mean's interval times the shared cases (as the console)."""
    folder, store, base, cand = demo
    out = folder / "demo-compare.html"
    _report(folder, base, cand, "--store", str(store), "-o", str(out))
    html = out.read_text(encoding="utf-8")
    run_store = RunStore(store, create=False)
    comparison = compare_runs(
        CaseValues.from_store(run_store, base), CaseValues.from_store(run_store, cand)
    )
    assert comparison.correction == "holm"
    assert '<th scope="col" class=num>p holm</th>' in html and "Holm correction" in html
    assert '<th scope="col" class=num>MDE</th>' in html
    for row in comparison.rows:
        cells = _deltas(html, row.metric)
        assert f'<td class="num pvalue">{esc(p_text(row.p_value))}</td>' in cells, row.metric
        assert f'<td class="num padj">{esc(p_text(row.p_adjusted))}</td>' in cells, row.metric
        assert f'<td class="num mde">{number(row.mde)}</td>' in cells, row.metric
        assert f'<td class="num ci">{esc(change_interval_text(row))}</td>' in cells, row.metric
    total = next(r for r in comparison.rows if r.total_diff is not None and r.ci_high)
    assert total.ci_high is not None
    cells = _deltas(html, total.metric)
    assert f'<td class="num delta">{total.total_diff:+.0f}</td>' in cells
    assert f"{total.ci_high * total.n_paired:+.0f}</td>" in cells


def test_targets_use_the_metric_kind(demo: tuple[Path, Path, str, str]) -> None:
    from ragmeter.reports.console import goal_value
    from ragmeter.scoring.goals import goal_condition

    folder, store, base, _ = demo
    out = folder / "demo.html"
    _report(folder, base, "--store", str(store), "-o", str(out))
    html = out.read_text(encoding="utf-8")
    record = RunStore(store, create=False).get_run(base)
    assert record.goals
    section = html[html.index('<section id="goals">') :]
    for target in record.goals:
        row = re.search(rf'<th scope="row">{re.escape(esc(target.metric))}</th>(.*?)</tr>', section)
        assert row, target.metric
        assert f'<td class="num">{esc(goal_value(target, record.scorecard))}</td>' in row.group(1)
        assert f"<td>{esc(goal_condition(target))}</td>" in row.group(1)
        if target.reason:  # why a target is not measured (or how it was judged), as in Markdown
            assert esc(target.reason) in row.group(1), target.metric


def test_a_target_row_says_why_it_is_not_measured() -> None:
    from ragmeter.reports.html.run import goals_section
    from ragmeter.run_record import GoalResult, RunRecord

    thin = GoalResult(
        metric="recall_at_5", op=">", threshold=0.7, value=0.571, status="not_measured",
        reason="coverage 0.58 < 0.90",
    )  # fmt: skip
    margin = GoalResult(
        metric="token_f1", op=">", threshold=0.02, value=0.5, status="fail", rule="non_inferior",
        reason="paired difference vs b: lower bound -0.75 beyond the margin 0.02",
    )  # fmt: skip
    record = RunRecord(
        id="r", name="r", created_at="2026-11-24T00:00:00+00:00", config={}, datasets=[],
        targets=[thin, margin],
    )  # fmt: skip
    html = goals_section(record)
    assert "not measured: coverage 0.58 &lt; 0.90" in html
    assert "<td>non_inferior(margin=0.02)</td>" in html and "fail: paired difference" in html


def test_hostile_run_name_and_category_are_text(runs: tuple[Path, Path, str, str]) -> None:
    folder, store, base, cand = runs
    for args, name in (((base,), "b.html"), ((cand,), "c.html"), ((base, cand), "bc.html")):
        _report(folder, *args, "--store", str(store), "-o", name)
        html = (folder / name).read_text(encoding="utf-8")
        assert "<b>cat</b>" not in html and "\u202e" not in html and "\x1b" not in html
        assert '<img src=x onerror="window.__pwned=1">' not in html
        if name != "bc.html":
            assert "&lt;b&gt;cat&lt;/b&gt;" in html  # the category, in the case table
        if name != "b.html":
            assert "cand &lt;img src=x onerror=&quot;window.__pwned=1&quot;&gt; evil" in html
    assert HOSTILE_CATEGORY and HOSTILE_NAME


def test_non_finite_and_valueless_scores(runs: tuple[Path, Path, str, str]) -> None:
    """An Inf value (older or foreign stores) is a failed "non-finite value" cell and a score
    stored "ok" with no value a "no value" cell (code 3); neither breaks the report."""
    folder, store, base, _ = runs
    copy = folder / "odd.db"
    shutil.copyfile(store, copy)
    with sqlite3.connect(copy) as db:
        db.execute(
            "UPDATE scores SET value = ? WHERE run_id = ? AND case_id = 'refund'"
            " AND metric = 'token_f1'",
            (float("inf"), base),
        )
        db.execute(
            "UPDATE scores SET value = NULL, status = 'ok' WHERE run_id = ?"
            " AND case_id = 'friday' AND metric = 'token_f1'",
            (base,),
        )
    out = folder / "odd.html"
    _report(folder, base, "--store", str(copy), "-o", str(out))
    blob = data_blob(out.read_text(encoding="utf-8"))
    metrics = [m[0] for m in blob["metrics"]]  # type: ignore[index,union-attr]
    position = metrics.index("token_f1")
    cells = {c["id"]: c["s"][position] for c in blob["cases"]}  # type: ignore[union-attr,index]
    strings = blob["strings"]
    assert cells["refund"][0] == 2 and "non-finite" in strings[cells["refund"][1]]  # type: ignore[index]
    assert cells["friday"][0] == 3
    for fmt in ("md", "json", "csv"):
        done = ragmeter(
            folder, "report", base, "--store", str(copy), "--format", fmt, "-o", f"odd.{fmt}"
        )
        assert done.returncode == 0, (fmt, done.stderr)


def test_reports_of_an_unfinished_run_say_so() -> None:
    from ragmeter.reports.html.run import goals_section, scorecard_section
    from ragmeter.reports.markdown import render_markdown
    from ragmeter.run_record import RunRecord

    record = RunRecord(
        id="r1", name="r", created_at="2026-11-24T00:00:00+00:00", config={}, datasets=["demo"],
        status="interrupted", question_count=87,
    )  # fmt: skip
    markdown = render_markdown(record)
    assert "**not finished**: the run is interrupted" in markdown
    assert "`ragmeter eval --resume r1`" in markdown
    assert "No goals." not in markdown and "Not evaluated: the run is not scored yet." in markdown
    html = scorecard_section(record) + goals_section(record)
    assert "Not finished: the run is interrupted" in html and "No goals" not in html
    finished = record.model_copy(update={"status": "completed"})
    assert "No goals." in render_markdown(finished)

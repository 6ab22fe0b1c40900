"""``ragmeter report``: the HTML report (and the md and json formats) of runs built through the
real CLI. The numbers in the page equal the store's; a hostile case's markup, script, links,
rich markup and escape sequences appear as text only; the page names no external resource and
its Content-Security-Policy allows only its own script and style."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import pytest

from ragmeter.reports.console import format_value
from ragmeter.reports.html.compare import p_text
from ragmeter.reports.html.page import esc, script_json
from ragmeter.reports.markdown import render_markdown
from ragmeter.scoring.compare import RunScores, compare_runs
from ragmeter.store.sqlite import RunStore
from tests.test_report_support import (
    HOSTILE,
    HOSTILE_ID,
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
        RunScores.from_store(run_store, base), RunScores.from_store(run_store, cand)
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
    assert "| metric | baseline | candidate | paired Δ |" in text
    assert "pass → fail" in text

"""The HTML report in real headless Chromium (``browser.py``): the demo's report opens from
disk with every non-file request aborted and none failing, shows its charts, filters its cases
and opens a drill-down with the keyboard, reads in light and dark with enough contrast; a
hostile case runs no script; the comparison shows its charts. Saves screenshots (report*.png: in
a temporary folder, or the README's in docs/images with RAGMETER_SCREENSHOTS=docs; see
``browser.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.browser import PageEvents, take_screenshot
from tests.reports.support import HOSTILE_ID, build_demo_runs, build_replay_runs, ragmeter

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytest.importorskip("playwright")
from playwright.sync_api import expect

CONTRAST = """(selectors) => {
  function rgb(text) { const m = text.match(/[\\d.]+/g).map(Number);
    return {r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1}; }
  function lum(c) { const f = (v) => { v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); }
  function background(el) { while (el) { const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.a > 0.5) { return c; } el = el.parentElement; }
    return rgb(getComputedStyle(document.documentElement).backgroundColor); }
  const out = {};
  for (const sel of selectors) { for (const el of document.querySelectorAll(sel)) {
    if (!el.getClientRects().length || !el.textContent.trim()) continue;
    const a = lum(rgb(getComputedStyle(el).color)), b = lum(background(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    out[sel] = Math.min(out[sel] === undefined ? Infinity : out[sel], ratio); } }
  return out; }"""
CHECKED = [
    "h1",
    ".meta dd",
    ".meta dt",
    ".note",
    ".card .muted",
    "td.num",
    "table.scorecard tbody th",
    "thead th",
    "tbody.case summary",
    ".pass",
    ".fail",
    ".unmeasured",
    ".low",
    ".badge",
    ".filters label",
    "#f-metric",
    "svg text",
    "a",
    "td",
]
ON_DEMO = set(CHECKED) - {".unmeasured", ".fail"}  # the demo: every target met, no failed score


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("html-report")
    store, base, cand = build_demo_runs(folder)
    replay_store, replay_base, _ = build_replay_runs(folder)
    made = {
        "demo": (base, "--store", str(store), "-o", "demo.html"),
        "compare": (base, cand, "--store", str(store), "-o", "compare.html"),
        "hostile": (replay_base, "--store", str(replay_store), "-o", "hostile.html"),
    }
    for name, args in made.items():
        done = ragmeter(folder, "report", *args)
        assert done.returncode == 0, f"{name}: {done.stderr}"
    return {name: folder / f"{name}.html" for name in made}


@pytest.fixture
def offline(page: Page) -> Iterator[list[str]]:
    """Every request but a file:// one is aborted (and recorded)."""
    blocked: list[str] = []

    def handle(route: Any) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", handle)
    yield blocked


def _open(page: Page, path: Path) -> None:
    page.goto(path.as_uri())
    page.wait_for_load_state("load")


def test_demo_report_offline_charts_filter_drilldown(
    page: Page, page_events: PageEvents, offline: list[str], reports: dict[str, Path]
) -> None:
    _open(page, reports["demo"])
    assert page.title().startswith("ragmeter report")
    bars = page.locator("svg.ibar")
    assert bars.count() > 50
    assert bars.first.is_visible()
    assert page.locator("svg.hist").is_visible()
    assert page.locator("svg.hist rect.hbar").count() > 0
    screenshot = take_screenshot(page, "report")
    assert screenshot.stat().st_size > 10_000
    # the filter, by keyboard: the first metric some cases fail or score low on
    total = page.locator("tbody.case").count()
    assert total == 87
    assert page.locator("#f-count").inner_text() == f"{total} of {total} cases shown"
    page.focus("#f-metric")
    page.keyboard.press("ArrowDown")
    assert page.locator("#f-metric").input_value() == "any"
    while page.locator("#f-metric").input_value() in ("any", "e"):
        page.keyboard.press("ArrowDown")
    metric = page.locator("#f-metric").input_value()
    shown = page.locator("tbody.case:not([hidden])").count()
    for row in page.locator("tbody.case:not([hidden])").all():
        assert metric in (row.get_attribute("data-f") or "").split()
    assert 0 < shown < total
    assert page.locator("#f-count").inner_text() == f"{shown} of {total} cases shown"
    page.focus("#f-cat")
    page.keyboard.press("ArrowDown")
    category = page.locator("#f-cat").input_value()
    assert category
    for row in page.locator("tbody.case:not([hidden])").all():
        assert row.get_attribute("data-c") == category
    page.select_option("#f-metric", "")
    page.select_option("#f-cat", "")
    page.fill("#f-text", "demo-004")
    assert page.locator("tbody.case:not([hidden])").count() == 1
    # the drill-down, by keyboard: Tab from the search box reaches the case's summary
    page.focus("#f-text")
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.textContent")
    assert focused == "demo-004"
    page.keyboard.press("Enter")
    drill = page.locator("tbody.case:not([hidden]) tr.drill")
    expect(drill).to_be_visible()
    text = drill.inner_text()
    assert "Retrieved chunks" in text and "gold" in text and "question" in text
    assert drill.locator("table.scores tbody tr").count() > 10
    page.keyboard.press("Enter")  # and closed again (the toggle event comes asynchronously)
    expect(drill).to_be_hidden()
    assert not offline, f"requests other than file://: {offline}"
    page_events.assert_clean()


def test_accessibility_basics_and_contrast_in_both_themes(
    page: Page, page_events: PageEvents, offline: list[str], reports: dict[str, Path]
) -> None:
    _open(page, reports["demo"])
    for control in page.locator("select, input").all():
        ident = control.get_attribute("id")
        assert ident and page.locator(f'label[for="{ident}"]').count() == 1
    assert page.locator("th[scope]").count() > 100
    assert page.locator("thead th:not([scope])").count() == 0
    # open the drill-downs of the cases failing or low on something: their score tables
    # (.fail, .low) and chunk badges are measured too
    opened = page.locator('tbody.case:not([data-f=""]) details[data-i] > summary').all()[:12]
    for summary in opened:
        summary.click()
    expect(page.locator("tr.drill")).to_have_count(len(opened))
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        ratios = page.evaluate(CONTRAST, CHECKED)
        assert set(ratios) >= ON_DEMO, ON_DEMO - set(ratios)
        low = {sel: round(ratio, 2) for sel, ratio in ratios.items() if ratio < 4.5}
        assert not low, f"{scheme}: contrast below 4.5:1: {low}"
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(13, 17, 23)"  # dark
    assert page.locator("svg.hist").is_visible()
    take_screenshot(page, "report-dark")
    # a visible focus ring
    page.focus("#f-metric")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"
    page_events.assert_clean()


def test_hostile_case_runs_no_script(
    page: Page, page_events: PageEvents, offline: list[str], reports: dict[str, Path]
) -> None:
    _open(page, reports["hostile"])
    row = page.locator("tbody.case").filter(has=page.locator("summary", has_text=HOSTILE_ID))
    assert row.count() == 1
    row.locator("summary").click()
    drill = row.locator("tr.drill")
    expect(drill).to_be_visible()
    text = drill.inner_text()
    assert "<script>window.__pwned=1</script>" in text
    assert '<img src=x onerror="window.__pwned=1">' in text
    assert "[bold red]x[/]" in text and "javascript:alert(1)" in text
    assert "\x1b" not in text
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img").count() == 0
    assert page.locator("a[href^='javascript']").count() == 0
    assert not offline
    page_events.assert_clean()  # no dialog, no error, no failed request


def test_comparison_report(
    page: Page, page_events: PageEvents, offline: list[str], reports: dict[str, Path]
) -> None:
    _open(page, reports["compare"])
    assert page.locator("svg.pareto").is_visible()
    assert page.locator("svg.pareto circle").count() == 2
    assert page.locator("svg.dbar").count() > 50
    assert page.locator("table.deltas tbody tr").count() > 50
    take_screenshot(page, "report-compare")
    assert page.locator("#flips").is_visible()
    seen: set[str] = set()
    for scheme in ("light", "dark"):  # the verdicts (.fail, .unmeasured, .pass) included
        page.emulate_media(color_scheme=scheme)
        ratios = page.evaluate(CONTRAST, CHECKED)
        seen |= set(ratios)
        low = {sel: round(ratio, 2) for sel, ratio in ratios.items() if ratio < 4.5}
        assert not low, f"{scheme}: contrast below 4.5:1: {low}"
    _open(page, reports["hostile"])  # its drill-downs: failed scores
    opened = page.locator("tbody.case details[data-i] > summary").all()
    for summary in opened:
        summary.click()
    expect(page.locator("tr.drill")).to_have_count(len(opened))
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        ratios = page.evaluate(CONTRAST, CHECKED)
        seen |= set(ratios)
        low = {sel: round(ratio, 2) for sel, ratio in ratios.items() if ratio < 4.5}
        assert not low, f"hostile, {scheme}: contrast below 4.5:1: {low}"
    assert ".fail" in seen and ".unmeasured" in seen, seen
    assert not offline
    page_events.assert_clean()


def test_comparison_fits_1400_pixels(page: Page, reports: dict[str, Path]) -> None:
    """Issue 29: at 1,400 px every column of the differences table (MDE and verdict included)
    is on screen: the table is no wider than its box, nothing scrolls sideways."""
    page.set_viewport_size({"width": 1400, "height": 900})
    _open(page, reports["compare"])
    widths = page.evaluate(
        """() => { const t = document.querySelector('table.deltas');
          const last = [...t.querySelectorAll('thead th')].pop().getBoundingClientRect();
          return {table: t.scrollWidth, box: t.parentElement.clientWidth,
                  page: document.documentElement.scrollWidth, right: last.right}; }"""
    )
    assert widths["table"] <= widths["box"], widths
    assert widths["page"] <= 1400 and widths["right"] <= 1400, widths

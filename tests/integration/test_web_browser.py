"""``ragmeter serve`` in real headless Chromium: the real server as a subprocess on 127.0.0.1
over a store built by the real CLI. Opens the runs list, a run, a failing case and a comparison,
checks the numbers on screen against the store, drives the filters and row links with the
keyboard, checks that hostile stored text renders as text (no script runs, no dialog), and saves
screenshots (ui-*.png: in a temporary folder, or the README's in docs/images with
RAGMETER_SCREENSHOTS=docs; see ``browser.py``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx
import pytest

from ragmeter.reports.console import format_value
from ragmeter.reports.terminal import strip_unsafe
from ragmeter.store.lock import RunLock
from ragmeter.store.sqlite import RunStore
from tests.conftest import free_port
from tests.integration.browser import PageEvents, take_screenshot
from tests.web.test_api import (
    HOSTILE_CASE,
    HOSTILE_CATEGORY,
    HOSTILE_NAME,
    PWN_IMG,
    PWN_LINK,
    PWN_SCRIPT,
    RICH,
    WebStore,
    build_store,
)

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.integration
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")


@dataclass
class Served:
    url: str
    web: WebStore
    store: RunStore  # the store's own reading, over a copy (RunStore opens read-write)


def _wait(url: str, process: subprocess.Popen[bytes], timeout_s: float = 120.0) -> None:
    """Until ``url`` answers 200 (a hang guard of ``timeout_s``: it answers in seconds)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"ragmeter serve exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer in {timeout_s}s")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("webui")
    web = build_store(folder)
    copy = folder / "copy.db"
    shutil.copyfile(web.path, copy)
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ragmeter", "serve", "--store", str(web.path), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    store = RunStore(copy, create=False)
    try:
        _wait(url + "/", process)
        yield Served(url, web, store)
    finally:
        store.close()
        process.terminate()
        process.wait(timeout=60)


def _tab_to(page: Page, selector: str, limit: int = 60) -> None:
    """Press Tab until the element matching ``selector`` has the focus."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(f"document.activeElement.matches({selector!r})"):
            return
    raise AssertionError(f"Tab never reached {selector}")


def test_runs_list_and_keyboard(page: Page, page_events: PageEvents, served: Served) -> None:
    web, store = served.web, served.store
    page.goto(served.url + "/")
    assert page.locator("tr[data-run]").count() == 3
    for run_id in (web.full, web.small):
        record = store.get_run(run_id)
        assert record.weighted_score is not None and record.weighted_score.score is not None
        cell = page.locator(f'tr[data-run="{run_id}"] [data-role="weighted"]')
        assert cell.inner_text() == f"{record.weighted_score.score:.3f}"
    take_screenshot(page, "ui-runs", full_page=True)
    # the filter, by keyboard: Tab to the search box, type, Enter submits
    _tab_to(page, "#run-search")
    page.keyboard.type("demo full")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.locator("tr[data-run]").count() == 1
    # a row link, by keyboard: Tab reaches it, Enter opens the run
    _tab_to(page, f'tr[data-run="{web.full}"] a')
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.endswith(f"/runs/{web.full}")
    assert page.locator("h1").inner_text() == "demo full"
    page_events.assert_clean()


def test_run_page_numbers_equal_the_store(
    page: Page, page_events: PageEvents, served: Served
) -> None:
    record = served.store.get_run(served.web.full)
    assert record.scorecard is not None
    page.goto(f"{served.url}/runs/{served.web.full}")
    rows = page.locator("section[data-perspective] tr[data-metric]")
    assert rows.count() == len(record.scorecard.metrics)
    for name in ("ndcg_at_5", "recall_at_5", "token_f1", "latency_p95", "pipeline_pass_rate"):
        summary = record.scorecard.get(name)
        assert summary is not None
        row = page.locator(f'section[data-perspective] tr[data-metric="{name}"]')
        assert row.locator('[data-role="value"]').inner_text() == format_value(
            summary, summary.value
        )
    assert page.locator("svg.chart rect.bar").count() > 0  # the latency histogram
    assert page.locator("tr[data-case]").count() == 87
    take_screenshot(page, "ui-run", full_page=False)
    page_events.assert_clean()


def test_failing_case_drill_down(page: Page, page_events: PageEvents, served: Served) -> None:
    web, store = served.web, served.store
    page.goto(f"{served.url}/runs/{web.full}")
    # filter the cases by keyboard-operable controls: low token F1
    page.select_option('select[name="failing"]', "token_f1")
    with page.expect_navigation():
        page.get_by_role("button", name="Filter cases").click()
    first = page.locator("tr[data-case]").first
    case_id = first.get_attribute("data-case")
    assert case_id is not None
    with page.expect_navigation():
        first.locator("a").click()
    (case,) = [c for c in store.get_cases(web.full) if c.case_id == case_id]
    assert page.locator('[data-role="question"]').inner_text() == case.question
    scores = {s.metric: s for s in store.get_scores(web.full) if s.case_id == case_id}
    token_f1 = scores["token_f1"]
    assert token_f1.value is not None and token_f1.value < 0.5
    shown = page.locator('tr[data-metric="token_f1"] [data-role="value"]').inner_text()
    assert shown == f"{token_f1.value:.3f}"
    assert page.locator("li.chunk").count() > 0
    take_screenshot(page, "ui-case", full_page=False)
    page_events.assert_clean()


def test_compare_two_runs(page: Page, page_events: PageEvents, served: Served) -> None:
    web, store = served.web, served.store
    page.goto(served.url + "/")
    page.check(f'tr[data-run="{web.full}"] input[type="checkbox"]')
    page.check(f'tr[data-run="{web.small}"] input[type="checkbox"]')
    assert page.locator("#compare-count").inner_text() == "2 selected"
    with page.expect_navigation():
        page.get_by_role("button", name="Compare selected runs").click()
    assert "/compare" in page.url
    # the list is newest first, but the oldest ticked run (the demo, made first) is the baseline
    first, second = store.get_run(web.full), store.get_run(web.small)
    order = page.locator("#compare-order").inner_text()
    assert order.startswith(f"baseline demo full ({web.full}) → candidate demo top2 ({web.small})")
    assert page.locator(f'tr[data-run="{web.full}"] [data-role="role"]').inner_text() == "baseline"
    assert first.scorecard is not None and second.scorecard is not None
    rows = page.locator("section[data-candidate] tr[data-metric]")
    assert rows.count() > 0
    for index in range(min(rows.count(), 8)):
        row = rows.nth(index)
        name = row.get_attribute("data-metric")
        assert name is not None
        base, cand = first.scorecard.get(name), second.scorecard.get(name)
        assert base is not None and cand is not None
        assert row.locator('[data-role="baseline"]').inner_text() == _fmt(base.value)
        assert row.locator('[data-role="candidate"]').inner_text() == _fmt(cand.value)
        delta = None if base.value is None or cand.value is None else cand.value - base.value
        assert row.locator('[data-role="delta"]').inner_text() == _fmt(delta)
    assert page.locator("svg.chart circle").count() == 2  # the Pareto chart
    take_screenshot(page, "ui-compare", full_page=False)
    with page.expect_navigation():  # swap: the candidate becomes the baseline
        page.locator('[data-role="swap"]').click()
    assert (
        page.locator("#compare-order").inner_text().startswith(f"baseline demo top2 ({web.small})")
    )
    page_events.assert_clean()


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def test_hostile_text_renders_as_text(page: Page, page_events: PageEvents, served: Served) -> None:
    web = served.web
    page.goto(served.url + "/")
    assert page.locator(f'tr[data-run="{web.hostile}"] a').inner_text() == strip_unsafe(
        HOSTILE_NAME
    )
    page.goto(f"{served.url}/runs/{web.hostile}")
    assert page.locator("h1").inner_text() == strip_unsafe(HOSTILE_NAME)
    categories = page.locator(f'tr[data-case="{HOSTILE_CASE}"] td').nth(2).inner_text()
    assert categories == strip_unsafe(HOSTILE_CATEGORY)
    assert page.locator("main b, main img").count() == 0
    assert page.evaluate("window.__pwned") is None
    link = page.locator(f'tr[data-case="{HOSTILE_CASE}"] a')
    assert link.inner_text() == HOSTILE_CASE
    with page.expect_navigation():
        link.click()
    question = page.locator('[data-role="question"]').inner_text()
    assert PWN_SCRIPT in question and PWN_IMG in question and PWN_LINK in question
    assert RICH in question
    answer = page.locator('[data-role="answer"]').inner_text()
    assert PWN_SCRIPT in answer and PWN_IMG in answer
    leaks = page.locator('[data-role="answer"] mark.leak').all_inner_texts()
    assert "bob@example.com" in leaks
    assert PWN_SCRIPT in page.locator('[data-role="chunk-text"]').first.inner_text()
    assert page.locator("h1").inner_text() == f"Case {HOSTILE_CASE}"
    assert page.evaluate("window.__pwned") is None
    assert page.locator("main img").count() == 0
    assert page.locator('a[href^="javascript"]').count() == 0
    assert page.evaluate("document.querySelectorAll('script:not([src])').length") == 0
    page_events.assert_clean()


def test_live_progress_of_a_run_in_flight(
    page: Page, page_events: PageEvents, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A running run's page polls /api/runs/ID/progress every 2 s: the counts follow the store
    as answers arrive, and the page reloads into the scorecard once the run completes."""
    from playwright.sync_api import expect

    from ragmeter.models import Case, CaseResult, Response
    from ragmeter.run_record import RunRecord, Scorecard

    folder = tmp_path_factory.mktemp("live")
    path = folder / "runs.db"
    writer = RunStore(path)
    record = RunRecord(
        id="live0001", name="in flight", created_at="2026-01-01T00:00:00+00:00",
        config={}, datasets=["demo"],
    )  # fmt: skip
    writer.create_run(record, [Case(case_id=f"c{i}", question=f"q {i}?") for i in range(5)])

    def answer(case_id: str) -> None:
        result = CaseResult(
            case_id=case_id, status="ok", response=Response(answer="a"), latency_ms=1.0
        )
        writer.save_result(record.id, result)

    lock = RunLock(path, record.id)  # this process drives the run: it is live
    lock.acquire()
    answer("c0")
    answer("c1")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ragmeter", "serve", "--store", str(path), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(url + "/", process)
        page.goto(f"{url}/runs/{record.id}")
        answered = page.locator('#progress [data-field="answered"]')
        assert answered.inner_text() == "2"
        answer("c2")
        # polled every 2 s (these waits for the page are hang guards)
        expect(answered).to_have_text("3", timeout=60_000)
        writer.finish_run(record.id, Scorecard(metrics=[], by_group={}), "2026-01-01", 0)
        page.wait_for_selector("#progress", state="detached", timeout=60_000)
        page.wait_for_load_state()
        assert "completed" in page.locator("dl.facts").first.inner_text()
    finally:
        lock.release()
        writer.close()
        process.terminate()
        process.wait(timeout=60)
    page_events.assert_clean()


def test_a_stuck_run_is_not_polled(
    page: Page, page_events: PageEvents, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A run left "running" with no live process (its process died): the page says so and does
    not poll /progress."""
    from ragmeter.models import Case
    from ragmeter.run_record import RunRecord

    path = tmp_path_factory.mktemp("stuck") / "runs.db"
    writer = RunStore(path)
    record = RunRecord(
        id="stuck001", name="stuck", created_at="2026-01-01T00:00:00+00:00",
        config={}, datasets=["demo"],
    )  # fmt: skip
    writer.create_run(record, [Case(case_id="c0", question="q?")])
    writer.close()
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ragmeter", "serve", "--store", str(path), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    polled: list[str] = []
    page.on(
        "request",
        lambda request: polled.append(request.url) if "/progress" in request.url else None,
    )
    # the page's timers run on a clock the test moves, and its fetch calls are counted as made
    page.add_init_script(COUNT_PROGRESS_FETCHES)
    page.clock.install()
    try:
        _wait(url + "/", process)
        page.goto(f"{url}/runs/{record.id}")
        assert "not driven by any process" in page.locator("#progress h2").inner_text()
        page.clock.run_for(10_000)  # five polling periods, however long they take here
        assert page.evaluate("window.progressFetches") == 0
        # the page's timers do run on that clock: one of every 2 s fires twice in 4 s
        page.evaluate("() => { window.ticks = 0; setInterval(() => window.ticks++, 2000); }")
        page.clock.run_for(4_000)
        assert page.evaluate("window.ticks") == 2
    finally:
        process.terminate()
        process.wait(timeout=60)
    assert polled == []
    page_events.assert_clean()


# counts the page's fetch calls of a /progress URL as they are made (window.progressFetches)
COUNT_PROGRESS_FETCHES = """
window.progressFetches = 0;
const originalFetch = window.fetch;
window.fetch = function (resource, options) {
  if (String(resource).includes("/progress")) { window.progressFetches += 1; }
  return originalFetch.call(this, resource, options);
};
"""


CONTRAST_JS = """
(selectors) => {
  const parse = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (el) => {
    for (let node = el; node; node = node.parentElement) {
      const c = parse(getComputedStyle(node).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0)) { return c.slice(0, 3); }
    }
    return [255, 255, 255];
  };
  const found = {};
  for (const selector of selectors) {
    for (const el of document.querySelectorAll(selector)) {
      if (!el.getClientRects().length || !el.textContent.trim()) { continue; }
      const a = lum(parse(getComputedStyle(el).color).slice(0, 3));
      const b = lum(background(el));
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      found[selector] = Math.min(found[selector] ?? Infinity, ratio);
    }
  }
  return found;
}
"""
CHECKED = [
    "h1", "h2", "dl.facts dt", "dl.facts dd", "th", "td", "td.num", "a", ".muted", ".good",
    ".bad", ".warn", "button", "select", "input", "label", "caption", "mark.unsupported",
    "mark.leak", ".tag.gold", "header.top a", "pre", "svg.chart text",
]  # fmt: skip


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_accessibility_basics(
    page: Page, page_events: PageEvents, served: Served, scheme: str
) -> None:
    """Labelled controls, scoped table headers, and text contrast of 4.5:1 or more in the light
    and the dark scheme (the case page: it has every kind of text, marks included)."""
    page.emulate_media(color_scheme=scheme)
    for url in ("/", f"/runs/{served.web.full}", f"/runs/{served.web.hostile}"):
        page.goto(served.url + url)
        unlabelled = page.evaluate(
            "() => [...document.querySelectorAll('input, select')]"
            ".filter(el => !el.labels.length && !el.getAttribute('aria-label'))"
            ".map(el => el.outerHTML)"
        )
        assert unlabelled == []
        unscoped = page.evaluate(
            "() => [...document.querySelectorAll('th:not([scope])')].map(el => el.outerHTML)"
        )
        assert unscoped == []
    web = served.web
    pages = {
        "runs": "/",
        "run": f"/runs/{web.full}",
        "case": f"/runs/{web.hostile}/cases/evil-%3Ci%3E1%3C%2Fi%3E",
        "compare": f"/compare?runs={web.full},{web.small}&show=all",
    }
    seen: set[str] = set()
    for name, url in pages.items():
        page.goto(served.url + url)
        ratios = page.evaluate(CONTRAST_JS, CHECKED)
        seen |= set(ratios)
        low = {selector: round(ratio, 2) for selector, ratio in ratios.items() if ratio < 4.5}
        assert low == {}, f"contrast under 4.5:1 on the {name} page, {scheme} scheme: {low}"
    assert seen >= {"h1", "th", "a", ".muted", ".good", ".bad", "mark.leak", "button", "select"}
    page_events.assert_clean()

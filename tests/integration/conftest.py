"""Fixtures of the integration tests: a real headless Chromium (``browser.py``) and the local
judge's llama.cpp build and model (``scripts/setup_llama.py``)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.browser import CHROMIUM_ARGS, PageEvents, chromium_executable

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


SETUP_LLAMA = Path(__file__).resolve().parents[2] / "scripts" / "setup_llama.py"
# the build bounds itself (setup_llama.build_timeout_s); this is its margin for installing the
# built wheel and fetching the model
SETUP_MARGIN_S = 900


def setup_llama_build_timeout_s() -> float:
    spec = importlib.util.spec_from_file_location("setup_llama", SETUP_LLAMA)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    timeout_s: float = module.build_timeout_s()
    return timeout_s


@pytest.fixture(scope="session")
def gguf() -> Path:
    """The 0.5B judge model, with llama-cpp-python built (once, cached) and installed. Once per
    session: when the build cannot finish, every test that needs it fails with that one message
    (pytest keeps a session fixture's error) instead of starting the build again."""
    try:
        build_timeout_s = setup_llama_build_timeout_s()
    except SystemExit as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        done = subprocess.run(
            [sys.executable, str(SETUP_LLAMA)],
            capture_output=True,
            text=True,
            timeout=build_timeout_s + SETUP_MARGIN_S,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"{SETUP_LLAMA.name} did not finish in {exc.timeout:.0f} s: "
            f"{(exc.stderr or b'')[-1500:]!r}",
            pytrace=False,
        )
    if done.returncode == 2:
        pytest.skip(f"llama-cpp-python cannot be built here: {done.stderr[-500:]}")
    if done.returncode != 0:
        pytest.fail(f"{SETUP_LLAMA.name} failed: {done.stderr[-2000:]}", pytrace=False)
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(autouse=True)
def one_llama_thread(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The local judge's server on one CPU thread in the suite (unless the environment names
    another count): the suite's other workers keep the cores busy, and two llama.cpp threads
    that wait for each other at every step lose out to them (4 calls: 78 s on 2 threads, 48 s
    on 1, beside 3 busy processes on 2 cores). Only the time depends on it."""
    if "gguf" in request.fixturenames:
        monkeypatch.setenv("RAGMETER_LOCAL_THREADS", os.environ.get("RAGMETER_LOCAL_THREADS", "1"))


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian Chromium, headless, through Playwright (installed once if missing). Per module:
    Playwright's sync API keeps an event loop running in the main thread while it is open, and
    a later test's ``asyncio.run`` would fail inside it."""
    from playwright.sync_api import sync_playwright

    path, why_not = chromium_executable()
    if path is None:
        pytest.skip(f"no Chromium for the browser tests: {why_not}")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page_events() -> PageEvents:
    return PageEvents()


@pytest.fixture
def page(browser: Browser, page_events: PageEvents) -> Iterator[Page]:
    """A fresh page (1280x800) whose console errors, failed requests, dialogs and page errors
    are recorded in ``page_events``; a dialog is dismissed."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    opened = context.new_page()

    def on_console(message: Any) -> None:
        if message.type == "error":
            page_events.console_errors.append(message.text)

    def on_dialog(dialog: Any) -> None:
        page_events.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    opened.on("console", on_console)
    opened.on("dialog", on_dialog)
    opened.on("pageerror", lambda error: page_events.page_errors.append(str(error)))
    opened.on(
        "requestfailed",
        lambda request: page_events.failed_requests.append(f"{request.url}: {request.failure}"),
    )
    try:
        yield opened
    finally:
        context.close()

"""Fixtures of the integration tests: a real headless Chromium (``browser.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.browser import CHROMIUM_ARGS, PageEvents, chromium_executable

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


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

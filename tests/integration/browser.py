"""Real headless Chromium for the browser tests: Debian's ``chromium`` driven by Playwright with
``executable_path`` (``playwright install`` downloads browsers and cannot here, ../shared/FACTS.md).

``chromium_executable()`` finds Chromium, installing the Debian package once when it is missing
and the test process may (root and ``apt-get`` present). The fixtures in ``conftest.py`` give a
browser per session and a page per test that records what a test must be able to assert: console
errors, requests that failed, dialogs opened (an ``alert`` from injected markup) and pages that
crashed. Where Chromium cannot be installed the browser tests skip with the reason."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
_CANDIDATES = ("chromium", "chromium-browser")
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
SCREENSHOTS_ENV = "RAGMETER_SCREENSHOTS"  # "docs": write the README's screenshots


def _found() -> str | None:
    for name in _CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium_executable() -> tuple[str | None, str]:
    """Chromium's path, installing Debian's package when missing and possible; else None and
    why not."""
    path = _found()
    if path:
        return path, ""
    if shutil.which("apt-get") is None:
        return None, "Chromium is not installed and there is no apt-get to install it"
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        return None, "Chromium is not installed; install it with: sudo apt-get install chromium"
    # test worker processes install it one at a time; the next finds it installed
    with (Path(tempfile.gettempdir()) / "ragmeter-chromium-install.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = _found()
        return (path, "") if path else _install_chromium()


def _install_chromium() -> tuple[str | None, str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]
    done = subprocess.run(install, capture_output=True, text=True, timeout=900, env=env)
    if done.returncode != 0:  # a stale package list: refresh it once
        subprocess.run(["apt-get", "update"], capture_output=True, timeout=600, env=env)
        done = subprocess.run(install, capture_output=True, text=True, timeout=900, env=env)
    if done.returncode != 0:
        tail = " ".join(done.stderr.strip().splitlines()[-2:])
        return None, f"apt-get install chromium failed: {tail}"
    path = _found()
    return (path, "") if path else (None, "apt-get installed chromium but it is not on PATH")


@dataclass
class PageEvents:
    """What happened in a page while a test drove it."""

    console_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert not self.dialogs, f"a dialog opened: {self.dialogs}"
        assert not self.page_errors, f"page errors: {self.page_errors}"
        assert not self.failed_requests, f"failed requests: {self.failed_requests}"
        assert not self.console_errors, f"console errors: {self.console_errors}"


def screenshots_folder() -> Path:
    """Where the browser tests save their screenshots: a temporary folder, or ``docs/images``
    (the README's screenshots, tracked) when ``RAGMETER_SCREENSHOTS=docs``, so a test run
    leaves the repository unchanged unless asked."""
    if os.environ.get(SCREENSHOTS_ENV, "").strip().lower() == "docs":
        folder = DOCS_IMAGES
    else:
        folder = Path(tempfile.gettempdir()) / f"ragmeter-screenshots-{os.getuid()}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def screenshot_path(name: str) -> Path:
    """``NAME.png`` in :func:`screenshots_folder`, any earlier one removed (so the test checks
    the file it made)."""
    path = screenshots_folder() / f"{name}.png"
    path.unlink(missing_ok=True)
    return path


def assert_png(path: Path, min_bytes: int = 1_000) -> None:
    """``path`` is a PNG of at least ``min_bytes``."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert len(data) >= min_bytes, f"{path} is only {len(data)} bytes"


def take_screenshot(page: Any, name: str, full_page: bool = False) -> Path:
    """Save the page as ``NAME.png`` (:func:`screenshot_path`) and check it is a real PNG."""
    path = screenshot_path(name)
    page.screenshot(path=str(path), full_page=full_page)
    assert_png(path)
    return path

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragmeter.registry import registry

# pytest-xdist's workers have no terminal: rich would print 80 columns and wrap the lines the
# tests read; the tests that check narrow output set their own width
os.environ.setdefault("COLUMNS", "200")

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
DATASETS = SHARED / "datasets"


# the installed versions of the dependencies whose behaviour the tests pin down, printed in the
# session header so a failure can be read against them (CI installs the newest allowed)
HEADER_PACKAGES = ("PyYAML", "pydantic", "numpy", "httpx", "click", "rich", "onnxruntime")


def pytest_report_header() -> str:
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in HEADER_PACKAGES:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} absent")
    return "dependencies: " + ", ".join(found)


@pytest.fixture(autouse=True)
def _registrations_end_with_the_test() -> Iterator[None]:
    """A test's ``registry.register`` calls are undone after it: the registry is process-wide,
    and a plugin a test declares must not reach the commands later tests run in-process."""
    saved = registry.snapshot()
    yield
    registry.restore(saved)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_health(url: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not become healthy in {timeout_s}s")


@pytest.fixture
def reference_server() -> Iterator[str]:
    """`ragmeter reference-server` as a real subprocess on 127.0.0.1."""
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ragmeter",
            "reference-server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def judge_servers() -> Iterator[Any]:
    """Start scripted judge servers on 127.0.0.1 (tests.test_judges_unit.JudgeServer); all are
    closed after the test."""
    from tests.test_judges_unit import JudgeServer

    servers: list[JudgeServer] = []

    def start(script: Any) -> JudgeServer:
        servers.append(JudgeServer(script))
        return servers[-1]

    yield start
    for server in servers:
        server.close()

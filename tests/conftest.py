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
from hypothesis import HealthCheck, settings

from ragmeter.registry import registry

# pytest-xdist's workers have no terminal: rich would print 80 columns and wrap the lines the
# tests read; the tests that check narrow output set their own width
os.environ.setdefault("COLUMNS", "200")

# property tests on a busy machine: no per-example deadline, and slow input generation is not
# a failure (the examples and what they assert do not depend on the machine's speed)
settings.register_profile(
    "ragmeter",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("ragmeter")

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
DATASETS = SHARED / "datasets"


# the installed versions of the dependencies whose behaviour the tests pin down, printed in the
# session header so a failure can be read against them (CI installs the newest allowed)
HEADER_PACKAGES = ("PyYAML", "pydantic", "numpy", "httpx", "click", "rich", "onnxruntime")


# Scheduling (pytest-xdist, addopts ``--dist loadfile --no-loadscope-reorder``): a worker takes
# a whole test file, in the order below. The local judge's files share one worker: each starts a
# llama.cpp server on 2 threads, and three at once on 2 cores push every judge call past its
# timeout. The longest files start first, so none of them is left running alone at the end.
# Only the time depends on this list, never a result.
LOCAL_JUDGE_SCOPE = "tests/integration/*_llama.py"
LONGEST_FIRST = (
    "tests/integration/test_store_load.py",
    "tests/scoring/test_compare.py",
    "tests/integration/test_report_browser.py",
    "tests/integration/test_web_browser.py",
    "tests/integration/test_trust_edges.py",
    "tests/integration/test_interruption.py",
    "tests/integration/test_squad.py",
    "tests/scoring/test_power.py",
    "tests/reports/test_html.py",
    "tests/web/test_api.py",
    "tests/runner/test_score_while_asking.py",
    "tests/integration/test_reference_targets.py",
)


def scheduling_scope(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    local_judge = path.startswith("tests/integration/") and path.endswith("_llama.py")
    return LOCAL_JUDGE_SCOPE if local_judge else path


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: place for place, path in enumerate((LOCAL_JUDGE_SCOPE, *LONGEST_FIRST))}
    items.sort(key=lambda item: rank.get(scheduling_scope(item.nodeid), len(rank)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class FileScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scheduling_scope(nodeid)

    return FileScheduling(config, log)


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
    """Start scripted judge servers on 127.0.0.1 (tests.judges.servers.JudgeServer); all are
    closed after the test."""
    from tests.judges.servers import JudgeServer

    servers: list[JudgeServer] = []

    def start(script: Any) -> JudgeServer:
        servers.append(JudgeServer(script))
        return servers[-1]

    yield start
    for server in servers:
        server.close()

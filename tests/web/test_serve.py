"""``ragmeter serve`` as a real process: it listens on 127.0.0.1 only unless ``--host`` says
otherwise, warns that the UI has no authentication when it does, and refuses a missing store."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ragmeter.store.sqlite import RunStore
from tests.conftest import free_port

pytestmark = pytest.mark.integration
pytest.importorskip("uvicorn")
pytest.importorskip("starlette")


def _store(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"
    RunStore(path).close()  # an empty store
    return path


def _start(store: Path, port: int, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ragmeter",
            "serve",
            "--store",
            str(store),
            "--port",
            str(port),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait(port: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120  # a hang guard: it answers within a few seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1]
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/runs", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise AssertionError("ragmeter serve did not answer")


def _stop(process: subprocess.Popen[str]) -> tuple[str, str]:
    process.terminate()
    try:
        return process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.communicate()


def _listening(port: int) -> list[str]:
    """The local addresses (hex, as /proc/net/tcp{,6} lists them) listening on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                found.append(address)
    return found


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc/net/tcp")
def test_serve_binds_loopback_by_default(tmp_path: Path) -> None:
    store, port = _store(tmp_path), free_port()
    process = _start(store, port)
    try:
        _wait(port, process)
        assert _listening(port) == ["0100007F"]  # 127.0.0.1 only, no IPv6, no 0.0.0.0
        # DNS rebinding: a page on another name that resolves to 127.0.0.1 gets a 400
        rebound = httpx.get(
            f"http://127.0.0.1:{port}/api/runs", headers={"Host": "attacker.example"}, timeout=5
        )
        assert rebound.status_code == 400
        local = httpx.get(f"http://127.0.0.1:{port}/", headers={"Host": f"localhost:{port}"})
        assert local.status_code == 200
    finally:
        out, err = _stop(process)
    assert f"http://127.0.0.1:{port}/" in out
    assert "no authentication" not in err


def test_serve_warns_on_another_host(tmp_path: Path) -> None:
    store, port = _store(tmp_path), free_port()
    process = _start(store, port, "--host", "0.0.0.0")
    try:
        _wait(port, process)
        anyone = httpx.get(f"http://127.0.0.1:{port}/", headers={"Host": "ui.example"}, timeout=5)
        assert anyone.status_code == 200  # a wildcard address answers any host (and warns)
    finally:
        _, err = _stop(process)
    assert "warning" in err and "no authentication" in err and "0.0.0.0" in err


def test_serve_refuses_a_missing_store(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ragmeter", "serve", "--store", str(tmp_path / "none.db")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    assert "no run store" in done.stderr
    assert not (tmp_path / "none.db").exists()


def test_serve_without_the_web_extra_says_what_to_install(tmp_path: Path) -> None:
    store = _store(tmp_path)
    code = (
        "import sys; sys.modules['uvicorn'] = None; "
        "from ragmeter.cli.main import main; "
        f"main(['serve', '--store', {str(store)!r}])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "pip install 'ragmeter[web]'" in done.stderr

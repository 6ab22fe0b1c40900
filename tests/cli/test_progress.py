"""The progress display of ``ragmeter eval`` on a real terminal (a pseudo-terminal): the
display is off when output is not a terminal, so only a pty shows what a user sees."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def _run_on_terminal(arguments: list[str], folder: Path) -> tuple[int, str]:
    """Run ``python -m ragmeter`` with stdout and stderr on a pty; return the exit code and
    what the terminal received, without its escape sequences."""
    leader, follower = pty.openpty()
    environment = {**os.environ, "TERM": "xterm", "COLUMNS": "120", "LINES": "40"}
    environment.pop("NO_COLOR", None)
    environment.pop("CI", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "ragmeter", *arguments],
        cwd=folder,
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env=environment,
    )
    os.close(follower)
    received = bytearray()
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the follower side closed: the process is gone
            break
        if not chunk:
            break
        received.extend(chunk)
    os.close(leader)
    code = process.wait(timeout=300)
    return code, ESCAPES.sub("", received.decode("utf-8", "replace"))


@pytest.mark.skipif(not hasattr(pty, "openpty"), reason="needs a pseudo-terminal")
def test_eval_on_a_terminal_shows_the_cases_being_read_then_the_questions(tmp_path):
    code, shown = _run_on_terminal(["eval", "--store", "runs.db", "--metrics", "lexical"], tmp_path)
    assert code == 0, shown
    reading = shown.find("reading cases")
    assert reading >= 0, shown
    assert "87" in shown[reading : reading + 200]
    asking = re.search(r"run \S+ .*87/87", shown[reading:])
    assert asking is not None, shown
    assert "stored in runs.db" in shown

"""Run a ``ragmeter`` command as a test's subprocess so that a timeout ends everything it started
(a local judge's llama.cpp server is its child): the command gets its own process group, and on
timeout the group gets SIGTERM, then SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any


def run_bounded(
    command: list[str], timeout_s: float, **options: Any
) -> subprocess.CompletedProcess[str]:
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **options,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            for sent in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(process.pid, sent)
                except ProcessLookupError:
                    break
                try:
                    process.wait(timeout=15)
                    break
                except subprocess.TimeoutExpired:
                    continue
            raise
        return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)

"""A local GGUF model served by llama.cpp (``llama-cpp-python[server]``) on 127.0.0.1.

``local:PATH.gguf`` starts ``python -m llama_cpp.server`` on a free loopback port, waits until
``/v1/models`` answers, judges through the OpenAI-compatible client (which falls back to
llama.cpp's ``json_object``+``schema`` structured output) and stops the server in ``aclose``.
The judge's identity is pinned to the file's sha256, so a changed model file changes the cache
key and the records.

Time limits: start-up (loading the model until ``/v1/models`` answers) may take up to
``START_TIMEOUT_S`` (180 s, or ``timeout_s`` when that is longer) once; after that every request
has the same ``timeout_s`` deadline and ``max_retries`` as any other judge. Requests are sent
one at a time (llama.cpp's server computes one completion at a time anyway), so the deadline
measures the judge's work on that request, not its wait behind the others.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import httpx

from ragmeter.judges.base import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    JudgeError,
    JudgeReply,
    Message,
)
from ragmeter.judges.openai_compat import OpenAICompatJudge

INSTALL_HINT = (
    "llama-cpp-python is not installed: run python scripts/setup_llama.py "
    "(or pip install 'llama-cpp-python[server]==0.3.36')"
)
START_TIMEOUT_S = 180.0
_HASHES: dict[tuple[str, int, float], str] = {}


def file_sha256(path: Path) -> str:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime)
    if key not in _HASHES:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _HASHES[key] = digest.hexdigest()
    return _HASHES[key]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalLlamaJudge:
    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 2048,
        n_threads: int = 2,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        self.path = Path(model_path).expanduser()
        if not self.path.is_file():
            raise JudgeError("config", f"local judge model file not found: {self.path}")
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.timeout_s = timeout_s  # per request, once started
        self.max_retries = max_retries
        self.start_timeout_s = max(START_TIMEOUT_S, timeout_s)
        self.sha256 = file_sha256(self.path)
        self.process: subprocess.Popen[bytes] | None = None
        self.client: OpenAICompatJudge | None = None
        self._log: IO[bytes] | None = None
        self._lock = asyncio.Lock()
        self._one_at_a_time = asyncio.Lock()
        self._start_error: JudgeError | None = None  # a failed start is not retried per call

    @property
    def model(self) -> str:
        return f"local:{self.path.name}@sha256:{self.sha256[:12]}"

    @property
    def params(self) -> dict[str, Any]:
        return {"temperature": 0, "seed": 0, "n_ctx": self.n_ctx}

    @property
    def requests(self) -> int:
        return self.client.requests if self.client else 0

    def _command(self, port: int) -> list[str]:
        return [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.path),
            "--host", "127.0.0.1",
            "--port", str(port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads),
        ]  # fmt: skip

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        text = Path(self._log.name).read_bytes()[-800:].decode("utf-8", "replace")
        return text.strip()

    async def start(self) -> OpenAICompatJudge:
        async with self._lock:
            if self.client is not None:
                return self.client
            if self._start_error is not None:
                raise self._start_error
            try:
                return await self._start()
            except JudgeError as exc:
                self._start_error = exc
                raise

    async def _start(self) -> OpenAICompatJudge:
        if importlib.util.find_spec("llama_cpp") is None:
            raise JudgeError("config", INSTALL_HINT)
        port = free_port()
        self._log = tempfile.NamedTemporaryFile(  # noqa: SIM115 (lives as long as the server)
            prefix="ragmeter-llama-", suffix=".log"
        )
        self.process = subprocess.Popen(
            self._command(port),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        base = f"http://127.0.0.1:{port}/v1"
        await self._wait_ready(base)
        self.client = OpenAICompatJudge(
            base,
            self.path.stem,
            api_key_env=None,
            key_required=False,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            model_id=self.model,
        )
        return self.client

    async def _wait_ready(self, base: str) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        async with httpx.AsyncClient(timeout=2.0) as probe:
            while time.monotonic() < deadline:
                assert self.process is not None
                if self.process.poll() is not None:
                    tail = self._log_tail()
                    self._stop()
                    raise JudgeError(
                        "server", f"llama.cpp server exited at start: ...{tail[-400:]}"
                    )
                try:
                    if (await probe.get(f"{base}/models")).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.25)
        self._stop()
        raise JudgeError("server", f"llama.cpp server not ready within {self.start_timeout_s:g}s")

    async def complete(
        self, messages: list[Message], schema: dict[str, Any] | None, max_tokens: int
    ) -> JudgeReply:
        client = await self.start()
        async with self._one_at_a_time:
            return await client.complete(messages, schema, max_tokens)

    def _stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    async def aclose(self) -> None:
        if self.client is not None:
            await self.client.aclose()
            self.client = None
        self._stop()

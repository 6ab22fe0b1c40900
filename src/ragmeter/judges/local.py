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

Context size (``n_ctx``): given (``RAGMETER_LOCAL_N_CTX=N``), else chosen from the model file
(``auto``): the model's training context (``ARCH.context_length`` in the GGUF header), at most
``AUTO_MAX_CTX`` (8192: the default evidence, 10 chunks of 2,000 characters, and the reply fit,
while a 2-core CPU still reads a full prompt in well under the request timeout), and at most what
a quarter of the available memory holds as the f16 KV cache (``2 x layers x kv_heads x head_dim
x 2`` bytes a token), never under 2048 (or the training context when that is smaller). Every
prompt is measured with the server's tokenizer (``POST /extras/tokenize/count``) before it is
sent and its evidence trimmed to fit (:mod:`ragmeter.judges.fitting`).

llama-cpp-python's server accepts ``response_format`` ``json_object`` (with a ``schema``) only,
so this judge asks that from its first call (no rejected ``json_schema`` request). The server is
a child process stopped in ``aclose``, at interpreter exit and by :func:`stop_servers` (the CLI
calls it on SIGINT/SIGTERM before it exits): it never outlives the run.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import importlib.util
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
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
from ragmeter.judges.fitting import MESSAGE_OVERHEAD_TOKENS, estimate_tokens
from ragmeter.judges.openai_compat import OpenAICompatJudge

INSTALL_HINT = (
    "llama-cpp-python is not installed: run python scripts/setup_llama.py "
    "(or pip install 'llama-cpp-python[server]==0.3.36')"
)
START_TIMEOUT_S = 180.0
AUTO_MAX_CTX = 8192
MIN_AUTO_CTX = 2048
MEMORY_SHARE = 0.25  # of the available memory, for the KV cache of an automatic n_ctx
_HASHES: dict[tuple[str, int, float], str] = {}
# starts the server as ``python ARGS...`` in the same process, after asking Linux to send it
# SIGTERM when its parent dies, however it dies (a SIGKILL runs no handler and no atexit)
WITH_PARENT = (
    "import ctypes, os, signal, sys\n"
    "if sys.platform.startswith('linux'):\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(0)  # the parent died before the request\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])\n"
)
# the llama.cpp servers this process started and has not stopped yet, by pid
_LIVE: dict[int, subprocess.Popen[bytes]] = {}
_LIVE_LOCK = threading.Lock()


def stop_servers(wait_s: float = 5.0) -> None:
    """Stop every llama.cpp server this process started (SIGTERM, then SIGKILL after
    ``wait_s``). Safe from a signal path and at exit; the judges' own ``aclose`` does the same
    for theirs."""
    with _LIVE_LOCK:
        live = list(_LIVE.values())
        _LIVE.clear()
    for process in live:
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + wait_s
    for process in live:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


atexit.register(stop_servers)

_GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
                 12: "d"}  # fmt: skip
_GGUF_WANTED = (
    "context_length",
    "block_count",
    "embedding_length",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.key_length",
)


def gguf_info(path: Path) -> dict[str, Any]:
    """The model's architecture and its size keys (``context_length``, ``block_count``, the
    attention heads, ...) read from the GGUF header; {} when the file is not GGUF v2/v3."""
    info: dict[str, Any] = {}
    with path.open("rb") as handle:

        def read(fmt: str) -> Any:
            size = struct.calcsize("<" + fmt)
            return struct.unpack("<" + fmt, handle.read(size))[0]

        def string() -> str:
            return str(handle.read(read("Q")).decode("utf-8", "replace"))

        def value(value_type: int) -> Any:
            if value_type == 8:
                return string()
            if value_type == 9:
                item, count = read("I"), read("Q")
                if item in _GGUF_SCALARS:  # skipped, not read: tokenizer arrays are large
                    handle.seek(count * struct.calcsize("<" + _GGUF_SCALARS[item]), 1)
                else:
                    for _ in range(count):
                        value(item)
                return None
            return read(_GGUF_SCALARS[value_type])

        try:
            if handle.read(4) != b"GGUF" or read("I") not in (2, 3):
                return {}
            read("Q")  # tensors
            for _ in range(read("Q")):
                key, value_type = string(), read("I")
                got = value(value_type)
                if key == "general.architecture":
                    info["architecture"] = got
                elif "." in key and key.split(".", 1)[1] in _GGUF_WANTED:
                    info[key.split(".", 1)[1]] = got
                if "architecture" in info and all(k in info for k in _GGUF_WANTED[:5]):
                    break
        except (struct.error, KeyError, OSError, MemoryError):
            pass
    return info


def available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None where there is none)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def auto_n_ctx(path: Path) -> tuple[int, str]:
    """The context size ``local:`` chooses for ``path`` and why (see the module docstring)."""
    info = gguf_info(path)
    trained = int(info.get("context_length") or 0)
    if trained <= 0:
        return MIN_AUTO_CTX, "no training context in the model file"
    chosen, why = min(trained, AUTO_MAX_CTX), f"training context {trained}, cap {AUTO_MAX_CTX}"
    heads = int(info.get("attention.head_count") or 0)
    head_dim = int(info.get("attention.key_length") or 0) or (
        int(info.get("embedding_length") or 0) // heads if heads else 0
    )
    kv_heads = int(info.get("attention.head_count_kv") or heads)
    per_token = 2 * int(info.get("block_count") or 0) * kv_heads * head_dim * 2
    memory = available_memory()
    if per_token > 0 and memory:
        fits = int(memory * MEMORY_SHARE) // per_token // 256 * 256
        if fits < chosen:
            chosen, why = fits, f"{why}, memory for {fits}"
    return max(chosen, min(MIN_AUTO_CTX, trained)), why


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
        n_ctx: int | None = None,
        n_threads: int = 2,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        self.path = Path(model_path).expanduser()
        if not self.path.is_file():
            raise JudgeError("config", f"local judge model file not found: {self.path}")
        # automatic: from the model's training context, bounded by memory (the judge's
        # snapshot records which, judges.preflight.check_local)
        self.n_ctx = auto_n_ctx(self.path)[0] if n_ctx is None else n_ctx
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
        self._base = ""

    @property
    def model(self) -> str:
        return f"local:{self.path.name}@sha256:{self.sha256[:12]}"

    @property
    def params(self) -> dict[str, Any]:
        return {"temperature": 0, "seed": 0, "n_ctx": self.n_ctx}

    @property
    def requests(self) -> int:
        return self.client.requests if self.client else 0

    @property
    def context_window(self) -> int:
        """Tokens of prompt and reply together the server holds (its ``n_ctx``)."""
        return self.n_ctx

    async def count_tokens(self, messages: list[Message]) -> int:
        """The prompt tokens of ``messages``: the server's tokenizer on their text plus the
        chat template's role markers; a conservative estimate when the tokenizer does not
        answer."""
        client = await self.start()
        text = "\n".join(m["content"] for m in messages)
        async with self._one_at_a_time:  # the server serves one request at a time anyway
            try:
                async with asyncio.timeout(self.timeout_s):
                    reply = await client._client_for().post(
                        f"{self._base}/extras/tokenize/count", json={"input": text}
                    )
                count = int(reply.json()["count"])
            except (TimeoutError, httpx.HTTPError, ValueError, KeyError, TypeError):
                return estimate_tokens(messages)
        return count + MESSAGE_OVERHEAD_TOKENS * (len(messages) + 1)

    def _command(self, port: int) -> list[str]:
        return [
            sys.executable, "-c", WITH_PARENT, str(os.getpid()),
            "-m", "llama_cpp.server",
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
        self._base = f"http://127.0.0.1:{port}"
        self._log = tempfile.NamedTemporaryFile(  # noqa: SIM115 (lives as long as the server)
            prefix="ragmeter-llama-", suffix=".log"
        )
        self.process = subprocess.Popen(
            self._command(port),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        with _LIVE_LOCK:
            _LIVE[self.process.pid] = self.process
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
        self.client.format_mode = "json_object"  # all llama-cpp-python's server accepts
        self.client._format_known = True
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
        if self.process is not None:
            with _LIVE_LOCK:
                _LIVE.pop(self.process.pid, None)
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

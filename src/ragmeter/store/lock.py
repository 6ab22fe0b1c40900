"""Run locks: one process at a time drives a run.

A run's lock is ``fcntl.flock`` on ``<store>.locks/<run_id>.lock`` beside the store, holding the
pid of the process that drives it. The kernel releases a flock when its process ends, however
it ends (SIGKILL included), so a lock is never left stale; the file is removed on release.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import re
import time
from pathlib import Path
from types import TracebackType

from ragmeter.errors import RunLockedError, StoreError

_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}")


def lock_dir(store_path: Path) -> Path:
    """The folder of a store's run locks: ``<store>.locks`` beside the store file."""
    return store_path.with_name(store_path.name + ".locks")


def lock_path(store_path: Path, run_id: str) -> Path:
    name = run_id if _SAFE_NAME.fullmatch(run_id) else hashlib.sha256(run_id.encode()).hexdigest()
    return lock_dir(store_path) / f"{name}.lock"


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def holder_pid(store_path: Path, run_id: str) -> int | None:
    """The pid of the live process driving ``run_id`` (0 if it has not written it yet), or None
    when nobody holds the run's lock."""
    try:
        fd = os.open(lock_path(store_path, run_id), os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            pid = _read_pid(fd)
            return pid if pid is not None else 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _flock_soon(fd: int, patience_s: float = 0.2) -> None:
    """Take the exclusive lock, trying for a moment: ``holder_pid`` (``ragmeter runs``) holds a
    shared lock for a few microseconds when it looks."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN) or time.monotonic() > deadline:
                raise
        time.sleep(0.01)


class RunLock:
    """``with RunLock(store_path, run_id):`` holds the run's lock or raises RunLockedError."""

    def __init__(self, store_path: Path, run_id: str) -> None:
        self.run_id = run_id
        self.path = lock_path(store_path, run_id)
        self._fd: int | None = None

    def acquire(self) -> None:
        if self._fd is not None:
            raise RunLockedError(self._locked_message(os.getpid()))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the run lock folder {self.path.parent}: {exc.strerror or exc}"
            ) from exc
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the run lock {self.path}: {exc.strerror or exc}"
                ) from exc
            try:
                _flock_soon(fd)
            except OSError as exc:
                pid = _read_pid(fd)
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise RunLockedError(self._locked_message(pid)) from None
                raise StoreError(f"cannot lock {self.path}: {exc.strerror or exc}") from exc
            # the holder before us may have removed the file after we opened it: then our lock
            # is on a file nobody else can find, and we try again on the current one
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            # removed while still held, so a process waiting on this file sees it is stale
            self.path.unlink(missing_ok=True)
        except OSError:
            pass
        finally:
            os.close(fd)  # closing the last descriptor releases the flock

    @property
    def held(self) -> bool:
        return self._fd is not None

    def _locked_message(self, pid: int | None) -> str:
        who = f"pid {pid}" if pid is not None else "pid unknown"
        return (
            f"run {self.run_id} is being driven by another process ({who}); wait for it to "
            f"finish or stop it, then `ragmeter eval --resume {self.run_id}`"
        )

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()

"""The run store's errors: a run that is not there, and every SQLite failure or unreadable row
turned into a :class:`~ragmeter.errors.StoreError` that says what to do."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from pydantic import ValidationError

from ragmeter.errors import InputError, StoreError

HINT = "pass --store a new or existing .db file"


class RunNotFoundError(InputError, KeyError):
    """No run has this id, or (``candidates`` given) more than one starts with it.

    An :class:`~ragmeter.errors.InputError` (exit code 2), and still a ``KeyError`` for code
    that looks runs up like a mapping."""

    def __init__(self, run_id: str, candidates: list[str] | None = None) -> None:
        super().__init__(run_id)
        self.candidates = candidates or []

    def __str__(self) -> str:
        if self.candidates:
            shown = ", ".join(self.candidates[:5])
            return f"run id prefix {self.args[0]!r} is ambiguous: it starts {shown}; give more"
        return f"no run {self.args[0]!r} in the store"


def not_a_store(path: Path, why: str) -> StoreError:
    return StoreError(f"{path} is not a ragmeter run store ({why}); {HINT}")


def sqlite_error(path: Path, exc: sqlite3.Error, doing: str, busy_timeout_s: float) -> StoreError:
    """A StoreError that says what went wrong with the store and what to do about it."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    where = f"run store {path}"
    detail = str(exc)
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return StoreError(
            f"{where} is busy: another process held its write lock for more than"
            f" {busy_timeout_s:g} s while {doing}; try again when that process has finished"
        )
    if code in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
        return not_a_store(path, detail)
    if code == sqlite3.SQLITE_FULL:
        return StoreError(f"{where}: the disk is full ({doing}); free some space and retry")
    if code == sqlite3.SQLITE_READONLY:
        return StoreError(f"{where} is read-only ({detail}); {HINT}")
    if code == sqlite3.SQLITE_CANTOPEN:
        folder = read_only_folder(path)
        if folder is not None:
            return StoreError(
                f"{where} is in a read-only folder ({folder}: {detail}); the store writes its "
                f"journal and lock files beside it; {HINT} in a writable folder"
            )
        return StoreError(f"cannot open the {where} ({detail}); {HINT}")
    return StoreError(f"{where}: {doing} failed: {detail}")


def read_only_folder(path: Path) -> str | None:
    """Why no file can be made in the folder of ``path`` (read-only, no permission), or None.
    Tried, not read from the mode bits: those say nothing of a read-only mount or an
    immutable folder, nor to root."""
    folder = path.parent if str(path.parent) else Path(".")
    try:
        with tempfile.TemporaryFile(dir=folder):
            return None
    except FileNotFoundError:
        return None  # a missing folder: not a read-only one
    except OSError as exc:
        return f"{folder}: {exc.strerror or exc}"


def unreadable_run(path: Path, run_id: str, what: str) -> StoreError:
    return StoreError(
        f"run {run_id} in {path} cannot be read: {what}"
        " (it was probably written by another ragmeter version)"
    )


def describe(error: ValidationError, prefix: str = "") -> str:
    """``field.path: message`` for each problem of a validation error (at most three)."""
    parts = []
    for item in error.errors()[:3]:
        where = ".".join(str(part) for part in item["loc"])
        parts.append(f"{prefix}{where or 'JSON'}: {item['msg']}")
    more = len(error.errors()) - 3
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")

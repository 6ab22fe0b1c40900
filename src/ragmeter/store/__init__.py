"""The SQLite run store."""

from ragmeter.store.sqlite import RunNotFoundError, RunStore

__all__ = ["RunNotFoundError", "RunStore"]

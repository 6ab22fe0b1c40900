"""The async run engine.

The names are imported on first use, so that a module of this package (the scoring process
starts with ``ragmeter.runner.pipeline``) does not import the engine, the targets and HTTP."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragmeter.runner.engine import (
        RunInterruptedError,
        RunOutcome,
        evaluate,
        run_evaluation_async,
    )

__all__ = ["RunInterruptedError", "RunOutcome", "evaluate", "run_evaluation_async"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from ragmeter.runner import engine

        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

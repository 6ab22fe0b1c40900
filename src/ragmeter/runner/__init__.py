"""The run: ``run.evaluate`` / ``run.evaluate_async`` (every stage of a run, in order), the
asking engine, scoring, pre-flight checks and verdicts.

The names are imported on first use, so that a module of this package (the scoring process
starts with ``ragmeter.runner.score_while_asking``) does not import the engine, the targets
and HTTP."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragmeter.runner.engine import RunInterruptedError, RunOutcome, run_evaluation_async
    from ragmeter.runner.run import GateFailedError, evaluate, evaluate_async

_HOMES = {
    "RunInterruptedError": "ragmeter.runner.engine",
    "RunOutcome": "ragmeter.runner.engine",
    "run_evaluation_async": "ragmeter.runner.engine",
    "GateFailedError": "ragmeter.runner.run",
    "evaluate": "ragmeter.runner.run",
    "evaluate_async": "ragmeter.runner.run",
}
__all__ = [
    "GateFailedError",
    "RunInterruptedError",
    "RunOutcome",
    "evaluate",
    "evaluate_async",
    "run_evaluation_async",
]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

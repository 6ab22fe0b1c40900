"""The async run engine."""

from ragmeter.runner.engine import RunInterruptedError, RunOutcome, evaluate, run_evaluation_async

__all__ = ["RunInterruptedError", "RunOutcome", "evaluate", "run_evaluation_async"]

"""ragmeter: evaluate retrieval-augmented generation systems.

The public API: ``evaluate`` (or ``await evaluate_async``) runs an evaluation,
``estimate_judging_cost`` says what its judging would take before anything is asked,
``EvalConfig``/``load_config`` configure it, ``load_dataset`` reads cases, ``RunFile`` reads a
run file, and the models describe cases, responses and scores. Seed 002's names work too
(docs/api.md): ``run_evaluation(config)`` returns the finished :class:`Run` (``to_pandas()``),
``DatasetName`` names its datasets, and ``EvalConfig`` takes its field names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Case",
    "DatasetName",
    "EvalConfig",
    "EvalRun",
    "Response",
    "Run",
    "RunFile",
    "RunStore",
    "Score",
    "__version__",
    "estimate_judging_cost",
    "evaluate",
    "evaluate_async",
    "load_config",
    "load_dataset",
    "run_evaluation",
]

_LAZY = {
    "Case": "ragmeter.models",
    "Response": "ragmeter.models",
    "Score": "ragmeter.models",
    "EvalConfig": "ragmeter.config",
    "load_config": "ragmeter.config",
    "load_dataset": "ragmeter.datasets",
    "estimate_judging_cost": "ragmeter.runner.run",
    "evaluate": "ragmeter.runner.run",
    "evaluate_async": "ragmeter.runner.run",
    "RunStore": "ragmeter.store.sqlite",
    "RunFile": "ragmeter.runfile",
    "Run": "ragmeter.results",
    "DatasetName": "ragmeter.compat",
    "EvalRun": "ragmeter.compat",
    "run_evaluation": "ragmeter.compat",
}

if TYPE_CHECKING:
    from ragmeter.compat import DatasetName, EvalRun, run_evaluation
    from ragmeter.config import EvalConfig, load_config
    from ragmeter.datasets import load_dataset
    from ragmeter.models import Case, Response, Score
    from ragmeter.results import Run
    from ragmeter.runfile import RunFile
    from ragmeter.runner.run import estimate_judging_cost, evaluate, evaluate_async
    from ragmeter.store.sqlite import RunStore


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ragmeter' has no attribute {name!r}")

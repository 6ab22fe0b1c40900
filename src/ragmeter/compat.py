"""Seed 002's programmatic API, spelled as that seed spells it (docs/api.md maps each name):

```python
from ragmeter import EvalConfig, run_evaluation, DatasetName

config = EvalConfig(
    datasets=[DatasetName.RAGBENCH, DatasetName.SQUAD_V2],
    samples_per_dataset=50,
    rag_server_url="http://localhost:8001",
)
result = run_evaluation(config)
```

``EvalConfig`` takes seed 002's field names as aliases (``samples_per_dataset`` is ``samples``,
``rag_server_url`` is an HTTP ``target.url``); ``run_evaluation`` is :func:`ragmeter.evaluate`
returning the typed :class:`~ragmeter.results.Run` (``EvalRun``, seed 002's name).
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Any

from ragmeter.config import EvalConfig
from ragmeter.results import Run

if TYPE_CHECKING:
    from ragmeter.models import Case
    from ragmeter.runner.engine import ProgressHook
    from ragmeter.targets import Target

__all__ = ["DatasetName", "EvalRun", "run_evaluation"]

EvalRun = Run  # seed 002's name of a finished run (schemas/results.py)


class DatasetName(StrEnum):
    """Seed 002's named datasets. A member is its name as a string: ``DatasetName.SQUAD_V2`` is
    ``"squad_v2"``, which loads through the hub (the ``hub`` extra); offline, give a local copy
    as ``f"{DatasetName.SQUAD_V2}:PATH"`` or :meth:`at` (docs/datasets.md)."""

    RAGBENCH = "ragbench"
    QASPER = "qasper"
    SQUAD_V2 = "squad_v2"
    HOTPOTQA = "hotpotqa"
    MSMARCO = "msmarco"
    GOLDEN = "golden"

    def at(self, path: Any) -> str:
        """The dataset read from a local file or folder: ``NAME:PATH``."""
        return f"{self.value}:{path}"


def run_evaluation(
    config: EvalConfig | None = None,
    *,
    cases: list[Case] | None = None,
    target: Target | None = None,
    resume: str | None = None,
    on_progress: ProgressHook | None = None,
) -> Run:
    """Run an evaluation end to end and return the finished run (seed 002's entry point; the
    arguments are :func:`ragmeter.evaluate`'s). The run is stored and its run file written as
    with ``ragmeter eval``; ``run.to_pandas()`` gives its scores as a DataFrame."""
    from ragmeter.runner.run import evaluate

    outcome = evaluate(config, cases=cases, target=target, resume=resume, on_progress=on_progress)
    return Run.from_outcome(outcome)

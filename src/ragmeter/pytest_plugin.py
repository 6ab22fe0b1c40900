"""ragmeter's pytest plugin (registered through the ``pytest11`` entry point; inert unless used).

``pytest --run-eval --eval-samples 5`` (seed 002's form) runs one evaluation for the session and
gives it to the tests that ask for it:

```python
import pytest
from ragmeter.testing import assert_rag

@pytest.mark.rag_eval
def test_quality(rag_run):
    assert_rag(rag_run, "mrr > 0.5", "recall_at_5 > 0.7")
```

Without ``--run-eval`` tests marked ``rag_eval`` and tests using ``rag_run`` (``eval_run``) are
skipped, and nothing is evaluated; a session that uses neither is not touched at all. The
evaluation is ``ragmeter eval``'s: the config from ``--eval-config FILE`` (or none), the
``RAGMETER_*`` environment, then ``--eval-samples``, ``--eval-dataset`` and ``--eval-target``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ragmeter.config import EvalConfig
    from ragmeter.results import Run

MARKER = "rag_eval"
SKIP_REASON = "ragmeter evaluation: run pytest with --run-eval to evaluate"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragmeter", "ragmeter RAG evaluation")
    group.addoption(
        "--run-eval",
        action="store_true",
        default=False,
        help=f"Run the evaluation and the tests marked {MARKER} or using rag_run "
        "(skipped otherwise).",
    )
    group.addoption(
        "--eval-samples",
        type=int,
        default=None,
        metavar="N",
        help="Evaluate a seeded sample of N cases per dataset.",
    )
    group.addoption(
        "--eval-config", default=None, metavar="FILE", help="ragmeter config file (YAML)."
    )
    group.addoption(
        "--eval-dataset",
        action="append",
        default=None,
        metavar="DATASET",
        help="Dataset to evaluate (repeatable; default: the config's, else the demo).",
    )
    group.addoption(
        "--eval-target",
        default=None,
        metavar="SPEC",
        help="System under test: http(s)://HOST:PORT, reference, replay:FILE.jsonl or "
        "module:function (default: the config's).",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: needs a ragmeter evaluation; skipped unless pytest --run-eval"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-eval"):
        return
    for item in items:
        if item.get_closest_marker(MARKER) is not None:
            item.add_marker(pytest.mark.skip(reason=SKIP_REASON))


def eval_config_from(options: pytest.Config) -> EvalConfig:
    """The evaluation's config: ``--eval-config`` < environment < the ``--eval-*`` options."""
    from ragmeter.config import load_config
    from ragmeter.targets import parse_target_spec

    overrides: dict[str, Any] = {"progress": False}
    samples = options.getoption("--eval-samples")
    if samples is not None:
        overrides["samples"] = samples
    datasets = options.getoption("--eval-dataset")
    if datasets:
        overrides["datasets"] = list(datasets)
    target = options.getoption("--eval-target")
    if target:
        overrides["target"] = parse_target_spec(target)
    return load_config(options.getoption("--eval-config"), overrides)


@pytest.fixture(scope="session")
def rag_config(pytestconfig: pytest.Config) -> EvalConfig:
    """The config the session's evaluation runs with."""
    return eval_config_from(pytestconfig)


@pytest.fixture(scope="session")
def rag_run(pytestconfig: pytest.Config, rag_config: EvalConfig) -> Run:
    """The session's finished run (one run, shared by every test that asks);
    skips the test unless pytest was given --run-eval."""
    if not pytestconfig.getoption("--run-eval"):
        pytest.skip(SKIP_REASON)
    from ragmeter.compat import run_evaluation

    return run_evaluation(rag_config)


@pytest.fixture(scope="session")
def eval_run(rag_run: Run) -> Run:
    """Another name of ``rag_run``."""
    return rag_run

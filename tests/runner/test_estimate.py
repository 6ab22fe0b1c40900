"""``estimate_judging_cost(config)``: the judging estimate of ``eval --dry-run`` from Python, for
the cases the run would select, its judged tasks and ``-P judged.max_contexts``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter import EvalConfig, estimate_judging_cost, evaluate
from ragmeter.config import ConfigError
from ragmeter.errors import InputError

JUDGE = "openai:gpt-4o-mini"


def test_the_estimate_is_what_the_dry_run_prints(tmp_path: Path) -> None:
    estimate = estimate_judging_cost(EvalConfig(judge=JUDGE, samples=4, seed=3))
    done = subprocess.run(
        [sys.executable, "-m", "ragmeter", "eval", "--dry-run", "--judge", JUDGE,
         "--samples", "4", "--seed", "3"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={"PATH": "", "HOME": str(tmp_path), "COLUMNS": "300"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    line = " ".join(done.stdout.split())
    assert f": {estimate.cases} cases -> {estimate.calls} judge calls, " in line
    assert f"~{estimate.prompt_tokens} prompt + ~{estimate.completion_tokens} completion" in line
    assert estimate.cases == 4
    assert not (tmp_path / ".ragmeter").exists()  # nothing asked, nothing stored


def test_tasks_and_max_contexts_change_the_estimate() -> None:
    every = estimate_judging_cost(EvalConfig(judge=JUDGE, samples=3, seed=1))
    one_task = estimate_judging_cost(
        EvalConfig(judge=JUDGE, samples=3, seed=1, judge_tasks=["context_precision"])
    )
    assert 0 < one_task.calls < every.calls
    assert one_task.calls == 3  # context precision: one call a case
    fewer = estimate_judging_cost(
        EvalConfig(
            judge=JUDGE, samples=3, seed=1, judge_tasks=["context_precision"],
            metric_params={"judged": {"max_contexts": 1}},
        )
    )  # fmt: skip
    assert fewer.calls == one_task.calls
    # four assumed contexts of 800 characters fewer: about 800 tokens a case
    assert one_task.prompt_tokens - fewer.prompt_tokens == pytest.approx(3 * 4 * 200, rel=0.05)


def test_an_estimate_needs_a_judge_and_a_valid_config() -> None:
    with pytest.raises(ConfigError, match="needs a judge"):
        estimate_judging_cost(EvalConfig())
    with pytest.raises(InputError, match=re.escape("-P judged.max_context: metric family")):
        estimate_judging_cost(EvalConfig(judge=JUDGE, metric_params={"judged": {"max_context": 1}}))


def test_evaluate_points_a_dry_run_to_the_estimate(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"estimate_judging_cost\(config\)"):
        evaluate(EvalConfig(dry_run=True, store=str(tmp_path / "runs.db")))

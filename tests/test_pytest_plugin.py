"""ragmeter's pytest plugin (``pytest --run-eval --eval-samples N``, the ``rag_run`` fixture) and
``assert_rag``: inert unless asked, one evaluation a session, readable failures."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

from ragmeter.results import Run
from ragmeter.run_record import MetricSummary, RunRecord, Scorecard
from ragmeter.runfile import CaseOutcome
from ragmeter.testing import RagAssertionError, assert_rag

pytest_plugins = ["pytester"]
# the sessions that evaluate run in a subprocess: an in-process pytester run unloads the modules
# it imported (numpy among them), which cannot be loaded twice in one process

TESTS = """
import pytest
from ragmeter.testing import assert_rag


def test_plain():
    assert True


@pytest.mark.rag_eval
def test_marked():
    raise AssertionError("a rag_eval test ran without --run-eval")


def test_uses_the_run(rag_run):
    assert rag_run.question_count == 3
    assert rag_run is not None
"""
FAST_CONFIG = "metrics: [retrieval, lexical]\nstore: eval/runs.db\n"


def test_the_plugin_is_registered_through_pytest11() -> None:
    [entry] = [e for e in entry_points(group="pytest11") if e.name == "ragmeter"]
    assert entry.value == "ragmeter.pytest_plugin"


def test_the_plugin_does_nothing_without_run_eval(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_quality=TESTS)
    result = pytester.runpytest("-rs")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(["*run pytest with --run-eval to evaluate*"])
    assert not (pytester.path / ".ragmeter").exists() and not (pytester.path / "eval").exists()


def test_the_plugin_imports_nothing_heavy_when_unused(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_modules="""
import sys

def test_untouched():
    assert "ragmeter.pytest_plugin" in sys.modules
    heavy = [m for m in ("ragmeter.runner.engine", "ragmeter.config", "ragmeter.metrics")
             if m in sys.modules]
    assert heavy == []
"""
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)


def test_the_options_are_in_pytest_help(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*ragmeter*", "*--run-eval*", "*--eval-samples=N*"])


def test_run_eval_runs_one_evaluation_for_the_session(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", eval=FAST_CONFIG)
    pytester.makepyfile(
        test_quality=TESTS.replace(
            'raise AssertionError("a rag_eval test ran without --run-eval")', "pass"
        )
        + """

def test_same_run(rag_run, eval_run, rag_config):
    assert eval_run is rag_run and rag_config.samples == 3
    assert_rag(rag_run, "mrr >= 0", "recall_at_5 >= 0")
"""
    )
    result = pytester.runpytest_subprocess(
        "--run-eval", "--eval-samples=3", "--eval-config", "eval.yaml"
    )
    result.assert_outcomes(passed=4)
    assert len(list((pytester.path / "eval" / "runs").glob("*.json"))) == 1  # one run


def test_a_failed_condition_explains_itself(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", eval=FAST_CONFIG)
    pytester.makepyfile(
        test_gate="""
from ragmeter.testing import assert_rag

def test_gate(rag_run):
    assert_rag(rag_run, "mrr > 1.5", "faithfulness > 0.8", "recall_at_5 >= 0")
"""
    )
    result = pytester.runpytest_subprocess(
        "--run-eval", "--eval-samples", "4", "--eval-config", "eval.yaml", "--eval-dataset", "demo"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*assert_rag: 2 of 3 condition(s) not met in run*",
            "*FAIL*mrr > 1.5: value *, 95% CI *-*; * of 4 cases scored*",
            "*NOT MEASURED*faithfulness > 0.8: the run has no metric 'faithfulness'*",
            "*PASS*recall_at_5 >= 0: value*",
        ]
    )


def _run(summary: MetricSummary, cases: list[CaseOutcome] | None = None) -> Run:
    record = RunRecord(
        id="r1",
        name="eval-r1",
        status="completed",
        created_at="2026-01-01T00:00:00",
        config={},
        datasets=["demo"],
        scorecard=Scorecard(metrics=[summary], by_group={summary.group: [summary.name]}),
    )
    return Run.model_construct(**dict(record), cases=cases)


def test_a_metric_every_case_skipped_fails_with_the_reason() -> None:
    summary = MetricSummary(
        name="correctness", group="generation", value=None, n_scored=0, n_skipped=3, n_failed=0
    )
    skipped = {"status": "skipped", "reason": "no judge configured"}
    cases = [
        CaseOutcome(case_id=f"c{i}", status="ok", scores={"correctness": skipped}) for i in range(3)
    ]
    with pytest.raises(RagAssertionError) as raised:
        assert_rag(_run(summary, cases), "correctness > 0.5")
    message = str(raised.value)
    assert "NOT MEASURED" in message and "0 of 3 cases scored, 3 skipped" in message
    assert "nothing measured" in message and "skipped: no judge configured (3)" in message
    assert raised.value.results[0].status == "not_measured"


def test_low_coverage_fails_even_when_the_value_passes() -> None:
    summary = MetricSummary(
        name="mrr",
        group="retrieval",
        value=0.9,
        n_scored=5,
        n_skipped=0,
        n_failed=5,
        ci_low=0.8,
        ci_high=0.95,
        coverage=0.5,
    )
    with pytest.raises(RagAssertionError, match=r"coverage 0\.50 < 0\.90"):
        assert_rag(_run(summary), "mrr > 0.5", coverage_floor=0.9)
    [result] = assert_rag(_run(summary), "mrr > 0.5")  # no floor: the value decides
    assert result.status == "pass"


def test_assert_rag_reads_a_run_file(tmp_path: Path) -> None:
    summary = MetricSummary(
        name="mrr", group="retrieval", value=0.7, n_scored=2, n_skipped=0, n_failed=0
    )
    path = _run(summary, []).write(tmp_path)
    assert assert_rag(path, "mrr > 0.5")[0].status == "pass"
    with pytest.raises(RagAssertionError, match="no interval"):
        assert_rag(str(path), "mrr > 0.9")
    with pytest.raises(ValueError, match="at least one condition"):
        assert_rag(path)

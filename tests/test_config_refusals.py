"""Audit of config inputs: settings no run could use are refused before the first question
(a relevance level above the highest grade, unknown objective feeds, impossible targets, an
unknown embedder)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ragmeter.cli.main import main
from ragmeter.config import ENV_FIELDS, ConfigError, EvalConfig, load_config
from ragmeter.errors import InputError
from ragmeter.runner import preflight


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for variable in ENV_FIELDS:
        monkeypatch.delenv(variable, raising=False)


def eval_with(config: str, *args: str) -> tuple[int, str]:
    Path("c.yaml").write_text(config, encoding="utf-8")
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--config",
            "c.yaml",
            "--store",
            "runs.db",
            "--no-progress",
            "--samples",
            "2",
            *args,
        ],
    )
    return result.exit_code, result.output


def no_run_written() -> bool:
    # the run files would go to runs/ beside the store
    return not Path("runs").exists() and not Path(".ragmeter").exists()


# 1. relevance_level ------------------------------------------------------------------------------
def test_relevance_level_above_the_highest_grade_is_refused() -> None:
    code, output = eval_with("relevance_level: 7\n")
    assert code == 2, output
    assert "c.yaml" in output and "relevance_level" in output
    assert "above the highest relevance grade (3)" in output and "Value error" not in output
    assert no_run_written()


def test_relevance_levels_one_to_three_are_accepted() -> None:
    for level in (1, 2, 3):
        assert load_config(overrides={"relevance_level": level}).relevance_level == level
    with pytest.raises(ConfigError, match="highest relevance grade"):
        load_config(overrides={"relevance_level": 4})


# 7. objectives -----------------------------------------------------------------------------------
def test_unknown_metric_in_objectives_is_refused() -> None:
    code, output = eval_with("objectives: {accuracy: [no_metric]}\n", "--metrics", "retrieval")
    assert code == 2, output
    assert "objectives: accuracy: no metric 'no_metric'" in output
    assert no_run_written()


def test_objective_feeds_that_exist_are_accepted() -> None:
    config = EvalConfig(objectives={"accuracy": ["token_f1", "group:abstention"]})
    preflight.check_objectives(config)
    with pytest.raises(InputError, match="no metric group 'abstain'"):
        preflight.check_objectives(EvalConfig(objectives={"accuracy": ["group:abstain"]}))
    with pytest.raises(InputError, match="did you mean token_f1"):
        preflight.check_objectives(EvalConfig(objectives={"accuracy": ["token_f"]}))


# 8. targets outside a metric's range -------------------------------------------------------------
@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("{ndcg_at_5: '> 1.5'}", "ndcg_at_5 > 1.5 can never pass"),
        ("{latency_p95: '< -3'}", "latency_p95 < -3 can never pass"),
        ("{mrr: '>= 1.01'}", "mrr >= 1.01 can never pass"),
        ("['recall_at_5 < 0']", "recall_at_5 < 0 can never pass"),
    ],
)
def test_impossible_target_is_refused(target: str, words: str) -> None:
    code, output = eval_with(f"targets: {target}\n", "--metrics", "retrieval,performance")
    assert code == 2, output
    assert words in output
    assert no_run_written()


def test_targets_at_the_ends_of_a_range_are_accepted() -> None:
    config = EvalConfig(
        metrics=["retrieval", "performance"],
        targets={"ndcg_at_5": ">= 1", "recall_at_5": "<= 0", "latency_p95": "<= 0", "mrr": "> 0"},
    )
    preflight.check_goals(config)


# 9. embedder ------------------------------------------------------------------------------------
def test_unknown_embedder_is_refused_before_the_run() -> None:
    code, output = eval_with("embedder: nope\n", "--metrics", "retrieval,semantic")
    assert code == 2, output
    assert "unknown embedder 'nope'" in output and "minilm" in output
    assert no_run_written()


def test_known_embedder_specs_pass() -> None:
    for spec in ("minilm", "openai:text-embedding-3-small", "http://127.0.0.1:9/v1#m"):
        preflight.check_embedder(EvalConfig(embedder=spec))
    with pytest.raises(InputError, match="did you mean minilm"):
        preflight.check_embedder(EvalConfig(embedder="minlm"))

"""The command line honours every RAGMETER_* variable it declares, in every command that has the
option: a run stored with ``RAGMETER_STORE`` is found by ``runs``, ``show``, ``export``,
``compare``, ``stats`` and ``rescore``, and nothing is written to ``./.ragmeter``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.core import ParameterSource
from click.testing import CliRunner, Result

from ragmeter.cli.main import main
from ragmeter.config import ENV_FIELDS, case_timeout_for, load_config
from ragmeter.datasets import load_dataset

FAST = ["--no-progress", "--metrics", "retrieval,lexical"]


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    result = CliRunner().invoke(main, list(args), env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def option_env_vars() -> dict[tuple[str, str], click.Option]:
    """(command path, parameter name) -> option, for every option with an env variable."""
    found: dict[tuple[str, str], click.Option] = {}

    def walk(group: click.Group, prefix: str) -> None:
        context = click.Context(group)
        for name in group.list_commands(context):  # the top group imports each command here
            command = group.get_command(context, name)
            assert command is not None, name
            if isinstance(command, click.Group):
                walk(command, f"{prefix}{name} ")
            for param in command.params:
                if isinstance(param, click.Option) and param.envvar:
                    found[(f"{prefix}{name}", str(param.name))] = param

    walk(main, "")
    return found


def cli_env_vars() -> set[str]:
    return {str(option.envvar) for option in option_env_vars().values()}


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for variable in cli_env_vars() | set(ENV_FIELDS):
        monkeypatch.delenv(variable, raising=False)
    return tmp_path


def listed_ids(table: str) -> list[str]:
    """The run ids of a ``ragmeter runs`` table, newest first (a row may wrap over lines)."""
    return re.findall(r"^│ ([0-9a-f]{12}) ", table, flags=re.MULTILINE)


def stored_run(store: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The newest run of ``store`` as ``show --json`` prints it."""
    listed = run("runs", "--store", str(store), env=env)
    run_id = listed_ids(listed.output)[0]
    shown = run("show", run_id, "--json", "--store", str(store), env=env)
    document: dict[str, Any] = json.loads(shown.output)
    return document


def test_ragmeter_store_is_honoured_by_every_command(in_tmp: Path) -> None:
    store = in_tmp / "tmp" / "x.db"
    env = {"RAGMETER_STORE": "tmp/x.db"}
    first = run("eval", *FAST, env=env)
    assert first.exit_code == 0, first.output
    assert store.is_file()
    [run_file] = (in_tmp / "tmp" / "runs").glob("*.json")  # run files follow the store
    run_id = run_file.name.split("_")[0]

    listed = run("runs", env=env)
    assert listed.exit_code == 0 and run_id in listed.output, listed.output
    shown = run("show", run_id, "--json", env=env)
    assert shown.exit_code == 0 and json.loads(shown.output)["id"] == run_id
    assert run("show", run_id[:6], env=env).exit_code == 0
    exported = run("export", run_id, "-o", "out/responses.jsonl", env=env)
    assert exported.exit_code == 0, exported.output
    exported_lines = (in_tmp / "out" / "responses.jsonl").read_text().splitlines()
    assert len(exported_lines) == len(load_dataset("demo"))
    stats = run("stats", run_id, "--json", env=env)
    assert stats.exit_code == 0 and json.loads(stats.output)["run"], stats.output
    rescored = run("rescore", run_id, "--name", "again", env=env)
    assert rescored.exit_code == 0, rescored.output
    second_id = listed_ids(run("runs", env=env).output)[0]  # the newest: the rescored run
    compared = run("compare", run_id, second_id, "--json", env=env)
    assert compared.exit_code == 0, compared.output
    assert json.loads(compared.output)["comparisons"][0]["baseline"] == run_id
    assert len(list((in_tmp / "tmp" / "runs").glob("*.json"))) == 2

    # the console script, not only the group object
    script = subprocess.run(
        [sys.executable, "-m", "ragmeter", "runs"],
        cwd=in_tmp,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert script.returncode == 0 and run_id in script.stdout, script.stderr
    assert not (in_tmp / ".ragmeter").exists()


def test_a_missing_store_is_not_created_by_reading_commands(in_tmp: Path) -> None:
    env = {"RAGMETER_STORE": "nowhere/runs.db"}
    for args in (["runs"], ["show", "abc"], ["export", "abc", "-o", "x.jsonl"], ["stats", "abc"]):
        result = run(*args, env=env)
        assert result.exit_code == 2, (args, result.output)
        assert "no run store at nowhere/runs.db" in result.output
    assert run("compare", "a", "b", env=env).exit_code == 2
    assert not (in_tmp / "nowhere").exists() and not (in_tmp / ".ragmeter").exists()


def test_run_settings_from_the_environment(in_tmp: Path) -> None:
    """The eval options' variables reach the stored config; a flag still wins over them."""
    env = {
        "RAGMETER_STORE": "s.db",
        "RAGMETER_OUTPUT_DIR": "out",
        "RAGMETER_SEED": "7",
        "RAGMETER_SAMPLES": "12",
        "RAGMETER_CONCURRENCY": "3",
        "RAGMETER_TARGET_TIMEOUT_S": "4",
        "RAGMETER_JUDGE_TIMEOUT_S": "9",
        "RAGMETER_JUDGE_MAX_RETRIES": "0",
        "RAGMETER_JUDGE_MAX_COST": "0.5",
    }
    result = run("eval", *FAST, "--concurrency", "2", env=env)
    assert result.exit_code == 0, result.output
    assert len(list((in_tmp / "out").glob("*.json"))) == 1
    document = stored_run(in_tmp / "s.db")
    config = document["config"]
    assert document["question_count"] == 12
    assert (config["seed"], config["samples"], config["concurrency"]) == (7, 12, 2)
    assert config["target"]["timeout_s"] == 4.0
    assert config["case_timeout_s"] == case_timeout_for(4.0) == 12.0
    assert (config["judge_timeout_s"], config["judge_max_retries"]) == (9.0, 0)
    assert config["max_judge_cost"] == 0.5
    assert config["output_dir"] == "out"

    rescored = run("rescore", document["id"], env={**env, "RAGMETER_OUTPUT_DIR": "again"})
    assert rescored.exit_code == 0, rescored.output
    assert len(list((in_tmp / "again").glob("*.json"))) == 1
    assert not (in_tmp / ".ragmeter").exists()


def test_case_timeout_from_the_environment_and_yaml(in_tmp: Path) -> None:
    (in_tmp / "c.yaml").write_text("target: {timeout_s: 2}\n", encoding="utf-8")
    env = {"RAGMETER_STORE": "s.db", "RAGMETER_CASE_TIMEOUT_S": "11"}
    result = run("eval", *FAST, "--samples", "3", "--config", "c.yaml", env=env)
    assert result.exit_code == 0, result.output
    config = stored_run(in_tmp / "s.db")["config"]
    assert (config["target"]["timeout_s"], config["case_timeout_s"]) == (2.0, 11.0)
    assert load_config("c.yaml", environ={}).case_timeout_s == case_timeout_for(2.0)
    assert load_config(None, environ={}).case_timeout_s == 60.0  # nothing given: the default


def test_judge_from_the_environment(in_tmp: Path) -> None:
    env = {"RAGMETER_JUDGE": "openai:gpt-4o-mini", "RAGMETER_STORE": "s.db"}
    result = run("eval", "--dry-run", "--samples", "5", env=env)
    assert result.exit_code == 0, result.output
    assert "dry run, judge openai:gpt-4o-mini: 5 cases" in result.output
    assert not (in_tmp / "s.db").exists()


def test_alpha_and_margin_from_the_environment(in_tmp: Path) -> None:
    env = {"RAGMETER_STORE": "s.db"}
    assert run("eval", *FAST, "--samples", "10", env=env).exit_code == 0
    assert run("eval", *FAST, "--samples", "10", "--top-k", "1", env=env).exit_code == 0
    ids = listed_ids(run("runs", env=env).output)
    tuned = {**env, "RAGMETER_ALPHA": "0.2", "RAGMETER_MARGIN": "0.3"}
    compared = json.loads(run("compare", ids[1], ids[0], "--json", env=tuned).output)
    assert (compared["comparisons"][0]["alpha"], compared["comparisons"][0]["margin"]) == (0.2, 0.3)
    flagged = json.loads(run("compare", *ids[::-1], "--json", "--alpha", "0.1", env=tuned).output)
    assert flagged["comparisons"][0]["alpha"] == 0.1
    bad = run("compare", *ids, env={**env, "RAGMETER_ALPHA": "2"})
    assert bad.exit_code == 2 and "between 0 and 1" in bad.output


def test_datasets_list_reads_local_copies_from_ragmeter_data(in_tmp: Path) -> None:
    samples = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "hf_samples"
    if not samples.is_dir():
        pytest.skip(f"{samples} is absent (../shared/datasets)")
    listed = run("datasets", "list", env={"RAGMETER_DATA": str(samples)})
    assert listed.exit_code == 0, listed.output
    assert f"hotpotqa: --dataset hotpotqa:{samples / 'hotpot_qa'}" in listed.output
    plain = run("datasets", "list", env={"RAGMETER_DATA": str(in_tmp)})
    assert "hotpotqa: --dataset" not in plain.output


def test_validity_honours_store_and_seed_from_the_environment(in_tmp: Path) -> None:
    """``ragmeter validity`` finds the run in RAGMETER_STORE and seeds its bootstrap with
    RAGMETER_SEED (the same intervals as --seed)."""
    from tests.cli.test_validity import synthetic_run, write_labels

    tmp_path = in_tmp
    store, run_id, labels, _ = synthetic_run(tmp_path)
    path = write_labels(tmp_path / "labels.jsonl", labels)
    args = ("validity", run_id, "--labels", str(path), "--json", "--metric", "token_f1")

    def interval(result: Result) -> list[float]:
        assert result.exit_code == 0, result.output
        auc = json.loads(result.output)["metrics"][0]["statistics"]["auc"]
        return [auc["ci_low"], auc["ci_high"]]

    from_env = interval(run(*args, env={"RAGMETER_STORE": str(store), "RAGMETER_SEED": "7"}))
    assert from_env == interval(run(*args, "--store", str(store), "--seed", "7"))
    assert from_env != interval(run(*args, "--store", str(store), "--seed", "0"))


ARGUMENTS = {
    "generate": ["corpus", "--judge", "j", "-o", "out.jsonl"],
    "plan": ["--metric", "m", "--effect", "0.1"],
    "report": ["r"],
    "rescore": ["r"],
    "show": ["r"],
    "export": ["r", "-o", "f"],
    "compare": ["a", "b"],
    "validity": ["r", "--labels", "l"],
}
SAMPLES = {int: ("7", 7), float: ("0.25", 0.25)}


@pytest.mark.parametrize(
    "command,name", sorted(option_env_vars()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_every_declared_variable_reaches_its_option(
    command: str, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    option = option_env_vars()[(command, name)]
    kind = {click.INT: int, click.FLOAT: float}.get(option.type, str)
    text, value = SAMPLES.get(kind, ("env-value", "env-value"))
    monkeypatch.setenv(str(option.envvar), text)
    target: click.Command = main
    for part in command.split():  # a subcommand of a group: "datasets list"
        assert isinstance(target, click.Group)
        found = target.get_command(click.Context(target), part)
        assert found is not None, part
        target = found
    args = list(ARGUMENTS.get(command, []))
    for flag in option.opts:  # a required option under test comes from the environment
        if flag in args:
            del args[args.index(flag) : args.index(flag) + 2]
    with target.make_context(command, args) as ctx:
        assert ctx.params[name] == value
        assert ctx.get_parameter_source(name) is ParameterSource.ENVIRONMENT


def test_every_option_variable_is_tested_or_a_config_variable() -> None:
    """A new RAGMETER_* option needs a behaviour test above, or to be a config variable that
    load_config reads (tested in test_config_variables_reach_the_config)."""
    behaviour_tested = {
        "RAGMETER_STORE",
        "RAGMETER_OUTPUT_DIR",
        "RAGMETER_SEED",
        "RAGMETER_SAMPLES",
        "RAGMETER_CONCURRENCY",
        "RAGMETER_TARGET_TIMEOUT_S",
        "RAGMETER_JUDGE",
        "RAGMETER_JUDGE_TIMEOUT_S",
        "RAGMETER_JUDGE_MAX_RETRIES",
        "RAGMETER_JUDGE_MAX_COST",
        "RAGMETER_ALPHA",
        "RAGMETER_MARGIN",
        "RAGMETER_CASE_TIMEOUT_S",
        "RAGMETER_JUDGE_TASKS",
        "RAGMETER_SCORE_WHILE_ASKING",  # tests/runner/test_score_while_asking.py
        "RAGMETER_DATA",
    }
    assert cli_env_vars() <= behaviour_tested
    assert set(ENV_FIELDS) - behaviour_tested == {"RAGMETER_TARGET_URL"}


def test_config_variables_reach_the_config() -> None:
    values = {
        "RAGMETER_STORE": ("s.db", "s.db"),
        "RAGMETER_OUTPUT_DIR": ("o", "o"),
        "RAGMETER_CONCURRENCY": ("3", 3),
        "RAGMETER_CASE_TIMEOUT_S": ("5", 5.0),
        "RAGMETER_SEED": ("4", 4),
        "RAGMETER_SAMPLES": ("6", 6),
        "RAGMETER_TARGET_URL": ("http://127.0.0.1:9", "http://127.0.0.1:9"),
        "RAGMETER_TARGET_TIMEOUT_S": ("8", 8.0),
        "RAGMETER_JUDGE": ("openai:m", "openai:m"),
        "RAGMETER_JUDGE_MAX_COST": ("1.5", 1.5),
        "RAGMETER_JUDGE_TIMEOUT_S": ("2", 2.0),
        "RAGMETER_JUDGE_MAX_RETRIES": ("3", 3),
        "RAGMETER_JUDGE_TASKS": ("correctness, groundedness", ["correctness", "groundedness"]),
        "RAGMETER_SCORE_WHILE_ASKING": ("false", False),
    }
    assert set(values) == set(ENV_FIELDS)
    for variable, (text, expected) in values.items():
        config = load_config(None, environ={variable: text}).model_dump()
        for key in ENV_FIELDS[variable]:
            config = config[key]
        assert config == expected, variable


def test_judge_tasks_variable_limits_what_the_judge_is_asked(in_tmp: Path) -> None:
    from tests.judges.servers import JudgeServer, smart_judge

    server = JudgeServer(smart_judge)
    try:
        env = {
            "RAGMETER_STORE": str(in_tmp / "s.db"),
            "RAGMETER_JUDGE": f"{server.url}/v1#m",
            "RAGMETER_JUDGE_TASKS": "correctness",
        }
        result = run("eval", *FAST, "--samples", "3", env=env)
        assert result.exit_code == 0, result.output
        document = stored_run(in_tmp / "s.db")
        assert document["config"]["judge_tasks"] == ["correctness"]
        judged = {
            name
            for case in document["cases"]
            for name, value in case["scores"].items()
            if name in ("correctness", "faithfulness", "groundedness")
        }
        assert judged == {"correctness"}  # the other judged metrics were never built
        assert len(server.requests) == 3  # one correctness verdict a case, nothing else
        bad = run("eval", *FAST, env={**env, "RAGMETER_JUDGE_TASKS": "corectness"})
        assert bad.exit_code == 2 and "unknown judged tasks corectness" in bad.output
    finally:
        server.close()


def test_resume_refuses_options_it_would_ignore(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ragmeter.cli.main import main

    store = str(tmp_path / "runs.db")
    refused = CliRunner().invoke(
        main,
        ["eval", "--resume", "abc123", "--store", store, "--top-k", "2", "-d", "odd.jsonl"],
    )
    assert refused.exit_code == 2, refused.output
    assert "finishes the run with the settings it was started with" in refused.output
    assert "--top-k" in refused.output and "--dataset" in refused.output
    assert not (tmp_path / "runs.db").exists()  # refused before anything was opened
    # the options a resumed run does take are accepted (then the unknown run is reported)
    kept = CliRunner().invoke(
        main, ["eval", "--resume", "abc123", "--store", store, "--no-progress", "--gate"]
    )
    assert kept.exit_code == 2 and "would be ignored" not in kept.output


@pytest.mark.parametrize("limit", ["0", "-1"])
def test_runs_limit_below_one_is_refused(tmp_path: Path, limit: str) -> None:
    from click.testing import CliRunner

    from ragmeter.cli.main import main

    result = CliRunner().invoke(main, ["runs", "--limit", limit, "--store", str(tmp_path / "r.db")])
    assert result.exit_code == 2 and "--limit" in result.output

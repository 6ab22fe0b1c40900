"""The config's layers (defaults < file < environment < flags), a config key for every option of
``ragmeter eval``, and ``ragmeter config show|schema``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from ragmeter.cli.eval import eval_command
from ragmeter.cli.main import main
from ragmeter.cli.options import CONFIG_FIELDS, config_overrides
from ragmeter.config import ENV_FIELDS, EvalConfig, load_config
from ragmeter.config_view import effective_config

# options that are no setting: the config file itself
NOT_SETTINGS = {"config_file"}


def eval_options() -> list[click.Option]:
    return [p for p in eval_command.params if isinstance(p, click.Option) and p.name != "help"]


def field_exists(path: str) -> bool:
    model: Any = EvalConfig
    for part in path.split("."):
        if part not in model.model_fields:
            return False
        model = model.model_fields[part].annotation
    return True


def test_every_eval_option_has_a_config_key() -> None:
    missing = [
        p.opts[0]
        for p in eval_options()
        if p.name not in CONFIG_FIELDS | dict.fromkeys(NOT_SETTINGS)
    ]
    assert not missing, f"options with no config key: {missing}"
    paths = {path for path, _ in CONFIG_FIELDS.values()}
    assert all(field_exists(path) for path in paths), sorted(
        p for p in paths if not field_exists(p)
    )


def resolve(args: list[str], env: dict[str, str], config_file: Path | None) -> EvalConfig:
    """The config ``ragmeter eval ARGS`` runs with, with ``env`` as the whole environment."""
    with pytest.MonkeyPatch.context() as patch:
        for variable in [*ENV_FIELDS, "RAGMETER_ALPHA", "RAGMETER_MARGIN"]:
            patch.delenv(variable, raising=False)
        for variable, value in env.items():
            patch.setenv(variable, value)
        with eval_command.make_context("eval", args) as ctx:
            return load_config(config_file, config_overrides(ctx))


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "eval.yaml"
    path.write_text(
        "samples: 10\nseed: 1\nconcurrency: 2\njudge: openai:file-model\n"
        "target: {url: http://file:1, top_k: 7}\nmargin: 0.1\ngate: true\n",
        encoding="utf-8",
    )
    return path


def test_precedence_defaults_file_environment_flags(config_file: Path) -> None:
    defaults = resolve([], {}, None)
    assert (defaults.samples, defaults.seed, defaults.concurrency) == (None, 0, 8)
    assert (defaults.target.type, defaults.judge, defaults.gate) == ("reference", None, False)

    from_file = resolve([], {}, config_file)
    assert (from_file.samples, from_file.seed, from_file.concurrency) == (10, 1, 2)
    assert (from_file.target.type, from_file.target.url, from_file.target.top_k) == (
        "http",
        "http://file:1",
        7,
    )
    assert (from_file.judge, from_file.margin, from_file.gate) == ("openai:file-model", 0.1, True)

    env = {
        "RAGMETER_SAMPLES": "20",
        "RAGMETER_SEED": "2",
        "RAGMETER_TARGET_URL": "http://env:2",
        "RAGMETER_JUDGE": "openai:env-model",
        "RAGMETER_MARGIN": "0.2",
    }
    from_env = resolve([], env, config_file)
    assert (from_env.samples, from_env.seed, from_env.concurrency) == (20, 2, 2)
    assert (from_env.target.url, from_env.target.top_k) == ("http://env:2", 7)
    assert (from_env.judge, from_env.margin) == ("openai:env-model", 0.2)

    flags = ["--samples", "30", "--rag-url", "http://flag:3", "--no-judge", "--margin", "0.3"]
    from_flags = resolve(flags, env, config_file)
    assert (from_flags.samples, from_flags.seed, from_flags.concurrency) == (30, 2, 2)
    assert (from_flags.target.type, from_flags.target.url) == ("http", "http://flag:3")
    assert from_flags.target.top_k == 7  # the file's, untouched by the flags
    assert (from_flags.judge, from_flags.margin, from_flags.gate) == (None, 0.3, True)


def test_every_eval_setting_can_come_from_the_file(tmp_path: Path) -> None:
    """A file holding the settings of the command's own options (gate, baseline, the view,
    traces) is honoured like a flag."""
    path = tmp_path / "c.yaml"
    path.write_text(
        "gate: true\nbaseline: base.json\nmargin: 0.05\nalpha: 0.1\nverbose: true\n"
        "save_trace: traces\nresume: abc\ndry_run: true\n"
        "datasets: [demo]\nsamples_per_dataset: 3\nrag_server_url: http://h:9\n",
        encoding="utf-8",
    )
    config = resolve([], {}, path)
    assert (config.gate, config.baseline, config.margin, config.alpha) == (
        True,
        "base.json",
        0.05,
        0.1,
    )
    assert (config.verbose, config.save_trace, config.resume, config.dry_run) == (
        True,
        "traces",
        "abc",
        True,
    )
    assert (config.samples, config.target.url, config.target.type) == (3, "http://h:9", "http")
    flagged = resolve(["--save-trace", "--resume", "def"], {}, path)
    assert (flagged.save_trace, flagged.resume) == ("traces", "def")


def test_datasets_comma_list_adds_to_repeated_dataset() -> None:
    config = resolve(["--dataset", "a.jsonl", "--datasets", "b.jsonl, c.jsonl"], {}, None)
    assert config.datasets == ["a.jsonl", "b.jsonl", "c.jsonl"]
    assert resolve(["--datasets", "x.jsonl"], {}, None).datasets == ["x.jsonl"]


def test_a_bad_setting_in_the_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("alpha: 2\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["eval", "--config", str(path)])
    assert result.exit_code == 2 and "bad.yaml" in result.output and "alpha" in result.output


def test_the_gate_from_a_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for variable in ENV_FIELDS:
        monkeypatch.delenv(variable, raising=False)
    Path("ci.yaml").write_text(
        # a target the demo's reference pipeline does not meet (a target no value could meet,
        # such as mrr > 1.5, is refused before the run)
        "gate: true\nsamples: 4\nmetrics: [retrieval]\nprogress: false\n"
        "targets: {mrr: '< 0.001'}\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["eval", "--config", "ci.yaml"])
    assert result.exit_code == 4, result.output
    assert "gate: goals failed: mrr" in result.output


def test_effective_config_sources(config_file: Path) -> None:
    env = {"RAGMETER_SEED": "5", "RAGMETER_STORE": "x/runs.db"}
    config, sources = effective_config(config_file, environ=env)
    assert config.seed == 5 and config.samples == 10
    assert sources["seed"] == "env RAGMETER_SEED"
    assert sources["samples"] == sources["target.url"] == str(config_file)
    assert sources["target.type"] == "derived from target.url"
    assert sources["output_dir"] == "derived from store" and config.output_dir == "x/runs"
    assert sources["bootstrap_resamples"] == "default"
    _, sources = effective_config(None, {"samples": 3}, environ={})
    assert sources["samples"] == "option" and sources["seed"] == "default"


def test_config_show_redacts_secrets_and_gives_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "rag_server_url: http://h:1\n"
        "target: {headers: {Authorization: 'Bearer sk-abcdefghijklmnopqrstu'}}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("RAGMETER_CONCURRENCY", "3")
    result = CliRunner().invoke(main, ["config", "show", "--config", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert "sk-abcdefghijklmnopqrstu" not in result.output
    document = json.loads(result.output)
    assert document["config"]["target.headers"] == {"Authorization": "***REDACTED***"}
    assert document["config"]["concurrency"] == 3
    assert document["sources"]["concurrency"] == "env RAGMETER_CONCURRENCY"
    assert document["sources"]["target.url"] == str(path)
    table = CliRunner().invoke(main, ["config", "show", "--config", str(path)])
    assert table.exit_code == 0 and "target.url" in table.output
    assert "sk-abcdefghijklmnopqrstu" not in table.output
    missing = CliRunner().invoke(main, ["config", "show", "--config", str(tmp_path / "no.yaml")])
    assert missing.exit_code == 2 and "no.yaml" in missing.output


def test_config_schema_describes_the_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["config", "schema"])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.output)
    properties = schema["properties"]
    assert set(EvalConfig.model_fields) <= set(properties)
    assert {"samples_per_dataset", "rag_server_url"} <= set(properties)
    assert schema["additionalProperties"] is False
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(
        {"samples_per_dataset": 5, "gate": True, "target": {"url": "http://h"}}, schema
    )
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"sample": 5}, schema)

"""The executor seam without Ray: the options and their config fields, the local default, and
the messages when Ray is named but cannot be used (tests/integration/test_ray_executor.py
runs the Ray executor itself)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from ragmeter.cli.executor_options import executor_options
from ragmeter.cli.overrides import config_overrides
from ragmeter.config import EvalConfig, TargetConfig
from ragmeter.errors import InputError
from ragmeter.models import Case, Response
from ragmeter.runner.executors import LocalExecutor, make_executor
from ragmeter.runner.run import evaluate
from ragmeter.targets.python import PythonTarget


def _overrides(*args: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    @click.command()
    @executor_options
    @click.pass_context
    def command(ctx: click.Context, /, **_: Any) -> None:
        seen.update(config_overrides(ctx))

    done = CliRunner().invoke(command, list(args))
    assert done.exit_code == 0, done.output
    return seen


def test_options_map_to_the_config_fields() -> None:
    assert _overrides() == {}
    given = _overrides("--executor", "ray", "--ray-address", "ray://head:10001")
    assert given == {"executor": "ray", "ray_address": "ray://head:10001"}
    config = EvalConfig.model_validate(given)
    assert (config.executor, config.ray_address) == ("ray", "ray://head:10001")
    assert (EvalConfig().executor, EvalConfig().ray_address) == ("local", None)
    shown = CliRunner().invoke(executor_options(click.command()(lambda **_: None)), ["--help"])
    assert "--executor [local|ray]" in shown.output and "--ray-address ADDR" in shown.output


def test_the_default_is_the_local_executor() -> None:
    assert isinstance(make_executor(EvalConfig()), LocalExecutor)


def test_ray_not_installed_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(InputError, match=r"pip install 'ragmeter\[ray\]'"):
        make_executor(EvalConfig(executor="ray"))


def test_ray_refuses_a_target_object_before_anything_is_stored(tmp_path: Path) -> None:
    async def system(question: str) -> Response:
        return Response(answer=question)

    target = PythonTarget(TargetConfig(type="python"), function=system)
    config = EvalConfig(
        executor="ray", store=str(tmp_path / "r.db"), output_dir=str(tmp_path), progress=False
    )
    with pytest.raises(InputError, match="cannot use a target object"):
        evaluate(config, cases=[Case(case_id="a", question="q?")], target=target)

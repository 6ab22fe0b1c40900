"""A third-party package adds a metric family, a judge provider and a dataset loader through
entry points; `ragmeter plugins` lists them and `ragmeter eval` uses all three.

The package is installed the way an installer leaves it: its module and a ``.dist-info``
folder with ``entry_points.txt`` in a site directory on the path of the ragmeter process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PLUGIN = '''
"""ragmeter-tiny-plugin: one metric family, one judge provider, one dataset loader."""

from __future__ import annotations

import json
import time
from typing import Any

from ragmeter.judges.base import JudgeReply
from ragmeter.metrics.base import Metric, MetricSettings
from ragmeter.models import Case, Response

CALLS_FILE = __file__ + ".calls"


def answer_length(settings: MetricSettings) -> list[Metric]:
    def chars(case: Case, response: Response) -> float:
        return float(len(response.answer))

    return [Metric("answer_chars", "generation", chars, kind="count",
                   description="characters in the answer")]


class SteadyJudge:
    """Gives every 0-5 verdict a 4 and records how often it was asked."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def model(self) -> str:
        return f"steady:{self.name}"

    @property
    def params(self) -> dict[str, Any]:
        return {"temperature": 0}

    async def complete(self, messages: Any, schema: Any, max_tokens: int) -> JudgeReply:
        with open(CALLS_FILE, "a") as handle:
            handle.write(messages[0]["content"][:40].replace("\\n", " ") + "\\n")
        text = json.dumps({"reasoning": "steady", "score": 4})
        return JudgeReply(text, json.loads(text), 10, 5, 1.0, "stop")

    async def aclose(self) -> None:
        pass


def steady_judge(model: str, *, api_key_env: Any, timeout_s: float, max_retries: int) -> Any:
    return SteadyJudge(model)


def tiny_cases(argument: str) -> list[Case]:
    questions = {
        "vacation": "How many days of paid vacation does a full-time employee get?",
        "remote": "How many days a week can employees work remotely?",
    }
    return [
        Case(case_id=f"tiny-{key}-{argument}", question=question, reference_answer="27 days")
        for key, question in questions.items()
    ]
'''

ENTRY_POINTS = """
[ragmeter.metrics]
answer_length = tiny_plugin:answer_length

[ragmeter.judges]
steady = tiny_plugin:steady_judge

[ragmeter.loaders]
tiny = tiny_plugin:tiny_cases
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    folder = tmp_path / "site"
    dist_info = folder / "ragmeter_tiny_plugin-0.1.dist-info"
    dist_info.mkdir(parents=True)
    (folder / "tiny_plugin.py").write_text(textwrap.dedent(PLUGIN))
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: ragmeter-tiny-plugin\nVersion: 0.1\n"
    )
    (dist_info / "entry_points.txt").write_text(ENTRY_POINTS)
    (dist_info / "RECORD").write_text("")
    return folder


def ragmeter(site: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), "RAGMETER_STORE": str(tmp_path / "runs.db")}
    for name in ("RAGMETER_JUDGE", "RAGMETER_OUTPUT_DIR"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )


def test_plugins_are_listed_and_used_by_eval(site: Path, tmp_path: Path) -> None:
    listed = ragmeter(site, tmp_path, "plugins")
    assert listed.returncode == 0, listed.stderr
    for name in ("answer_length", "steady", "tiny"):
        assert name in listed.stdout, listed.stdout
    assert "ragmeter-tiny-plugin" in listed.stdout  # where each came from

    run = ragmeter(
        site, tmp_path, "eval", "--no-progress", "--dataset", "tiny:v1", "--target", "reference",
        "--metrics", "lexical,answer_length", "--judge", "steady:m1",
        "--output-dir", str(tmp_path / "out"),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr + run.stdout
    run_file = json.loads(next((tmp_path / "out").glob("*.json")).read_text())
    assert {c["case_id"] for c in run_file["cases"]} == {"tiny-vacation-v1", "tiny-remote-v1"}
    assert run_file["datasets"] == ["tiny:v1"]  # the loader and its argument
    for case in run_file["cases"]:
        assert isinstance(case["scores"]["answer_chars"], float)
        assert case["scores"]["answer_chars"] > 0
        assert case["scores"]["correctness"] == 4.0  # the plugin judge's verdict
    summary = {m["name"]: m for m in run_file["scorecard"]["metrics"]}
    assert summary["answer_chars"]["kind"] == "count"
    assert run_file["config"]["judge"] == "steady:m1"
    calls = (site / "tiny_plugin.py.calls").read_text().splitlines()
    assert len(calls) >= 2  # at least the correctness verdict of each case


def test_a_plugin_that_cannot_be_imported_is_named_with_what_to_install() -> None:
    from ragmeter.registry import PluginImportError, Registry

    registry = Registry()
    registry.register(
        "embedders", "ghost", "ghost_package_xyz:embedder", install_hint="pip install ghost-emb"
    )
    with pytest.raises(PluginImportError, match="embedder 'ghost' cannot be loaded") as info:
        registry.get("embedders", "ghost")
    assert "ghost_package_xyz" in str(info.value) and "pip install ghost-emb" in str(info.value)
    registry.register("metrics", "half", "json:no_such_attribute")
    with pytest.raises(PluginImportError, match="json has no 'no_such_attribute'"):
        registry.get("metrics", "half")

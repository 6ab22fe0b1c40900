"""A third-party package adds a metric family, a judge provider, a dataset loader and a target
type through entry points; `ragmeter plugins` lists them and `ragmeter eval` uses them all.

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
"""ragmeter-tiny-plugin: one metric family, one judge provider, one dataset loader, one
target type."""

from __future__ import annotations

import json
import time
from typing import Any

from ragmeter.errors import JudgeConfigError
from ragmeter.judges.base import JudgeReply
from ragmeter.judges.providers import JudgeProviderSpec
from ragmeter.metrics.base import Metric, MetricSettings
from ragmeter.metrics.family import MetricFamily, MetricParam
from ragmeter.models import Case, Response
from ragmeter.config import TargetConfig

CALLS_FILE = __file__ + ".calls"


def answer_lengths(settings: MetricSettings) -> list[Metric]:
    long_from = settings.option("long_from", 500)

    def chars(case: Case, response: Response) -> float:
        return float(len(response.answer))

    def long(case: Case, response: Response) -> float:
        return float(len(response.answer) >= long_from)

    return [
        Metric("answer_chars", "generation", chars, kind="count",
               description="characters in the answer"),
        Metric("long_answer", "generation", long, kind="binary",
               description="the answer has at least long_from characters"),
    ]


answer_length = MetricFamily(
    answer_lengths,
    params=(MetricParam("long_from", "characters from which an answer is long", default=500),),
)


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


def steady_check(model: str, *, shown: str, api_key_env: Any, timeout_s: float) -> dict[str, Any]:
    if model == "broken":
        raise JudgeConfigError(f"--judge {shown}: the steady judge has no model 'broken'")
    return {"provider": "steady", "model": model, "contacted": False, "checked_by": "tiny plugin"}


steady = JudgeProviderSpec(steady_judge, steady_check)


def tiny_cases(argument: str) -> list[Case]:
    questions = {
        "vacation": "How many days of paid vacation does a full-time employee get?",
        "remote": "How many days a week can employees work remotely?",
    }
    return [
        Case(case_id=f"tiny-{key}-{argument}", question=question, reference_answer="27 days")
        for key, question in questions.items()
    ]


class EchoTarget:
    """Answers every question with the argument of its spec (``--target echo:TEXT``)."""

    name = "echo"

    def __init__(self, config: TargetConfig, concurrency: int = 1) -> None:
        self.text = config.options.get("spec", "")

    async def preflight(self) -> dict[str, Any]:
        return {"echo": self.text}

    async def query(self, case: Case) -> Response:
        return Response(answer=self.text)

    async def aclose(self) -> None:
        pass
'''

ENTRY_POINTS = """
[ragmeter.metrics]
answer_length = tiny_plugin:answer_length

[ragmeter.judges]
steady = tiny_plugin:steady

[ragmeter.loaders]
tiny = tiny_plugin:tiny_cases

[ragmeter.targets]
echo = tiny_plugin:EchoTarget
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
    for name in ("answer_length", "steady", "tiny", "echo"):
        assert name in listed.stdout, listed.stdout
    assert "ragmeter-tiny-plugin" in listed.stdout  # where each came from
    datasets = ragmeter(site, tmp_path, "datasets", "list")
    assert datasets.returncode == 0, datasets.stderr
    row = next(line for line in datasets.stdout.splitlines() if " tiny " in line)
    assert "plugin: ragmeter-tiny-plugin" in row and "tiny:ARGUMENT" in row
    # the reference tables of this installation document the plugin's entries
    tables = ragmeter(site, tmp_path, "plugins", "--markdown")
    assert tables.returncode == 0, tables.stderr
    for row in (
        "| `answer_length` | `long_answer` | generation | binary | higher | - | "
        "ragmeter-tiny-plugin |",
        "| `answer_length` | `long_from` | `500` | its own option | characters from which an "
        "answer is long |",
        "| `steady` | ragmeter-tiny-plugin |",
        "| `tiny` | ragmeter-tiny-plugin |",
        "| `echo` | ragmeter-tiny-plugin |",
        "| `exact_match` |",  # the built-in ones too
    ):
        assert row in tables.stdout, row

    run = ragmeter(
        site, tmp_path, "eval", "--no-progress", "--dataset", "tiny:v1", "--target", "reference",
        "--metrics", "lexical,answer_length", "--judge", "steady:m1",
        "-P", "answer_length.long_from=5", "--output-dir", str(tmp_path / "out"),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr + run.stdout
    run_file = json.loads(next((tmp_path / "out").glob("*.json")).read_text())
    assert {c["case_id"] for c in run_file["cases"]} == {"tiny-vacation-v1", "tiny-remote-v1"}
    assert run_file["datasets"] == ["tiny:v1"]  # the loader and its argument
    for case in run_file["cases"]:
        assert isinstance(case["scores"]["answer_chars"], float)
        assert case["scores"]["answer_chars"] > 0
        long = case["scores"]["answer_chars"] >= 5  # -P answer_length.long_from=5
        assert case["scores"]["long_answer"] == float(long)
        assert case["scores"]["correctness"] == 4.0  # the plugin judge's verdict
    summary = {m["name"]: m for m in run_file["scorecard"]["metrics"]}
    assert summary["answer_chars"]["kind"] == "count"
    assert run_file["config"]["judge"] == "steady:m1"
    # the provider's own pre-flight check ran and its snapshot is the run's
    assert run_file["config"]["judge_info"]["judge"]["checked_by"] == "tiny plugin"
    calls = (site / "tiny_plugin.py.calls").read_text().splitlines()
    assert len(calls) >= 2  # at least the correctness verdict of each case


def test_a_plugin_judges_own_check_refuses_before_any_question(site: Path, tmp_path: Path) -> None:
    run = ragmeter(
        site, tmp_path, "eval", "--no-progress", "--dataset", "tiny:v1", "--target", "reference",
        "--judge", "steady:broken",
        "--metrics", "lexical",
    )  # fmt: skip
    assert run.returncode == 2
    assert "--judge steady:broken: the steady judge has no model 'broken'" in run.stderr
    assert not (site / "tiny_plugin.py.calls").exists()  # nothing was judged
    assert not (tmp_path / ".ragmeter").exists()  # no run file, no run folder


def test_a_plugin_target_type_is_reached_from_target(site: Path, tmp_path: Path) -> None:
    """``--target KIND:ARGUMENT`` names a target type a package registered; the argument
    reaches the target as ``options["spec"]``."""
    run = ragmeter(
        site, tmp_path, "eval", "--no-progress", "--dataset", "tiny:v1", "--target", "echo:27 days",
        "--metrics", "lexical", "--output-dir", str(tmp_path / "out"),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr + run.stdout
    run_file = json.loads(next((tmp_path / "out").glob("*.json")).read_text())
    assert run_file["config"]["target"]["type"] == "echo"
    assert run_file["config"]["target"]["options"] == {"spec": "27 days"}
    assert run_file["config"]["target_info"] == {"echo": "27 days"}
    # the reference answer is "27 days": the echoed answer matches it exactly
    assert [case["scores"]["exact_match"] for case in run_file["cases"]] == [1.0, 1.0]
    unknown = ragmeter(site, tmp_path, "eval", "--target", "ecko:x", "--no-progress")
    assert unknown.returncode == 2
    assert "did you mean the target type 'echo' (--target echo:...)?" in unknown.stderr


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

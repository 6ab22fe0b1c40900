"""The docs name every command, every option and every metric a user can meet, and the exit
codes and failure types the code produces (in the spirit of sqlite-utils' test_docs)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from ragmeter import errors
from ragmeter.cli.main import main
from ragmeter.metrics.base import MetricSettings
from ragmeter.registry import registry

ROOT = Path(__file__).resolve().parents[1]
DOCS = "\n".join(
    path.read_text(encoding="utf-8") for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
)
README = (ROOT / "README.md").read_text(encoding="utf-8")
RUNS = (ROOT / "docs" / "runs.md").read_text(encoding="utf-8")


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = []
    for name, command in sorted(group.commands.items()):
        full = f"{prefix}{name}"
        found.append((full, command))
        if isinstance(command, click.Group):
            found += _commands(command, f"{full} ")
    return found


COMMANDS = _commands(main)


@pytest.mark.parametrize("name", [name for name, _ in COMMANDS])
def test_every_command_is_in_the_readme(name: str) -> None:
    assert f"ragmeter {name}" in README


@pytest.mark.parametrize(
    "command,option",
    [
        (name, option)
        for name, command in COMMANDS
        for parameter in command.params
        if isinstance(parameter, click.Option)
        for option in parameter.opts
        if option.startswith("--") and option != "--help"
    ],
)
def test_every_option_is_documented(command: str, option: str) -> None:
    assert re.search(rf"{re.escape(option)}\b", DOCS), f"ragmeter {command} {option}"


def test_every_metric_is_documented() -> None:
    settings = MetricSettings()
    missing = [
        metric.name
        for family in registry.names("metrics")
        for metric in registry.get("metrics", family)(settings)
        # cutoffs are documented once (`recall_at_k`), the grade shares as a range
        if metric.name not in DOCS
        and re.sub(r"_at_\d+$", "_at_k", metric.name) not in DOCS
        and not re.fullmatch(r"factual_grade_[a-e]_rate", metric.name)
    ]
    assert not missing


def test_exit_codes_are_documented() -> None:
    codes = [value for name, value in vars(errors).items() if name.startswith("EXIT_")]
    for code in codes:
        assert re.search(rf"^\| {code} \|", RUNS, re.M), code


def test_failure_types_are_documented() -> None:
    source = "\n".join(p.read_text() for p in (ROOT / "src" / "ragmeter").rglob("*.py"))
    produced = set(re.findall(r'TargetError\(\s*"([a-z_0-9]+)"', source))
    produced |= {"case_timeout", "unreadable_response"}
    missing = [kind for kind in sorted(produced) if f"`{kind}`" not in RUNS]
    assert not missing

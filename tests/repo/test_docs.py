"""The docs name every command, every option and every metric a user can meet, and the exit
codes and failure types the code produces (in the spirit of sqlite-utils' test_docs): every
command and option has help text, every option and environment variable is in README.md or
docs/*.md, and docs/metrics.md gives every registered metric with its kind."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from ragmeter import errors
from ragmeter.cli.main import main
from ragmeter.config import ENV_FIELDS
from ragmeter.metrics.base import MetricSettings
from ragmeter.registry import registry

ROOT = Path(__file__).resolve().parents[2]
DOCS = "\n".join(
    path.read_text(encoding="utf-8") for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
)
README = (ROOT / "README.md").read_text(encoding="utf-8")
RUNS = (ROOT / "docs" / "runs.md").read_text(encoding="utf-8")
METRICS = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = []
    context = click.Context(group)
    for name in group.list_commands(context):  # the top group imports each command here
        command = group.get_command(context, name)
        assert command is not None, name
        full = f"{prefix}{name}"
        found.append((full, command))
        if isinstance(command, click.Group):
            found += _commands(command, f"{full} ")
    return found


COMMANDS = _commands(main)


@pytest.mark.parametrize("name", [name for name, _ in COMMANDS])
def test_every_command_is_in_the_readme(name: str) -> None:
    assert f"ragmeter {name}" in README


OPTIONS = [
    (name, parameter)
    for name, command in COMMANDS
    for parameter in command.params
    if isinstance(parameter, click.Option) and parameter.name != "help"
]


@pytest.mark.parametrize(
    "command,option",
    [
        (name, option)
        for name, parameter in OPTIONS
        for option in parameter.opts
        if option.startswith("--") and option != "--help"
    ],
)
def test_every_option_is_documented(command: str, option: str) -> None:
    assert re.search(rf"{re.escape(option)}\b", DOCS), f"ragmeter {command} {option}"


@pytest.mark.parametrize(
    "command,option",
    [
        (name, parameter.opts[0])
        for name, parameter in OPTIONS
        if not any(option.startswith("--") for option in parameter.opts)
    ],
)
def test_every_short_option_is_documented(command: str, option: str) -> None:
    """Options with no long form (``trec -q``): in a command line of the docs."""
    pattern = rf"ragmeter {re.escape(command)}\b[^\n]*(?<![\w-]){re.escape(option)}\b"
    assert re.search(pattern, DOCS), f"ragmeter {command} {option}"


@pytest.mark.parametrize("name", [name for name, _ in COMMANDS])
def test_every_command_has_help(name: str) -> None:
    command = dict(COMMANDS)[name]
    assert command.help and command.help.strip(), f"ragmeter {name} has no help"


@pytest.mark.parametrize(
    "command,option", [(name, parameter.opts[0]) for name, parameter in OPTIONS]
)
def test_every_option_has_help(command: str, option: str) -> None:
    parameter = next(p for n, p in OPTIONS if n == command and p.opts[0] == option)
    assert parameter.help and parameter.help.strip(), f"ragmeter {command} {option}"


ENV_OPTIONS = [(name, parameter) for name, parameter in OPTIONS if parameter.envvar]


@pytest.mark.parametrize(
    "command,variable", [(name, str(parameter.envvar)) for name, parameter in ENV_OPTIONS]
)
def test_every_option_variable_is_in_its_help_and_the_docs(command: str, variable: str) -> None:
    parameter = next(p for n, p in ENV_OPTIONS if n == command and p.envvar == variable)
    context = click.Context(dict(COMMANDS)[command], info_name=command)
    record = parameter.get_help_record(context)
    assert record is not None and variable in record[1], f"ragmeter {command}: {variable}"
    assert f"`{variable}`" in DOCS, variable


@pytest.mark.parametrize("variable", sorted(ENV_FIELDS))
def test_every_config_variable_is_documented(variable: str) -> None:
    assert f"`{variable}`" in RUNS, variable


def test_every_metric_is_documented() -> None:
    settings = MetricSettings()
    missing = [
        metric.name
        for family in registry.names("metrics")
        for metric in registry.get("metrics", family)(settings)
        # cutoffs are documented once (`recall_at_k`), the grade shares as a range
        if metric.name not in DOCS
        and re.sub(r"_at_\d+$", "_at_k", metric.name) not in DOCS
        and not re.fullmatch(r"factual_grade_[a-e]_(rate|count)", metric.name)
    ]
    assert not missing


def _metric_lines(name: str) -> list[str]:
    """The lines of docs/metrics.md naming the metric (cutoffs as ``_at_k``)."""
    names = {name, re.sub(r"_at_\d+$", "_at_k", name)}
    return [line for line in METRICS.splitlines() if any(f"`{n}`" in line for n in names)]


@pytest.mark.parametrize(
    "family,name,kind",
    [
        (family, metric.name, metric.kind)
        for family in registry.names("metrics")
        for metric in registry.get("metrics", family)(MetricSettings())
    ],
)
def test_every_metric_is_in_metrics_md_with_its_kind(family: str, name: str, kind: str) -> None:
    """A metric's line in docs/metrics.md gives its kind: a ``| kind |`` table cell or
    ``(kind: KIND)``."""
    lines = _metric_lines(name)
    assert lines, f"{name} ({family}) is not in docs/metrics.md"
    marked = re.compile(rf"\|\s*{kind}\s*\||\(kind: {kind}\)")
    assert any(marked.search(line) for line in lines), f"{name}: kind {kind} not on its line"


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

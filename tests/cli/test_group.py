"""cli.group: every command declared once, imported only when it runs."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter.cli.group import COMMANDS, main, short_help


def _first_sentence(command: click.Command) -> str:
    """What click's own listing would summarise: the help's first sentence."""
    paragraph = " ".join((command.help or "").split("\n\n")[0].split())
    end = paragraph.find(". ")
    return paragraph if end < 0 else paragraph[: end + 1]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_declaration_is_its_commands_own(name: str) -> None:
    """The module, attribute and summary declared for a command are the command's: its name
    and the first sentence of its help."""
    module, attribute, summary = COMMANDS[name]
    command = getattr(importlib.import_module(module), attribute)
    assert isinstance(command, click.Command)
    assert command.name == name
    assert summary == _first_sentence(command)


def test_every_command_module_is_declared() -> None:
    """A command a module adds to the group is in the table (else ``--help`` would not list
    it until something imported its module)."""
    for module in {declared[0] for declared in COMMANDS.values()}:
        importlib.import_module(module)
    assert set(main.commands) <= set(COMMANDS)


def test_help_imports_no_command_module() -> None:
    """``ragmeter --help`` lists every command from the table: no command module, no
    pydantic, no rich is imported for it."""
    code = (
        "import sys, json\n"
        "from ragmeter.cli.main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = set(json.loads(result.stderr.strip().splitlines()[-1]))
    assert not {"pydantic", "rich", "numpy", "ragmeter.models"} & loaded
    assert {m for m in loaded if m.startswith("ragmeter.")} == {
        "ragmeter.cli",
        "ragmeter.cli.group",
        "ragmeter.cli.main",
    }
    for name, (_, _, summary) in COMMANDS.items():
        listed = next(line for line in result.stdout.splitlines() if line.split()[:1] == [name])
        assert summary.startswith(listed.split(None, 1)[1].removesuffix("..."))


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("List stored runs, newest first.", 40, "List stored runs, newest first."),
        ("List stored runs, newest first.", 20, "List stored runs..."),
        ("Compare CANDIDATE runs with BASELINE", 12, "Compare..."),
    ],
)
def test_short_help_cuts_at_a_word(text: str, limit: int, expected: str) -> None:
    assert short_help(text, limit) == expected
    assert len(short_help(text, limit)) <= max(limit, len(expected))


@given(
    st.lists(st.text(alphabet="abcdefgh,.", min_size=1, max_size=9), min_size=1, max_size=12),
    st.integers(min_value=4, max_value=80),
)
def test_short_help_is_a_prefix_within_the_limit(words: list[str], limit: int) -> None:
    text = " ".join(words)
    shown = short_help(text, limit)
    if shown == text:
        assert len(text) <= limit
        return
    assert shown.endswith("...")
    assert text.startswith(shown.removesuffix("..."))
    assert len(shown) <= limit or " " not in text[: limit - 3]  # one long first word

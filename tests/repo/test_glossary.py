"""docs/glossary.md: one word per idea. The help of every command and option says each idea
with its word, never with the words the glossary rules out."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from ragmeter.cli.main import main

GLOSSARY = Path(__file__).resolve().parents[2] / "docs" / "glossary.md"


def _rows() -> list[list[str]]:
    lines = [
        line for line in GLOSSARY.read_text(encoding="utf-8").splitlines() if line.startswith("|")
    ]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def _help_texts(group: click.Group, prefix: str = "") -> dict[str, str]:
    """Command path (and option) -> its help text, for every command and option."""
    found: dict[str, str] = {}
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None, name
        path = f"{prefix}{name}"
        found[path] = command.help or ""
        for param in command.params:
            if isinstance(param, click.Option) and param.help:
                found[f"{path} {param.opts[0]}"] = param.help
        if isinstance(command, click.Group):
            found.update(_help_texts(command, f"{path} "))
    return found


def _says(text: str, phrase: str) -> bool:
    """``phrase`` as whole words in ``text``, whatever the case and line breaks."""
    words = r"\s+".join(re.escape(word) for word in phrase.split())
    return re.search(rf"\b{words}\b", text, re.IGNORECASE) is not None


HELP = _help_texts(main)
ROWS = _rows()


def test_the_glossary_has_one_row_per_word() -> None:
    words = [row[0] for row in ROWS]
    assert len(words) == len(set(words)) >= 15
    assert {"target", "goal", "run", "kind", "pipeline"} <= set(words)


@pytest.mark.parametrize("row", ROWS, ids=[row[0] for row in ROWS])
def test_no_help_text_says_an_idea_with_a_word_the_glossary_rules_out(row: list[str]) -> None:
    word, _, _, ruled_out = row
    for phrase in filter(None, (p.strip() for p in ruled_out.split(";"))):
        said = [
            where
            for where, text in HELP.items()
            if phrase.lower() in " ".join(text.lower().split())
        ]
        assert not said, f"{phrase!r} (say {word!r}) in the help of {said}"


def test_the_goal_options_say_goal_and_accept_the_seed_name() -> None:
    eval_help = {where: text for where, text in HELP.items() if where.startswith("eval ")}
    assert "goal" in eval_help["eval --goals"].lower()
    assert "goal" in eval_help["eval --gate"].lower()
    command = main.get_command(click.Context(main), "eval")
    assert command is not None
    goals = next(p for p in command.params if p.name == "goals_file")
    assert set(goals.opts) == {"--goals", "--targets"}  # seed 003's name works too
    target = next(p for p in command.params if p.name == "target_spec")
    assert "--target" in target.opts and "goal" not in (target.help or "").lower()


ROOT = GLOSSARY.parents[1]


@pytest.mark.parametrize("row", [row for row in ROWS if row[3]], ids=lambda row: row[0])
def test_no_source_or_doc_says_an_idea_with_a_word_the_glossary_rules_out(row: list[str]) -> None:
    """The same check over the code, README.md and docs/ (the glossary's own row aside)."""
    word, _, _, ruled_out = row
    files = [*(ROOT / "src" / "ragmeter").rglob("*.py"), ROOT / "README.md"]
    files += [path for path in (ROOT / "docs").glob("*.md") if path != GLOSSARY]
    for phrase in filter(None, (p.strip().lower() for p in ruled_out.split(";"))):
        said = [f"{path.relative_to(ROOT)}" for path in files if _says(path.read_text(), phrase)]
        assert not said, f"{phrase!r} (say {word!r}) in {said}"

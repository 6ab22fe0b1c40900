"""Options that say two things at once, or nothing, are errors before the first question, naming
the options (issue 30: an empty ``--metrics ""`` ran the default set after asking every case;
``--rag-url`` with ``--target`` and ``--corpus`` with a Python target were followed or ignored
without a word)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragmeter.cli.main import main
from ragmeter.config import ENV_FIELDS


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A project folder with a Python target; the imports an in-process run makes (the target's
    module, its folder on sys.path) are undone afterwards, so no later test in this worker
    finds them."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    monkeypatch.chdir(tmp_path)
    for variable in ENV_FIELDS:
        monkeypatch.delenv(variable, raising=False)
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "question": "q?"}\n', encoding="utf-8")
    (tmp_path / "myrag.py").write_text(
        "CALLS = []\n\ndef answer(question):\n    CALLS.append(question)\n    return 'x'\n",
        encoding="utf-8",
    )
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--metrics", ""], "Invalid value for '--metrics': is empty"),
        (["--metrics", " , "], "Invalid value for '--metrics': is empty"),
        (
            ["--rag-url", "http://127.0.0.1:9", "--target", "myrag.py:answer"],
            "--rag-url and --target both name the system to evaluate",
        ),
        (
            ["--corpus", "docs", "--target", "myrag.py:answer"],
            "--corpus is the reference pipeline's corpus, and --target names a Python target",
        ),
        (
            ["--corpus", "docs", "--target", "http://127.0.0.1:9"],
            "--target names an HTTP target",
        ),
        (
            ["--corpus", "docs", "--rag-url", "http://127.0.0.1:9"],
            "--rag-url names an HTTP target",
        ),
    ],
)
def test_conflicting_or_empty_options_fail_before_asking(
    in_tmp: Path, options: list[str], message: str
) -> None:
    result = CliRunner().invoke(
        main, ["eval", "-d", "cases.jsonl", "--store", "runs.db", "--no-progress", *options]
    )
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert not (in_tmp / "runs.db").exists()  # nothing was asked or stored


def test_a_flag_over_an_environment_variable_is_no_conflict(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the layering: a flag wins over the environment, silently and as documented
    monkeypatch.setenv("RAGMETER_TARGET_URL", "http://127.0.0.1:9")
    result = CliRunner().invoke(
        main,
        ["eval", "-d", "cases.jsonl", "--store", "runs.db", "--no-progress",
         "--target", "myrag.py:answer", "--metrics", "lexical"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output + result.stderr
    # the reference pipeline with its own corpus stays allowed
    corpus = in_tmp / "docs"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nThe answer is x.\n", encoding="utf-8")
    with_corpus = CliRunner().invoke(
        main,
        ["eval", "-d", "cases.jsonl", "--store", "runs.db", "--no-progress",
         "--target", "reference", "--corpus", str(corpus), "--metrics", "lexical"],
    )  # fmt: skip
    assert with_corpus.exit_code == 0, with_corpus.output + with_corpus.stderr

"""Seed 002's command line: ``ragmeter eval --samples 10 --no-judge``, ``--rag-url URL``,
``--datasets a,b,c`` and ``export --format csv``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragmeter.cli.main import main
from ragmeter.config import ENV_FIELDS


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for variable in ENV_FIELDS:
        monkeypatch.delenv(variable, raising=False)
    return tmp_path


def test_help_names_the_seed_002_options() -> None:
    result = CliRunner().invoke(main, ["eval", "--help"])
    text = " ".join(result.output.split())
    for option in ("--no-judge", "--rag-url URL", "--datasets A,B,C", "N cases per dataset"):
        assert option in text


@pytest.mark.integration
def test_seed_002_commands(in_tmp: Path, reference_server: str) -> None:
    """`eval --rag-url URL --datasets ... --samples N --no-judge` then `export --format csv`;
    RAGMETER_JUDGE would need an API key, --no-judge turns it off."""
    runner = CliRunner()
    result = runner.invoke(
        main,
        [
            "eval",
            "--rag-url",
            reference_server,
            "--datasets",
            "demo",
            "--samples",
            "4",
            "--no-judge",
            "--no-progress",
            "--metrics",
            "retrieval,lexical",
        ],
        env={"RAGMETER_JUDGE": "openai:gpt-4o-mini", "OPENAI_API_KEY": ""},
    )
    assert result.exit_code == 0, result.output
    [run_file] = (in_tmp / ".ragmeter" / "runs").glob("*.json")
    document = json.loads(run_file.read_text(encoding="utf-8"))
    assert document["config"]["target"] == {**document["config"]["target"], "type": "http"}
    assert document["config"]["target"]["url"] == reference_server
    assert document["config"]["judge"] is None and document["question_count"] == 4
    exported = runner.invoke(main, ["export", document["id"], "--format", "csv", "-o", "r.csv"])
    assert exported.exit_code == 0, exported.output
    with open(in_tmp / "r.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {row["case_id"] for row in rows} == {case["case_id"] for case in document["cases"]}

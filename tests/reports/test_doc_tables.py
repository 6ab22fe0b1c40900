"""reports.doc_tables: the tables docs/ generates from the declarations are current."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragmeter.config import EvalConfig
from ragmeter.datasets.declarations import DATASETS
from ragmeter.reports.doc_tables import TABLES, documents, render

ROOT = Path(__file__).resolve().parents[2]


def test_every_generated_table_is_current() -> None:
    """`python scripts/doc_tables.py` leaves nothing to rewrite."""
    found = documents(ROOT)
    assert {path.name for path in found} == {"runs.md", "datasets.md", "metrics.md"}
    for path in found:
        text = path.read_text(encoding="utf-8")
        assert render(text) == text, f"{path}: run python scripts/doc_tables.py"
    every = "".join(path.read_text(encoding="utf-8") for path in found)
    for name in TABLES:
        assert f"<!-- generated: {name} -->" in every


def test_the_tables_hold_the_declarations() -> None:
    settings = TABLES["settings"]()
    assert (
        '| `metrics` | `["retrieval", "lexical", "assertions", "context", "citation", ' in settings
    )
    assert "| `target.url` | none | `RAGMETER_TARGET_URL` |" in settings
    assert "| `concurrency` | `8` | `RAGMETER_CONCURRENCY` |" in settings
    datasets = TABLES["datasets"]()
    assert [line.split("|")[1].strip() for line in datasets.splitlines()[2:]] == [
        f"`{d.name}`" for d in DATASETS
    ]
    metrics = TABLES["metrics"]()
    assert "| `retrieval` | `mrr` | retrieval | proportion | higher |" in metrics
    assert "| `abstention` | `abstention_false_positive_rate` | abstention | binary | lower |" in (
        metrics
    )


def test_the_default_families_are_the_configs_wherever_the_docs_name_them() -> None:
    """docs/runs.md's hand-written settings row names the default families in order."""
    runs = (ROOT / "docs" / "runs.md").read_text(encoding="utf-8")
    row = re.search(r"^\| `metrics` \| ([a-z_, ]+) \|", runs, re.M)
    assert row is not None
    assert row.group(1).split(", ") == EvalConfig().metrics


def test_an_unknown_table_name_is_refused() -> None:
    with pytest.raises(KeyError, match="no generated table named 'nope'"):
        render("<!-- generated: nope -->\n<!-- end generated -->")

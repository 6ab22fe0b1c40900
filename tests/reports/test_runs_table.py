"""``ragmeter runs`` in a narrow terminal: a run id, its status and counts are shown whole (the
id is what the user copies into the next command), and no cell is cut with an ellipsis. At 80
columns rich used to cut ids to ``6e2264d6…``."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from ragmeter.reports.show import runs_table
from ragmeter.run_record import RunRecord


def record(run_id: str, name: str) -> RunRecord:
    return RunRecord(
        id=run_id,
        name=name,
        status="interrupted",
        created_at="2026-11-28T00:35:22+00:00",
        config={},
        datasets=["demo", "a-dataset-with-a-long-name"],
        question_count=123456,
        error_count=7,
    )


@pytest.mark.parametrize("width", [60, 80, 120])
def test_ids_statuses_and_counts_are_never_cut(width: int) -> None:
    records = [record("6e2264d62375", "a rather long run name of many words"), record("a1", "b")]
    console = Console(width=width, record=True, color_system=None)
    console.print(runs_table(records))
    text = console.export_text()
    assert "…" not in text
    assert re.findall(r"^│ (\S+) +│", text, flags=re.MULTILINE)[:1] == ["6e2264d62375"]
    for whole in ("6e2264d62375", "interrupted", "123456"):
        assert whole in text, (width, text)

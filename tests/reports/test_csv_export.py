"""``ragmeter export --format csv|csv-wide`` and ``ragmeter report --format csv`` on runs built
through the real CLI: every value equals the store's and reads back equal (``repr``), a
skipped or failed score is an empty cell with its status and reason (never 0), and cells from
the dataset or the target that a spreadsheet would run as a formula are defused."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ragmeter.reports.csv_export import LONG_COLUMNS, WIDE_COLUMNS, safe_cell
from ragmeter.store.sqlite import RunStore
from ragmeter.text import visible
from tests.reports.support import HOSTILE_ID, build_replay_runs, ragmeter


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    folder = tmp_path_factory.mktemp("csv")
    store, base, _ = build_replay_runs(folder)
    return folder, store, base


def _rows(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle))


def _export(folder: Path, store: Path, run_id: str, fmt: str, name: str) -> Path:
    out = folder / name
    done = ragmeter(folder, "export", run_id, "--store", str(store), "--format", fmt, "-o", name)
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stdout
    return out


def test_long_csv_equals_the_store(run: tuple[Path, Path, str]) -> None:
    folder, store, run_id = run
    rows = _rows(_export(folder, store, run_id, "csv", "long.csv"))
    assert tuple(rows[0]) == LONG_COLUMNS
    run_store = RunStore(store, create=False)
    scores = run_store.get_scores(run_id)
    record = run_store.get_run(run_id)
    assert record.scorecard is not None
    groups = {m.name: m.group for m in record.scorecard.metrics}
    categories = {c.case_id: c.category for c in run_store.get_cases(run_id)}
    assert len(rows) - 1 == len(scores)
    statuses = set()
    for row, score in zip(rows[1:], scores, strict=True):
        cell = dict(zip(LONG_COLUMNS, row, strict=True))
        assert cell["run_id"] == run_id
        assert cell["case_id"] == safe_cell(visible(score.case_id))
        assert cell["metric"] == score.metric and cell["group"] == groups[score.metric]
        assert cell["status"] == score.status
        assert cell["category"] == safe_cell(categories[score.case_id])
        statuses.add(score.status)
        if score.status == "ok":
            assert float(cell["value"]) == score.value  # exact: repr round-trips
        else:
            assert cell["value"] == ""  # never 0
            assert cell["reason"] == (score.reason or "")
    assert {"ok", "skipped"} <= statuses
    # report --format csv writes the same file
    done = ragmeter(
        folder, "report", run_id, "--store", str(store), "--format", "csv", "-o", "r.csv"
    )
    assert done.returncode == 0, done.stderr
    assert (folder / "r.csv").read_bytes() == (folder / "long.csv").read_bytes()


def test_wide_csv_equals_the_store(run: tuple[Path, Path, str]) -> None:
    folder, store, run_id = run
    rows = _rows(_export(folder, store, run_id, "csv-wide", "wide.csv"))
    header = rows[0]
    assert tuple(header[: len(WIDE_COLUMNS)]) == WIDE_COLUMNS
    metrics = header[len(WIDE_COLUMNS) :]
    run_store = RunStore(store, create=False)
    cases = run_store.get_cases(run_id)
    results = {r.case_id: r for r in run_store.get_results(run_id)}
    assert len(rows) - 1 == len(cases)
    by_case = {row[0]: row for row in rows[1:]}
    for score in run_store.get_scores(run_id):
        row = by_case[safe_cell(visible(score.case_id))]
        cell = row[len(WIDE_COLUMNS) + metrics.index(score.metric)]
        if score.status == "ok":
            assert float(cell) == score.value
        else:
            assert cell == ""
    for case in cases:
        row = by_case[safe_cell(visible(case.case_id))]
        assert row[3] == "ok"
        latency = results[case.case_id].latency_ms
        assert latency is not None and float(row[4]) == latency


def test_formula_cells_are_defused(run: tuple[Path, Path, str]) -> None:
    folder, store, run_id = run
    rows = _rows(_export(folder, store, run_id, "csv-wide", "wide2.csv"))
    hostile = next(row for row in rows if row[0].startswith("'"))
    assert hostile[0] == "'" + HOSTILE_ID
    assert hostile[1] == "'+cmd"  # the category
    assert "\x1b" not in hostile[2]  # the question, escape sequences removed
    for raw, expected in [
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-2", "'-2"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\r=x", "'\n=x"),
        ("plain", "plain"),
        (None, ""),
    ]:
        assert safe_cell(raw) == expected


def test_export_errors(run: tuple[Path, Path, str]) -> None:
    folder, store, run_id = run
    bad = ragmeter(folder, "export", run_id, "--store", str(store), "--format", "xls", "-o", "x")
    assert bad.returncode != 0 and "csv-wide" in bad.stderr  # the choices are listed
    to_folder = ragmeter(
        folder, "export", run_id, "--store", str(store), "--format", "csv", "-o", str(folder)
    )
    assert to_folder.returncode != 0 and "is a directory" in to_folder.stderr


def test_ids_that_differ_by_a_control_character_stay_distinct(tmp_path: Path) -> None:
    import json

    cases = [
        {"case_id": "e2", "question": "q?", "reference_answer": "yes"},
        {"case_id": "e2\x1b[0m", "question": "q?", "reference_answer": "yes"},
        {"case_id": "e3", "question": "q?", "reference_answer": "yes"},
    ]
    replies = [
        {"case_id": "e2", "answer": "yes"},
        {"case_id": "e2\x1b[0m", "answer": "no"},
        {"case_id": "e3", "error_type": "timeout", "error_message": "slow", "latency_ms": 900},
    ]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "replay.jsonl").write_text("".join(json.dumps(r) + "\n" for r in replies))
    made = ragmeter(
        tmp_path, "eval", "-d", "cases.jsonl", "--target", "replay:replay.jsonl",
        "--metrics", "lexical", "--store", "runs.db", "--no-progress", "--output", "run",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    run_id = json.loads((tmp_path / "runs" / "run.json").read_text())["id"]
    rows = _rows(_export(tmp_path, tmp_path / "runs.db", run_id, "csv-wide", "wide.csv"))
    by_id = {row[0]: row for row in rows[1:]}
    assert set(by_id) == {"e2", "e2\\x1b[0m", "e3"}
    assert by_id["e3"][3] == "error: timeout" and by_id["e3"][4] == ""  # no answer, no latency
    shown = ragmeter(tmp_path, "show", run_id, "--store", "runs.db", "--cases")
    assert shown.returncode == 0, shown.stderr
    assert "e2\\x1b[0m" in shown.stdout and "\x1b" not in shown.stdout

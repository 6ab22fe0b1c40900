"""Repeats with a real local judge (issue 19): ``repeats: 3`` through ``ragmeter eval`` with
llama.cpp's server and the 0.5B GGUF model: each answer is judged again for every repeat (no
cache hit), and the scorecard reports the within- and between-case variance of each judged
metric."""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
from pathlib import Path

import pytest

from tests.integration.processes import run_bounded
from tests.integration.test_judge_llama import CONTEXT, OTHER

pytestmark = pytest.mark.integration
# the classification task: one short verdict a call (CORRECT, WRONG or DONT_KNOW), about a
# third of the CPU time of the correctness scale's reasoned reply on a 2-core machine
METRIC = "judged_correct_rate"


def test_repeats_report_judge_variance(gguf: Path, tmp_path: Path) -> None:
    question = "How many days of paid vacation does a full-time employee accrue per year?"
    reference = "Full-time employees accrue 27 days of paid vacation per calendar year."
    answers = {
        "right": "A full-time employee accrues 27 days of paid vacation per year.",
        "wrong": "A full-time employee accrues 40 days of paid vacation per year.",
    }
    chunks = [{"id": "a", "text": CONTEXT}, {"id": "b", "text": OTHER}]
    (tmp_path / "cases.jsonl").write_text(
        "".join(
            json.dumps({"id": name, "question": question, "reference_answer": reference}) + "\n"
            for name in answers
        )
    )
    # the same recorded answer for every repeat: the variance is the judge's own
    (tmp_path / "responses.jsonl").write_text(
        "".join(
            json.dumps(
                {"case_id": f"{name}{suffix}", "response": {"answer": a, "retrieved": chunks}}
            )
            + "\n"
            for name, a in answers.items()
            for suffix in ("", "~r2", "~r3")
        )
    )
    (tmp_path / "ragmeter.yaml").write_text(
        "repeats: 3\njudge_tasks: [classification]\nconcurrency: 1\n", encoding="utf-8"
    )
    done = run_bounded(
        [
            sys.executable, "-m", "ragmeter", "eval", "--config", "ragmeter.yaml",
            "--dataset", "cases.jsonl", "--target", "replay:responses.jsonl",
            "--metrics", "lexical", "--judge", f"local:{gguf}", "--store", "runs.db",
            "--output-dir", "out", "--no-progress", "-v",
        ],
        1800, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode in (0, 4), done.stdout[-3000:] + done.stderr[-3000:]
    assert "Repeats: 3 answers per case" in done.stdout
    (run_file,) = (tmp_path / "out").glob("*.json")
    document = json.loads(run_file.read_text(encoding="utf-8"))
    judged = next(m for m in document["scorecard"]["metrics"] if m["name"] == METRIC)
    assert judged["repeats"] == 3
    with sqlite3.connect(tmp_path / "runs.db") as db:
        rows = db.execute("SELECT case_id, cached FROM judge_calls").fetchall()
        scores = db.execute(
            "SELECT case_id, status, value FROM scores WHERE metric = ?", (METRIC,)
        ).fetchall()
    # whatever the 0.5B judge answers: every repeat has a verdict or a failure with a reason,
    # and the within-case variance is the mean of the cases' own sample variances, over the
    # cases judged at least twice (none: no variance to report)
    assert len(scores) == 3 * len(answers)
    assert {status for _, status, _ in scores} <= {"ok", "failed"}
    judged_values: dict[str, list[float]] = {name: [] for name in answers}
    for case_id, status, value in scores:
        if status == "ok":
            judged_values[case_id.split("~")[0]].append(value)
    variances = [statistics.variance(v) for v in judged_values.values() if len(v) >= 2]
    if variances:
        assert judged["within_case_var"] == pytest.approx(statistics.mean(variances))
    else:
        assert judged["within_case_var"] is None
    asked = {case_id for case_id, _ in rows}
    assert asked == {f"{n}{s}" for n in answers for s in ("", "~r2", "~r3")}
    assert all(cached == 0 for _, cached in rows)  # every repeat judged again

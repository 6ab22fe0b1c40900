"""The audit of ``compare`` / ``plan`` on runs that failed, are partial or unfinished: a gate
never passes on what it could not compare (real ``ragmeter eval`` runs of replay files, then
the real CLI through ``CliRunner``).

The dataset: 12 cases c01-c12, one gold chunk each. Replays: A all correct; B c01-c06 wrong; C
only c01-c03 recorded (9 fail ``not_recorded``); D every case a recorded ``timeout``; E c01-c05
errors (the others: retrieval right on even cases only, answers correct).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from ragmeter.cli.main import main

CASES = [f"c{i:02d}" for i in range(1, 13)]


def _response(i: int, hit: bool, correct: bool) -> dict[str, Any]:
    top = f"doc{i}" if hit else f"doc{i + 100}"
    retrieved = [
        {"id": f"{top}#a", "doc_id": top, "rank": 1, "text": f"Item {i} has value {i * 7}."},
        {"id": f"docx{i}#b", "doc_id": f"docx{i}", "rank": 2, "text": "Unrelated weather."},
    ]
    answer = f"The value of item {i} is {i * 7 if correct else i * 7 + 1}."
    return {
        "answer": answer,
        "retrieved": retrieved,
        "citations": [{"chunk_id": f"{top}#a", "doc_id": top}],
        "latency_ms": {"total": 10 + i},
        "usage": {"cost_usd": 0.001},
    }


def _replay(
    path: Path,
    good: Any,
    hit: Any = None,
    only: set[str] | None = None,
    errors: frozenset[str] = frozenset(),
) -> None:
    lines = []
    for i, case in enumerate(CASES, start=1):
        if only is not None and case not in only:
            continue
        if case in errors:
            lines.append({"case_id": case, "error_type": "timeout", "error_message": "boom"})
            continue
        hits = good(i) if hit is None else hit(i)
        lines.append({"case_id": case, "response": _response(i, hits, good(i))})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


class Runs:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, str] = {}
        self.ids: dict[str, str] = {}

    def cli(self, *args: str) -> Result:
        return CliRunner().invoke(
            main,
            [*args, "--store", str(self.root / "runs.db")],
            catch_exceptions=False,
            env={"COLUMNS": "300"},  # one-line tables: no wrapped cell
        )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("audit")
    cases = []
    for i, case in enumerate(CASES, start=1):
        cases.append(
            {
                "case_id": case,
                "question": f"What is the value of item {i}?",
                "reference_answer": f"The value of item {i} is {i * 7}.",
                "answerable": True,
                "gold_passages": [{"doc_id": f"doc{i}", "chunk_id": f"doc{i}#a", "grade": 3}],
                "gold_facts": [{"fact": str(i * 7)}],
            }
        )
    (root / "cases.jsonl").write_text(
        "".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8"
    )
    _replay(root / "A.jsonl", lambda i: True)
    _replay(root / "B.jsonl", lambda i: i > 6)
    _replay(root / "C.jsonl", lambda i: True, only={"c01", "c02", "c03"})
    _replay(root / "D.jsonl", lambda i: True, errors=frozenset(CASES))
    _replay(root / "E.jsonl", lambda i: True, hit=lambda i: i % 2 == 0, errors=frozenset(CASES[:5]))
    made = Runs(root)
    plan = {
        "A": "retrieval,lexical,performance",
        "B": "retrieval,lexical,performance",
        "C": "retrieval,lexical,performance",
        "D": "retrieval,lexical,performance",
        "E": "retrieval,lexical,performance",
        "Alex": "lexical,performance",
    }
    for name, families in plan.items():
        replay = root / f"{name[0]}.jsonl"
        result = subprocess.run(
            [
                sys.executable, "-m", "ragmeter", "eval", "--no-progress",
                "--dataset", "cases.jsonl", "--target", f"replay:{replay}",
                "--metrics", families, "--output", f"run{name}",
                "--store", "runs.db", "--output-dir", "files",
            ],
            cwd=root, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        # D: every case failed, so eval exits 3 with the failure summary, the run stored
        assert result.returncode == (3 if name == "D" else 0), result.stderr
        if name == "D":
            assert "every case failed (12 of 12), nothing was measured: timeout 12: boom" in (
                " ".join(result.stderr.split())
            )
        path = root / "files" / f"run{name}.json"
        made.files[name] = str(path)
        made.ids[name] = json.loads(path.read_text(encoding="utf-8"))["id"]
    return made


def _rows(result: Result) -> dict[str, dict[str, Any]]:
    document = json.loads(result.stdout)
    return {row["metric"]: row for row in document["comparisons"][0]["rows"]}


# 1. a gated metric not paired, or paired under the coverage floor, fails the gate


def test_every_case_failed_fails_the_gate(runs: Runs) -> None:
    a, d = runs.files["A"], runs.files["D"]
    result = runs.cli("compare", a, d, "--fail-on-regression")
    assert result.exit_code == 4, result.output
    # the console shows the unpaired gated rows without --all, and says why
    assert "recall_at_5" in result.stdout
    assert "NOT COMPARED" in result.stdout
    assert "not compared:" in result.stderr
    assert "recall_at_5" in result.stderr
    assert "not paired: no case scored in both runs (12 failed or not reported)" in result.stderr
    rows = _rows(runs.cli("compare", a, d, "--json"))
    assert rows["recall_at_5"]["n_paired"] == 0
    assert rows["recall_at_5"]["coverage"] == 0.0  # 0 paired / (0 + 12 failed)
    assert rows["recall_at_5"]["gate_failure"].startswith("not paired")
    assert rows["error_rate"]["gate_failure"] is None  # performance: not gated


def test_three_of_twelve_paired_is_under_the_floor(runs: Runs) -> None:
    a, c = runs.files["A"], runs.files["C"]
    result = runs.cli("compare", a, c, "--fail-on-regression")
    assert result.exit_code == 4, result.output
    assert "paired on 3 of 12 cases (coverage 0.25 < floor 0.90" in result.stderr
    rows = _rows(runs.cli("compare", a, c, "--json"))
    assert rows["recall_at_5"]["n_paired"] == 3
    assert rows["recall_at_5"]["coverage"] == 0.25  # 3 / (3 + 9 not recorded)
    assert rows["recall_at_5"]["verdict"] == "no_difference"
    # a floor of 0.2 accepts 0.25: nothing else fails, so the gate passes
    assert (
        runs.cli("compare", a, c, "--fail-on-regression", "--coverage-floor", "0.2").exit_code == 0
    )


def test_a_run_against_itself_still_passes(runs: Runs) -> None:
    result = runs.cli("compare", runs.files["A"], runs.files["A"], "--fail-on-regression")
    assert result.exit_code == 0, result.output
    assert "not compared" not in result.output


def test_store_runs_give_the_same_verdict(runs: Runs) -> None:
    result = runs.cli("compare", runs.ids["A"], runs.ids["C"], "--fail-on-regression")
    assert result.exit_code == 4, result.output
    assert "coverage 0.25 < floor 0.90" in result.stderr


# 2. no scorecard, no shared case: refused


def test_an_interrupted_run_is_refused(runs: Runs, tmp_path: Path) -> None:
    document = json.loads(Path(runs.files["B"]).read_text(encoding="utf-8"))
    document.update(status="interrupted", scorecard=None, completed_at=None)
    document["cases"] = document["cases"][:4]
    interrupted = tmp_path / "interrupted.json"
    interrupted.write_text(json.dumps(document), encoding="utf-8")
    result = runs.cli("compare", runs.files["A"], str(interrupted), "--fail-on-regression")
    assert result.exit_code == 2, result.output
    assert (
        f"error: run {document['id']} has no scorecard (status interrupted); finish it first"
        in result.stderr
    )


def test_runs_sharing_no_case_are_refused(runs: Runs, tmp_path: Path) -> None:
    document = json.loads(Path(runs.files["B"]).read_text(encoding="utf-8"))
    for case in document["cases"]:
        case["case_id"] = case["case_id"].replace("c", "x")
    other = tmp_path / "other.json"
    other.write_text(json.dumps(document), encoding="utf-8")
    result = runs.cli("compare", runs.files["A"], str(other), "--fail-on-regression")
    assert result.exit_code == 2, result.output
    assert "share no case" in result.stderr


# 3. metrics in one run only are listed, and a gated one the candidate lacks fails the gate


def test_metrics_in_one_run_are_listed_and_gate(runs: Runs, tmp_path: Path) -> None:
    a, lexical = runs.files["A"], runs.files["Alex"]
    document = json.loads(runs.cli("compare", a, lexical, "--json").stdout)
    only = {m["metric"]: m for m in document["comparisons"][0]["only_in_baseline"]}
    assert only["recall_at_5"]["value"] == 1.0
    assert only["recall_at_5"]["gate_failure"] == (
        "measured in the baseline, missing from the candidate"
    )
    assert document["comparisons"][0]["only_in_candidate"] == []
    plain = runs.cli("compare", a, lexical)
    assert plain.exit_code == 0
    assert "only in the baseline (not compared):" in plain.stdout
    assert "recall_at_5 1.000" in plain.stdout
    gated = runs.cli("compare", a, lexical, "--fail-on-regression")
    assert gated.exit_code == 4
    assert "recall_at_5" in gated.stderr
    assert "missing from the candidate" in gated.stderr
    out = tmp_path / "cmp.md"
    report = runs.cli("report", runs.ids["A"], runs.ids["Alex"], "--format", "md", "-o", str(out))
    assert report.exit_code == 0, report.output
    markdown = out.read_text(encoding="utf-8")
    assert "Only in the baseline (not compared):" in markdown
    assert "recall\\_at\\_5 1.000" in markdown  # Markdown escapes the underscores


# 4. a spread of float noise is no spread


def test_float_noise_gives_no_mde_and_no_plan(runs: Runs) -> None:
    a = runs.files["A"]
    # every per-case precision_at_5 is 0.2 (1 gold chunk of 5): the sd is float noise
    rows = _rows(runs.cli("compare", a, a, "--all", "--json"))
    assert rows["precision_at_5"]["mde"] is None
    plan = runs.cli("plan", "--metric", "precision_at_5", "--effect", "0.02", "--from", a)
    assert plan.exit_code == 2, plan.output
    assert "no spread" in plan.stderr
    both = runs.cli("plan", "--metric", "precision_at_5", "--effect", "0.02", "--from", f"{a},{a}")
    assert both.exit_code == 2, both.output
    assert "no spread" in both.stderr


# 5. flips of a lower-is-better binary metric


def test_error_flips_read_pass_to_fail(runs: Runs, tmp_path: Path) -> None:
    result = runs.cli("compare", runs.files["A"], runs.files["D"])
    assert "error_rate: pass→fail 12 [c01, c02" in result.stdout
    assert "fail→pass 0 []" in result.stdout
    rows = _rows(runs.cli("compare", runs.files["A"], runs.files["D"], "--json"))
    assert rows["error_rate"]["pass_to_fail"] == CASES
    assert rows["error_rate"]["fail_to_pass"] == []
    out = tmp_path / "ad.md"
    runs.cli("report", runs.ids["A"], runs.ids["D"], "--format", "md", "-o", str(out))
    assert "- error\\_rate pass → fail (12): c01" in out.read_text(encoding="utf-8")
    # and back: D's errors gone in A read fail→pass
    back = _rows(runs.cli("compare", runs.files["D"], runs.files["A"], "--json"))
    assert back["error_rate"]["fail_to_pass"] == CASES


# 6. the Pareto and methods tables show errors; a run under the floor dominates none


def test_pareto_marks_a_run_under_the_floor(runs: Runs) -> None:
    a, b, e, d = (runs.files[k] for k in "ABED")
    # token_f1: A 1.0, B 0.917 (6 of 12 answers half right), E 1.0 on its 7 answered cases
    result = runs.cli("compare", a, b, e, d, "--pareto", "--quality", "token_f1", "--json")
    points = {p["run_id"]: p for p in json.loads(result.stdout)["pareto"]["points"]}
    ea, eb, ee, ed = (points[runs.ids[k]] for k in "ABED")
    assert ee["quality"] == 1.0
    assert (ee["errors"], ee["cases"], ee["comparable"]) == (5, 12, False)
    assert ee["coverage"] == pytest.approx(7 / 12)
    assert ee["note"] == "not comparable: token_f1 measured on 58% of the cases"
    assert ee["on_frontier"] is False
    assert eb["dominated_by"] == [runs.ids["A"]]  # not E: E is not comparable
    assert ea["on_frontier"] is True
    assert ed["comparable"] is False
    console = runs.cli("compare", a, b, e, d, "--pareto")
    assert "not comparable: 7 of 12" in console.stdout  # "cases answered" may wrap
    assert "not comparable: 0 of 12" in console.stdout
    assert "5/12" in console.stdout  # the errors column
    assert "12/12" in console.stdout


def test_eval_baseline_fails_when_the_candidate_failed_every_case(runs: Runs) -> None:
    root = runs.root
    result = subprocess.run(
        [
            sys.executable, "-m", "ragmeter", "eval", "--no-progress",
            "--dataset", "cases.jsonl", "--target", f"replay:{root / 'D.jsonl'}",
            "--metrics", "retrieval,lexical,performance", "--baseline", runs.ids["A"],
            "--store", "runs.db", "--output-dir", "baseline_files",
        ],
        cwd=root, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    # every case failed: exit 3 (issue 29), after the baseline's verdict is printed
    assert result.returncode == 3, result.stdout + result.stderr
    assert "not compared:" in result.stderr and "recall_at_5" in result.stderr
    assert "every case failed (12 of 12)" in " ".join(result.stderr.split())
    same = subprocess.run(
        [
            sys.executable, "-m", "ragmeter", "eval", "--no-progress",
            "--dataset", "cases.jsonl", "--target", f"replay:{root / 'A.jsonl'}",
            "--metrics", "retrieval,lexical,performance", "--baseline", runs.ids["A"],
            "--store", "runs.db", "--output-dir", "baseline_same",
        ],
        cwd=root, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert same.returncode == 0, same.stdout + same.stderr


def test_eval_baseline_sharing_no_case_is_refused_but_the_run_keeps_its_report(
    runs: Runs,
) -> None:
    root = runs.root
    cases = [json.loads(line) for line in (root / "cases.jsonl").read_text().splitlines()]
    replies = [json.loads(line) for line in (root / "A.jsonl").read_text().splitlines()]
    (root / "other.jsonl").write_text(
        "".join(json.dumps({**c, "case_id": "x" + c["case_id"]}) + "\n" for c in cases)
    )
    (root / "other_replay.jsonl").write_text(
        "".join(json.dumps({**r, "case_id": "x" + r["case_id"]}) + "\n" for r in replies)
    )
    result = subprocess.run(
        [
            sys.executable, "-m", "ragmeter", "eval", "--no-progress",
            "--dataset", "other.jsonl", "--target", "replay:other_replay.jsonl",
            "--metrics", "retrieval,lexical", "--baseline", runs.ids["A"],
            "--store", "runs.db", "--output-dir", "disjoint", "--output", "disjoint",
        ],
        cwd=root, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert "share no case" in result.stderr
    assert (root / "disjoint" / "disjoint.md").is_file()  # written before the refusal

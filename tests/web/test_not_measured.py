"""Audit of ``ragmeter serve``: over a store made by the real CLI (a baseline answering all 10
cases, a candidate whose target timed out on 7 of them), the web comparison carries the same
coverage and gate failures as ``ragmeter compare --json``, the run page says why a target was
not measured, the runs list counts not-measured targets, and an invalid filter is a 400 naming
the parameter and the valid values (never an unfiltered list)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient

from ragmeter.web.app import create_app

CASES = 10
ANSWERED = 3  # the candidate answers c0..c2; c3..c9 time out
GATE_REASON = (
    "paired on 3 of 10 cases (coverage 0.30 < floor 0.90; the others failed or were not reported)"
)


@dataclass
class Runs:
    store: Path
    base: str
    cand: str


def _ragmeter(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=folder,
    )


def _answer(i: int) -> dict[str, object]:
    text = f"item {i} is a widget number {i}"
    chunk = {"id": f"k{i}", "text": f"item {i} is a widget"}
    return {"case_id": f"c{i}", "response": {"answer": text, "retrieved": [chunk]}}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    folder = tmp_path_factory.mktemp("audit-web")
    cases = [
        {
            "id": f"c{i}",
            "question": f"What is item {i}?",
            "reference_answer": f"item {i} is a widget number {i}",
            "gold_passages": [{"chunk_id": f"k{i}"}],
        }
        for i in range(CASES)
    ]
    (folder / "ds.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (folder / "base.jsonl").write_text("".join(json.dumps(_answer(i)) + "\n" for i in range(CASES)))
    timeout = {"error_type": "timeout", "error_message": "x"}
    (folder / "cand.jsonl").write_text(
        "".join(
            json.dumps(_answer(i) if i < ANSWERED else {"case_id": f"c{i}", **timeout}) + "\n"
            for i in range(CASES)
        )
    )
    ids = {}
    for name in ("base", "cand"):
        done = _ragmeter(
            folder,
            "eval",
            "--store",
            "runs.db",
            "--output-dir",
            "out",
            "--no-progress",
            "--dataset",
            "ds.jsonl",
            "--target",
            f"replay:{name}.jsonl",
            "--name",
            name,
            "--metrics",
            "retrieval,lexical",
        )
        assert done.returncode == 0, done.stderr
        ids[name] = re.findall(r"run ([0-9a-f]{12}) ", done.stdout)[-1]
    return Runs(folder / "runs.db", ids["base"], ids["cand"])


@pytest.fixture(scope="module")
def client(runs: Runs) -> TestClient:
    return TestClient(create_app(runs.store), base_url="http://127.0.0.1:8765")


def test_compare_api_equals_cli_json_with_coverage(client: TestClient, runs: Runs) -> None:
    reply = client.get("/api/compare", params={"runs": f"{runs.base},{runs.cand}"})
    assert reply.status_code == 200
    (web,) = reply.json()["comparisons"]
    done = _ragmeter(
        runs.store.parent, "compare", runs.base, runs.cand, "--store", "runs.db", "--json"
    )
    (cli,) = json.loads(done.stdout)["comparisons"]
    assert web == cli
    rows = {row["metric"]: row for row in web["rows"]}
    # 3 paired of 3 + 7 timed out: coverage 0.3 under the 0.9 floor; a gate cannot pass on it
    for metric in ("ndcg_at_5", "recall_at_5", "token_f1", "exact_match"):
        assert rows[metric]["coverage"] == pytest.approx(0.3)
        assert rows[metric]["gate_failure"] == GATE_REASON
        assert rows[metric]["n_paired"] == ANSWERED
    assert web["coverage_floor"] == 0.9 and web["correction"] == "holm"


def test_compare_page_shows_not_compared_rows(client: TestClient, runs: Runs) -> None:
    from html import unescape

    page = client.get("/compare", params={"runs": f"{runs.base},{runs.cand}"}).text
    row = re.search(r'<tr data-metric="ndcg_at_5">(.*?)</tr>', page)
    assert row, "a not-compared row is listed even without a change"
    verdict = re.search(r'<td class="bad" data-role="verdict">([^<]*)</td>', row.group(1))
    assert verdict and unescape(verdict.group(1)) == f"not compared: {GATE_REASON}"
    assert re.search(r"\d+ gated metric\(s\) not compared: a gate fails on them", page)
    assert unescape(f"<li>token_f1: {GATE_REASON}</li>") in unescape(page)


def test_run_page_shows_why_a_target_is_not_measured(client: TestClient, runs: Runs) -> None:
    from html import unescape

    api = client.get(f"/api/runs/{runs.cand}").json()
    target = next(t for t in api["goals"] if t["metric"] == "ndcg_at_5")
    assert (target["status"], target["reason"]) == ("not_measured", "coverage 0.30 < 0.90")
    page = client.get(f"/runs/{runs.cand}").text
    rows = re.findall(r'<tr data-metric="ndcg_at_5">(.*?)</tr>', page)
    shown = [r for r in rows if 'data-role="reason"' in r]
    assert len(shown) == 1
    reason = re.search(r'data-role="reason">([^<]*)</td>', shown[0])
    assert reason and unescape(reason.group(1)) == "coverage 0.30 < 0.90"
    assert 'data-role="status">not measured</td>' in shown[0]


def test_runs_list_counts_targets_not_measured(client: TestClient, runs: Runs) -> None:
    listed = {run["id"]: run for run in client.get("/api/runs").json()["runs"]}
    cand = listed[runs.cand]
    # the default targets: ndcg_at_5 and recall_at_5 under the floor; redundancy_ngram,
    # claim_support_rate, citation_validity_form not measured by retrieval+lexical; three
    # optional ones (injection_auc, injection_tpr_at_fpr_1, pipeline_pass_rate)
    assert cand["goals_passed"] == 0 and cand["goals_failed"] == []
    assert cand["goals_not_measured"] == [
        "ndcg_at_5",
        "recall_at_5",
        "redundancy_ngram",
        "claim_support_rate",
        "citation_validity_form",
    ]
    assert cand["goals_optional_not_measured"] == 3
    assert listed[runs.base]["goals_passed"] == 2  # ndcg_at_5 1.0 > 0.6, recall_at_5 > 0.7
    page = client.get("/").text
    row = re.search(rf'<tr data-run="{runs.cand}">(.*?)</tr>', page)
    assert row
    assert (
        '<td class="bad" data-role="goals">0 pass, 5 not measured, 3 optional not measured</td>'
        in row.group(1)
    )


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("/api/runs?status=complete", "status='complete': use one of running, completed, "),
        ("/api/runs/{cand}?status=errors", "status='errors': use one of ok, error, not answered"),
        ("/api/runs/{cand}?failing=token_f_1", "failing='token_f_1': use one of any, "),
    ],
)
def test_invalid_filters_are_400(client: TestClient, runs: Runs, url: str, message: str) -> None:
    url = url.format(cand=runs.cand)
    reply = client.get(url)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert message in error
    if "failing" in url:
        assert "token_f1" in error.split(", ") and "ndcg_at_5" in error.split(", ")
    html = url.removeprefix("/api")
    page = client.get("/?" + html.split("?")[1] if html.startswith("/runs?") else html)
    assert page.status_code == 400
    assert "&#x27;" in page.text and "use one of" in page.text
    assert 'data-run="' not in page.text and 'data-case="' not in page.text
    # an empty value (a form's "any") and a valid one still filter
    assert client.get(url.split("=")[0] + "=").status_code == 200
    valid = {"status": "completed" if url.startswith("/api/runs?") else "error"}
    assert client.get(url.split("?")[0], params=valid).status_code == 200


def test_valid_failing_filter_still_filters(client: TestClient, runs: Runs) -> None:
    failing = client.get(f"/api/runs/{runs.cand}", params={"failing": "token_f1"}).json()
    assert failing["case_paging"]["total"] == CASES - ANSWERED  # the 7 timed-out cases
    errors = client.get(f"/api/runs/{runs.cand}", params={"status": "error"}).json()
    assert errors["case_paging"]["total"] == CASES - ANSWERED


def test_the_latency_histogram_counts_answered_cases_only(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(
        "".join(json.dumps({"case_id": f"c{i}", "question": f"q{i}?"}) + "\n" for i in range(6))
    )
    (tmp_path / "sometimes.py").write_text(
        "import time\n"
        "def answer(question):\n"
        "    if int(question[1:-1]) % 3 == 0:\n"
        "        time.sleep(0.05)\n"
        "        raise RuntimeError('down')\n"
        "    return {'answer': 'a'}\n"
    )
    made = _ragmeter(
        tmp_path, "eval", "-d", "cases.jsonl", "--target", "sometimes.py:answer",
        "--metrics", "performance", "--store", "runs.db", "--no-progress", "--output", "run",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    run_id = json.loads((tmp_path / "runs" / "run.json").read_text())["id"]
    with TestClient(create_app(str(tmp_path / "runs.db")), base_url="http://127.0.0.1:8765") as web:
        document = web.get(f"/api/runs/{run_id}").json()
    counted = sum(
        count for _, _, count in (tuple(b.values()) for b in document["latency_histogram"])
    )
    assert counted == 4  # c1, c2, c4, c5 answered; c0 and c3 failed

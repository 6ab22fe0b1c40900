"""``ragmeter serve``'s JSON APIs and pages through Starlette's TestClient, over a store built by
the real CLI (``ragmeter eval``: the demo twice, and a replayed hostile case): the numbers equal
the store's, unknown runs and cases are 404s, paging and filters work, the HTML escapes every
stored string, and browsing leaves the store file untouched."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient

from ragmeter.store.sqlite import RunStore
from ragmeter.web.app import create_app
from ragmeter.web.db import ReadOnlyStore

PWN_SCRIPT = "<script>window.__pwned=1</script>"
PWN_IMG = '<img src=x onerror="window.__pwned=1">'
PWN_LINK = "javascript:alert(1)"
RICH = "[bold red]rich[/bold red] [link=javascript:alert(1)]click[/link]"
ANSI = "\x1b[31mred\x1b[0m"
HOSTILE = f"{PWN_SCRIPT} {PWN_IMG} {PWN_LINK} {RICH} {ANSI}"
HOSTILE_CASE = "evil-<i>1</i>"
HOSTILE_NAME = '<img src=x onerror="window.__pwned=1">run'


@dataclass
class WebStore:
    path: Path
    full: str  # the demo
    small: str  # the demo with --top-k 2
    hostile: str  # one replayed case full of markup


def _eval(folder: Path, store: Path, *args: str) -> str:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragmeter",
            "eval",
            "--store",
            str(store),
            "--output-dir",
            str(folder / "out"),
            "--no-progress",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=folder,
    )
    assert done.returncode == 0, done.stderr
    run_store = RunStore(store, create=False)
    try:
        return run_store.list_runs(1)[0].id
    finally:
        run_store.close()


def build_store(folder: Path) -> WebStore:
    """Three runs through the real CLI: the demo, the demo retrieving 2 chunks, a hostile
    replayed case (its question, answer, chunk and citation full of markup)."""
    store = folder / "runs.db"
    full = _eval(folder, store, "--name", "demo full")
    small = _eval(folder, store, "--name", "demo top2", "--top-k", "2")
    dataset, replay = folder / "hostile.jsonl", folder / "hostile-replay.jsonl"
    dataset.write_text(
        json.dumps(
            {
                "id": HOSTILE_CASE,
                "question": f"What is {HOSTILE}?",
                "reference_answer": f"Reference {HOSTILE}",
                "category": "hostile",
                "gold_passages": [{"chunk_id": "chunk-1"}],
            }
        )
        + "\n"
    )
    chunk = {"id": "chunk-1", "doc_id": PWN_LINK, "text": f"Chunk {HOSTILE}"}
    response = {
        "answer": f"Answer {HOSTILE} contact bob@example.com",
        "retrieved": [chunk],
        "citations": [{"chunk_id": PWN_LINK, "quote": PWN_SCRIPT}],
    }
    replay.write_text(json.dumps({"case_id": HOSTILE_CASE, "response": response}) + "\n")
    hostile = _eval(
        folder,
        store,
        "--dataset",
        str(dataset),
        "--target",
        f"replay:{replay}",
        "--name",
        HOSTILE_NAME,
        "--metrics",
        "retrieval,leakage,grounding,lexical",
    )
    return WebStore(store, full, small, hostile)


def fingerprint(path: Path) -> tuple[int, str]:
    return path.stat().st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> WebStore:
    return build_store(tmp_path_factory.mktemp("web"))


@pytest.fixture(scope="module")
def reference(web: WebStore, tmp_path_factory: pytest.TempPathFactory) -> RunStore:
    """The store's own reading (RunStore), over a copy: RunStore opens read-write."""
    copy = tmp_path_factory.mktemp("copy") / "runs.db"
    shutil.copyfile(web.path, copy)
    return RunStore(copy, create=False)


@pytest.fixture(scope="module")
def client(web: WebStore) -> TestClient:
    return TestClient(create_app(web.path))


def test_runs_api_lists_filters_and_pages(client: TestClient, web: WebStore) -> None:
    listed = client.get("/api/runs").json()
    ids = [run["id"] for run in listed["runs"]]
    assert set(ids) == {web.full, web.small, web.hostile}
    assert listed["paging"] == {"total": 3, "page": 1, "per_page": 50, "pages": 1}
    assert "demo" in listed["datasets"]
    demo = client.get("/api/runs", params={"dataset": "demo"}).json()
    assert {run["id"] for run in demo["runs"]} == {web.full, web.small}
    assert client.get("/api/runs", params={"status": "running"}).json()["runs"] == []
    named = client.get("/api/runs", params={"q": "demo t"}).json()
    assert [run["id"] for run in named["runs"]] == [web.small]
    by_id = client.get("/api/runs", params={"q": web.full[:6]}).json()
    assert [run["id"] for run in by_id["runs"]] == [web.full]
    beyond = client.get("/api/runs", params={"page": "2"}).json()
    assert beyond["runs"] == [] and beyond["paging"]["total"] == 3
    assert client.get("/api/runs", params={"page": "x"}).json()["paging"]["page"] == 1


def test_run_api_numbers_equal_the_store(
    client: TestClient, web: WebStore, reference: RunStore
) -> None:
    document = client.get(f"/api/runs/{web.full}").json()
    record = reference.get_run(web.full)
    assert record.scorecard is not None
    seen = 0
    for summaries in document["perspectives"].values():
        for summary in summaries:
            stored = record.scorecard.get(summary["name"])
            assert stored is not None
            assert summary["value"] == stored.value
            assert (summary["ci_low"], summary["ci_high"]) == (stored.ci_low, stored.ci_high)
            assert summary["n_scored"] == stored.n_scored
            seen += 1
    assert seen == len(record.scorecard.metrics)
    assert [t["metric"] for t in document["targets"]] == [t.metric for t in record.targets]
    assert [t["value"] for t in document["targets"]] == [t.value for t in record.targets]
    assert document["run"]["question_count"] == record.question_count == 87
    assert set(document["breakdowns"]) == set(record.breakdowns)
    latencies = [r.latency_ms for r in reference.get_results(web.full) if r.latency_ms is not None]
    assert sum(b["count"] for b in document["latency_histogram"]) == len(latencies)
    assert document["progress"]["answered"] == reference.counts(web.full)["answered"]
    assert document["case_paging"]["total"] == 87
    assert [c["case_id"] for c in document["cases"]] == [
        c.case_id for c in reference.get_cases(web.full)
    ]


def test_case_filters_match_the_scores(
    client: TestClient, web: WebStore, reference: RunStore
) -> None:
    low = {
        s.case_id
        for s in reference.get_scores(web.full)
        if s.metric == "token_f1" and s.status == "ok" and s.value is not None and s.value < 0.5
    }
    assert low, "the demo has cases with a low token F1"
    found = client.get(f"/api/runs/{web.full}", params={"failing": "token_f1"}).json()
    assert {c["case_id"] for c in found["cases"]} == low
    assert all("token_f1" in c["low_metrics"] for c in found["cases"])
    category = reference.get_cases(web.full)[0].category
    wanted = {c.case_id for c in reference.get_cases(web.full) if c.category == category}
    by_category = client.get(f"/api/runs/{web.full}", params={"category": category}).json()
    assert {c["case_id"] for c in by_category["cases"]} == wanted
    errors = client.get(f"/api/runs/{web.full}", params={"status": "error"}).json()
    assert errors["cases"] == [] and errors["case_paging"]["total"] == 0
    # paging: 10 a page over the read-only store
    store = ReadOnlyStore(web.path)
    try:
        record = store.get_run(web.full)
        pages = [store.case_page(record, page=n, per_page=10) for n in range(1, 11)]
    finally:
        store.close()
    assert pages[0].pages == 9 and pages[0].total == 87
    seen = [item.case_id for page in pages for item in page.items]
    assert seen == [c.case_id for c in reference.get_cases(web.full)]


def test_case_api_equals_the_store(client: TestClient, web: WebStore, reference: RunStore) -> None:
    case = reference.get_cases(web.full)[3]
    document = client.get(f"/api/runs/{web.full}/cases/{case.case_id}").json()
    assert document["case"]["question"] == case.question
    stored = [s for s in reference.get_scores(web.full) if s.case_id == case.case_id]
    assert [(s["metric"], s["value"], s["status"], s["reason"]) for s in document["scores"]] == [
        (s.metric, s.value, s.status, s.reason) for s in stored
    ]
    (result,) = [r for r in reference.get_results(web.full) if r.case_id == case.case_id]
    assert result.response is not None
    assert document["answer"] == result.response.answer
    assert [c["id"] for c in document["retrieved"]] == [c.id for c in result.response.retrieved]
    assert any(c["gold"] for c in document["retrieved"])


def test_compare_api_deltas_and_flips(
    client: TestClient, web: WebStore, reference: RunStore
) -> None:
    document = client.get("/api/compare", params={"runs": f"{web.full},{web.small}"}).json()
    base, cand = reference.get_run(web.full), reference.get_run(web.small)
    assert base.scorecard is not None and cand.scorecard is not None
    (comparison,) = document["comparisons"]
    assert (comparison["baseline"], comparison["candidate"]) == (web.full, web.small)
    for row in comparison["rows"]:
        b, c = base.scorecard.get(row["metric"]), cand.scorecard.get(row["metric"])
        assert b is not None and c is not None
        assert (row["baseline"], row["candidate"]) == (b.value, c.value)
    from ragmeter.scoring.compare import RunScores, compare_runs

    expected = compare_runs(
        RunScores.from_store(reference, web.full), RunScores.from_store(reference, web.small)
    )
    assert [r["p_value"] for r in comparison["rows"]] == [r.p_value for r in expected.rows]
    assert [r["pass_to_fail"] for r in comparison["rows"]] == [
        r.pass_to_fail for r in expected.rows
    ]
    assert {p["run_id"] for p in document["pareto"]["points"]} == {web.full, web.small}
    repeated = client.get("/api/compare", params=[("run", web.full), ("run", web.small)])
    assert repeated.json()["comparisons"][0]["candidate"] == web.small
    page = client.get("/compare", params={"runs": f"{web.full},{web.small}"})
    assert page.status_code == 200 and "<svg" in page.text and "Pareto" in page.text


def test_unknown_runs_and_cases_are_404(client: TestClient, web: WebStore) -> None:
    for url in (
        "/api/runs/nope",
        "/runs/nope",
        f"/api/runs/{web.full}/cases/nope",
        f"/runs/{web.full}/cases/nope",
        "/api/runs/nope/progress",
        "/api/compare?runs=nope," + web.full,
        "/no/such/page",
    ):
        reply = client.get(url)
        assert reply.status_code == 404, url
        if url.startswith("/api/"):
            assert "nope" in reply.json()["error"]
        else:
            assert reply.headers["content-type"].startswith("text/html")
    assert client.get("/api/compare?runs=" + web.full).status_code == 400
    assert client.post("/api/runs").status_code == 405


def test_security_headers_and_escaping(client: TestClient, web: WebStore) -> None:
    for url in ("/", f"/runs/{web.hostile}", "/api/runs", "/static/app.js"):
        headers = client.get(url).headers
        assert "default-src 'self'" in headers["content-security-policy"]
        assert "unsafe-inline" not in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
    case_url = f"/runs/{web.hostile}/cases/evil-%3Ci%3E1%3C%2Fi%3E"
    page = client.get(case_url)
    assert page.status_code == 200
    for html in (page.text, client.get("/").text, client.get(f"/runs/{web.hostile}").text):
        assert PWN_SCRIPT not in html and PWN_IMG not in html
        assert "<i>1</i>" not in html
        assert 'href="javascript' not in html.lower()
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page.text
    api = client.get(case_url.replace("/runs/", "/api/runs/", 1)).json()
    assert api["case"]["case_id"] == HOSTILE_CASE
    assert PWN_SCRIPT in api["answer"]  # the API returns the stored text as JSON data
    leaks = [h for h in api["highlights"] if h["kind"] == "leak"]
    assert any(api["answer"][h["start"] : h["end"]] == "bob@example.com" for h in leaks)
    assert '<mark class="leak"' in page.text


def test_browsing_leaves_the_store_unchanged(client: TestClient, web: WebStore) -> None:
    before = fingerprint(web.path)
    urls = [
        "/",
        "/api/runs?q=demo",
        f"/runs/{web.full}",
        f"/api/runs/{web.full}?failing=any",
        f"/runs/{web.full}/cases/demo-001",
        f"/api/runs/{web.full}/progress",
        f"/compare?runs={web.full},{web.small}",
    ]
    for url in urls:
        assert client.get(url).status_code == 200, url
    assert fingerprint(web.path) == before

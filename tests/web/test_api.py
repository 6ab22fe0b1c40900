"""``ragmeter serve``'s JSON APIs and pages through Starlette's TestClient, over a store built by
the real CLI (``ragmeter eval``: the demo twice, and a replayed hostile case): the numbers equal
the store's, unknown runs and cases are 404s, paging and filters work, the HTML escapes every
stored string, and browsing leaves the store file untouched."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient

from ragmeter.store.sqlite import RunStore
from ragmeter.web.app import create_app
from ragmeter.web.db import ReadOnlyStore
from tests.reports.support import NO_EMBEDDINGS

PWN_SCRIPT = "<script>window.__pwned=1</script>"
PWN_IMG = '<img src=x onerror="window.__pwned=1">'
PWN_LINK = "javascript:alert(1)"
RICH = "[bold red]rich[/bold red] [link=javascript:alert(1)]click[/link]"
ANSI = "\x1b[31mred\x1b[0m"
HOSTILE = f"{PWN_SCRIPT} {PWN_IMG} {PWN_LINK} {RICH} {ANSI}"
HOSTILE_CASE = "evil-<i>1</i>"
HOSTILE_NAME = '<img src=x onerror="window.__pwned=1">run \u202eevil\x1b[31m'
HOSTILE_CATEGORY = "<b>cat</b>\u202e\x1b[31m"
FAKE_KEY = "sk-" + "proj-" + "aB3dE5fG7h" * 3  # built, so no key-like literal is in the source
SECRET_CASE = "leaky"
ODD_IDS = (".", "..", "a/b", "a?b#c", "50%", "with space")


@dataclass
class WebStore:
    path: Path
    full: str  # the demo, every default family
    small: str  # the demo with --top-k 2, every default family but the embedding ones
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
    replayed case (its question, answer, chunk and citation full of markup). The demo's
    comparison pairs the metrics both runs measured: the second run leaves out grounding and
    semantic (no test reads them from it; the first run, whose scorecard and default targets
    the tests read whole, keeps every family)."""
    store = folder / "runs.db"
    full = _eval(folder, store, "--name", "demo full")
    small = _eval(folder, store, "--name", "demo top2", "--top-k", "2", "--metrics", NO_EMBEDDINGS)
    dataset, replay = folder / "hostile.jsonl", folder / "hostile-replay.jsonl"
    cases = [
        {
            "id": HOSTILE_CASE,
            "question": f"What is {HOSTILE}?",
            "reference_answer": f"Reference {HOSTILE}",
            "category": HOSTILE_CATEGORY,
            "gold_passages": [{"chunk_id": "chunk-1"}],
        },
        {
            "id": SECRET_CASE,
            "question": f"Which key? {FAKE_KEY}",
            "reference_answer": f"the key {FAKE_KEY}",
            "category": "secrets",
            "gold_passages": [{"chunk_id": "chunk-1"}],
        },
        *({"id": odd, "question": f"odd id {odd}?", "category": "odd"} for odd in ODD_IDS),
    ]
    dataset.write_text("".join(json.dumps(case) + "\n" for case in cases))
    chunk = {"id": "chunk-1", "doc_id": PWN_LINK, "text": f"Chunk {HOSTILE}"}
    response = {
        "answer": f"Answer {HOSTILE} contact bob@example.com",
        "retrieved": [chunk],
        "citations": [{"chunk_id": PWN_LINK, "quote": PWN_SCRIPT}],
    }
    leaky = {
        "answer": f"The key is {FAKE_KEY}, contact bob@example.com",
        "retrieved": [{"id": "chunk-1", "text": f"key {FAKE_KEY}"}],
        "citations": [{"chunk_id": "chunk-1", "quote": FAKE_KEY}],
    }
    answers = [
        {"case_id": HOSTILE_CASE, "response": response},
        {"case_id": SECRET_CASE, "response": leaky},
        *({"case_id": odd, "response": {"answer": f"answer {odd}"}} for odd in ODD_IDS),
    ]
    replay.write_text("".join(json.dumps(answer) + "\n" for answer in answers))
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
    return TestClient(create_app(web.path), base_url="http://127.0.0.1:8765")


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
    assert [t["metric"] for t in document["goals"]] == [t.metric for t in record.goals]
    assert [t["value"] for t in document["goals"]] == [t.value for t in record.goals]
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
    from ragmeter.scoring.compare import CaseValues, compare_runs

    expected = compare_runs(
        CaseValues.from_store(reference, web.full), CaseValues.from_store(reference, web.small)
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
    leaks = [h for h in api["highlights"] if h["mark"] == "leak"]
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


def test_secrets_are_masked_in_every_page_and_api(client: TestClient, web: WebStore) -> None:
    """A replayed answer, chunk, citation and case holding an API key: masked as the reports
    mask it (``redact_text``) on every page and in every JSON twin."""
    run = f"/runs/{web.hostile}"
    urls = ["/", "/api/runs", run, f"/api{run}", f"{run}/cases/{SECRET_CASE}"]
    urls += [f"/api{run}/cases/{SECRET_CASE}", f"/compare?runs={web.hostile},{web.full}"]
    for url in urls:
        reply = client.get(url)
        # the hostile run shares no case with the demo: refused, as `ragmeter compare` does
        assert reply.status_code == (400 if url.startswith("/compare") else 200), url
        assert FAKE_KEY not in reply.text and FAKE_KEY[:12] not in reply.text, url
    assert "share no case" in client.get(f"/api/compare?runs={web.hostile},{web.full}").text
    api = client.get(f"/api{run}/cases/{SECRET_CASE}").json()
    assert "REDACTED" in api["answer"] and "REDACTED" in api["case"]["question"]
    assert "REDACTED" in api["retrieved"][0]["text"]
    leaks = [h for h in api["highlights"] if h["mark"] == "leak"]  # moved to the masked text
    assert any(api["answer"][h["start"] : h["end"]] == "bob@example.com" for h in leaks)


def test_host_header_is_checked(client: TestClient, web: WebStore) -> None:
    from ragmeter.web.app import allowed_hosts

    assert client.get("/", headers={"host": "attacker.example"}).status_code == 400
    assert client.get("/api/runs", headers={"host": "attacker.example:8765"}).status_code == 400
    for host in ("127.0.0.1:8765", "localhost:8765", "[::1]:8765", "localhost"):
        assert client.get("/", headers={"host": host}).status_code == 200, host
    named = TestClient(create_app(web.path, host="ui.lan"), base_url="http://ui.lan:8765")
    assert named.get("/").status_code == 200
    assert named.get("/", headers={"host": "attacker.example"}).status_code == 400
    anywhere = TestClient(create_app(web.path, host="0.0.0.0"))
    assert anywhere.get("/", headers={"host": "attacker.example"}).status_code == 200
    assert allowed_hosts("::") == ["*"] and "[fe80::1]" in allowed_hosts("fe80::1")


def test_odd_case_ids_link_to_their_pages(client: TestClient, web: WebStore) -> None:
    from html import unescape
    from urllib.parse import urljoin

    from ragmeter.reports.html.format import esc

    page = client.get(f"/runs/{web.hostile}").text
    base = f"http://127.0.0.1:8765/runs/{web.hostile}"
    for odd in ODD_IDS:
        found = re.search(rf'<tr data-case="{re.escape(esc(odd))}"><td><a href="([^"]+)"', page)
        assert found, odd
        href = unescape(found.group(1))
        assert urljoin(base, href) == "http://127.0.0.1:8765" + href, href  # no dot segment
        for url in (href, "/api" + href):
            reply = client.get(url)
            assert reply.status_code == 200, (odd, url)
        assert client.get("/api" + href).json()["case"]["case_id"] == odd
        assert f"<h1>Case {esc(odd)}</h1>" in client.get(href).text


def test_hostile_run_name_and_category_are_escaped(client: TestClient, web: WebStore) -> None:
    for url in ("/", f"/runs/{web.hostile}", f"/runs/{web.hostile}/cases/{SECRET_CASE}"):
        html = client.get(url).text
        assert PWN_IMG not in html and PWN_SCRIPT not in html
        assert "<b>cat</b>" not in html and "\u202e" not in html and "\x1b" not in html
    listing = client.get("/").text
    assert "&lt;img src=x onerror=&quot;window.__pwned=1&quot;&gt;run" in listing
    run_page = client.get(f"/runs/{web.hostile}").text
    assert "&lt;b&gt;cat&lt;/b&gt;" in run_page


def _compare_rows(reference: RunStore, base: str, cand: str) -> list[Any]:
    from ragmeter.scoring.compare import CaseValues, compare_runs

    found = compare_runs(
        CaseValues.from_store(reference, base), CaseValues.from_store(reference, cand)
    )
    return list(found.rows)


def test_compare_order_corrected_p_and_totals(
    client: TestClient, web: WebStore, reference: RunStore
) -> None:
    from html import unescape

    from ragmeter.reports.html.format import change_interval_text, number, p_text

    # the list's checkboxes send repeated runs, newest first: the oldest is the baseline
    repeated = client.get("/api/compare", params=[("runs", web.small), ("runs", web.full)]).json()
    assert repeated["baseline"] == web.full and repeated["order"] == "created"
    # an explicit ?runs=A,B keeps its order
    given = client.get("/api/compare", params={"runs": f"{web.small},{web.full}"}).json()
    assert given["baseline"] == web.small and given["order"] == "given"
    page = client.get("/compare", params=[("runs", web.small), ("runs", web.full)]).text
    assert re.search(
        rf'id="compare-order">baseline <strong>demo full</strong> \({web.full}\)', page
    )
    assert f'href="/compare?runs={web.small}%2C{web.full}" data-role="swap">swap</a>' in page
    expected = _compare_rows(reference, web.full, web.small)
    (comparison,) = repeated["comparisons"]
    assert comparison["correction"] == "holm" and "p holm" in page and "Holm correction" in page
    for got, want in zip(comparison["rows"], expected, strict=True):
        assert got["metric"] == want.metric
        assert (got["p_value"], got["p_adjusted"], got["mde"]) == (
            want.p_value, want.p_adjusted, want.mde,
        )  # fmt: skip
        assert (got["ci_low"], got["ci_high"]) == (want.ci_low, want.ci_high)
    everything = client.get("/compare", params={"runs": f"{web.full},{web.small}", "show": "all"})
    for want in expected:
        row = re.search(rf'<tr data-metric="{re.escape(want.metric)}">(.*?)</tr>', everything.text)
        assert row, want.metric
        cells = {
            role: unescape(text)
            for role, text in re.findall(r'data-role="([a-z-]+)">([^<]*)</td>', row.group(1))
        }
        assert cells["p"] == p_text(want.p_value)
        assert cells["p-adjusted"] == p_text(want.p_adjusted)
        assert cells["mde"] == number(want.mde)
        assert cells["ci"] == change_interval_text(want)
    total = next(r for r in expected if r.total_diff is not None and r.ci_high)
    row = re.search(rf'<tr data-metric="{total.metric}">(.*?)</tr>', everything.text)
    assert row is not None
    cells = dict(re.findall(r'data-role="([a-z-]+)">([^<]*)</td>', row.group(1)))
    assert cells["paired"] == f"{total.total_diff:+.0f}"  # the total's change, as the console
    assert total.ci_high is not None and cells["ci"].endswith(f"{total.ci_high * 87:+.0f}")


def test_non_finite_stored_values_do_not_break_the_ui(
    web: WebStore, tmp_path_factory: pytest.TempPathFactory
) -> None:
    import sqlite3

    copy = tmp_path_factory.mktemp("inf") / "runs.db"
    shutil.copyfile(web.path, copy)
    with sqlite3.connect(copy) as db:
        db.execute(
            "UPDATE scores SET value = ? WHERE run_id = ? AND case_id = 'demo-001'"
            " AND metric = 'token_f1'",
            (float("inf"), web.full),
        )
    odd = TestClient(create_app(copy), base_url="http://127.0.0.1:8765")
    for url in (
        f"/runs/{web.full}",
        f"/api/runs/{web.full}",
        f"/runs/{web.full}/cases/demo-001",
        f"/api/compare?runs={web.full},{web.small}",
        f"/compare?runs={web.full},{web.small}",
    ):
        assert odd.get(url).status_code == 200, url
    scores = odd.get(f"/api/runs/{web.full}/cases/demo-001").json()["scores"]
    (f1,) = [s for s in scores if s["metric"] == "token_f1"]
    assert f1["value"] is None and f1["status"] == "failed" and "non-finite" in f1["reason"]

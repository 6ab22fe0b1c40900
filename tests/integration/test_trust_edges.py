"""Fault injection through the real CLI: a scripted HTTP target and judge send every bad reply
of the trust-at-the-edges issue; each mode must end as a typed, stored, readable outcome with no
live escape sequence and no secret anywhere (store, run file, exports, console)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from edge_server import EdgeServer  # noqa: E402

pytestmark = pytest.mark.integration

SECRETS = (
    "s3cretpass",
    "literaltoken123",
    "envsecret999",
    "judgepass",
    "sk-live-SECRETSECRET123",
    "hunter2hunter2",
    # base64 of alice:s3cretpass, as an echoing server would show the Authorization header
    "YWxpY2U6czNjcmV0cGFzcw",
)

# case id -> (question, status, error type)
MODES: dict[str, tuple[str, str, str | None]] = {
    "ok-1": ("What does the handbook say about leave?", "ok", None),
    "nan": ("NAN latency?", "error", "invalid_response"),
    "nan-string": ("NANSTR latency?", "error", "invalid_response"),
    "infinity": ("INFINITY confidence?", "error", "invalid_response"),
    "negative-latency": ("NEGLAT latency?", "error", "invalid_response"),
    "negative-cost": ("NEGCOST cost?", "error", "invalid_response"),
    "nan-guardrail": ("NANGUARD guardrail?", "error", "invalid_response"),
    "escapes": ("ESCAPES in the error body?", "error", "http_5xx"),
    "redirect": ("REDIRECT me?", "error", "http_3xx"),
    "huge": ("HUGE answer?", "error", "invalid_response"),
    "retry-after-nan": ("RETRYNAN then fine?", "ok", None),
    "answer-only": ("ANSWERONLY please?", "ok", None),
    "string-citations": ("STRCITES please?", "ok", None),
    "echo-auth": ("ECHOAUTH please?", "error", "http_4xx"),
    "wrong-key": ("WRONGKEY please?", "error", "invalid_response"),
    "surrogate": ("SURROGATE in the answer?", "ok", None),
}


def write_cases(path: Path, modes: dict[str, tuple[str, str, str | None]]) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for case_id, (question, _, _) in modes.items():
            case = {
                "case_id": case_id,
                "question": question,
                "reference_answer": "It is in the handbook.",
                "gold_passages": [{"doc_id": "handbook"}],
                "expected_citations": ["handbook#1"],
            }
            handle.write(json.dumps(case) + "\n")
    return path


def cli(
    *args: str, cwd: Path, timeout: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "160", **(env or {})},
    )


def all_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def assert_inert(text: str) -> None:
    for control in ("\x1b", "\x07", "\x9b", "\x9d"):
        assert control not in text, f"raw control {control!r} in output"
    assert "Click to fix your API key" not in text or "[/link]" in text  # markup shown, not run


def assert_no_secret(blob: bytes | str, where: str) -> None:
    data = blob.encode() if isinstance(blob, str) else blob
    for secret in SECRETS:
        assert secret.encode() not in data, f"{secret!r} found in {where}"


@pytest.fixture
def server() -> Iterator[EdgeServer]:
    with EdgeServer() as running:
        yield running


def credentialed(url: str, user: str, password: str) -> str:
    return url.replace("http://", f"http://{user}:{password}@")


def test_every_bad_reply_is_a_typed_stored_readable_case(
    server: EdgeServer, tmp_path: Path
) -> None:
    dataset = write_cases(tmp_path / "cases.jsonl", MODES)
    store, out = tmp_path / "runs.db", tmp_path / "runs"
    common = ["--store", str(store)]
    target = credentialed(server.url, "alice", "s3cretpass")
    run = cli(
        "eval",
        "-d",
        str(dataset),
        "--target",
        target,
        "--header",
        "X-Token-Auth: literaltoken123",
        "--header",
        "Ocp-Apim-Subscription-Key: ${EDGE_KEY}",
        "--metrics",
        "retrieval,lexical,citation,performance",
        "--timeout",
        "5",
        "--output-dir",
        str(out),
        "--no-progress",
        *common,
        cwd=tmp_path,
        env={"EDGE_KEY": "envsecret999"},
    )
    outputs = [run.stdout + run.stderr]
    assert run.returncode == 0, run.stderr + run.stdout
    # the credentials were sent, only never kept
    sent = [h for h in server.seen_headers if h.get("X-Token-Auth")]
    assert sent and sent[0]["Ocp-Apim-Subscription-Key"] == "envsecret999"
    assert any(h.get("Authorization", "").startswith("Basic ") for h in server.seen_headers)

    with sqlite3.connect(store) as db:
        ((run_id, status, errors, questions),) = db.execute(
            "SELECT id, status, error_count, question_count FROM runs"
        ).fetchall()
        rows = db.execute(
            "SELECT case_id, status, error_type, error_message FROM responses"
        ).fetchall()
        skipped = dict(
            db.execute(
                "SELECT case_id, reason FROM scores WHERE metric='recall_at_5' AND status='skipped'"
            ).fetchall()
        )
        citation = dict(
            db.execute(
                "SELECT case_id, value FROM scores WHERE metric='citation_recall' AND status='ok'"
            ).fetchall()
        )
    assert status == "completed" and questions == len(MODES)
    assert len(rows) == len(MODES) == len({r[0] for r in rows})  # each case exactly once
    stored = {case_id: (state, kind) for case_id, state, kind, _ in rows}
    assert stored == {case_id: (state, kind) for case_id, (_, state, kind) in MODES.items()}
    assert errors == sum(state == "error" for _, state, _ in MODES.values())
    messages = {case_id: message for case_id, _, _, message in rows}
    assert "latency_ms" in messages["nan"] and "latency_ms" in messages["negative-latency"]
    assert "cost_usd" in messages["negative-cost"]
    assert "guardrail_scores" in messages["nan-guardrail"]
    wrong_key = messages["wrong-key"]  # the reply's shape and the mapping to write
    assert "fits none of the response formats" in wrong_key and "sources" in wrong_key
    assert "--response-map answer=response" in wrong_key
    # an answer-only reply: retrieval skipped with its reason, through the store
    assert skipped == {"answer-only": "target did not report retrieved chunks"}
    assert citation["string-citations"] == 1.0

    for args in (
        ["show", run_id],
        ["show", run_id, "--cases"],
        ["show", run_id, "--details"],
        ["show", run_id, "--json"],
        ["show", run_id, "--details", "--json"],
        ["stats", run_id],
        ["runs"],
        ["export", run_id, "-o", str(tmp_path / "export.jsonl")],
        ["export", run_id, "--format", "json", "-o", str(tmp_path / "export.json")],
        ["export", run_id, "--format", "trec-run", "-o", str(tmp_path / "export.run")],
    ):
        shown = cli(*args, *common, cwd=tmp_path)
        assert shown.returncode == 0, (args, shown.stderr)
        assert "Traceback" not in shown.stderr
        if "--json" not in args:
            assert_inert(shown.stdout + shown.stderr)
        outputs.append(shown.stdout + shown.stderr)
    details = outputs[3]
    assert "ESCAPES in the error body?" in details and "upstream failed" in details
    as_data = {case["case_id"]: case for case in json.loads(outputs[5])}
    assert set(as_data) == set(MODES)
    assert as_data["answer-only"]["scores"]["recall_at_5"] == {
        "status": "skipped",
        "value": None,
        "low": False,
        "reason": "target did not report retrieved chunks",
        "details": {},
    }

    # lone surrogates (JSON escapes) are replaced and counted; the case is stored and scored
    surrogate = as_data["surrogate"]
    assert surrogate["answer"] == "27 days \ufffd of leave" and surrogate["text_repairs"] == 2
    assert surrogate["scores"]["recall_at_5"]["status"] == "ok"
    assert "2 lone surrogate(s) in the reply's text replaced by U+FFFD" in details

    resumed = cli("eval", "--resume", run_id, *common, cwd=tmp_path)
    assert resumed.returncode == 2 and "already completed" in resumed.stderr
    assert_no_secret(all_bytes(tmp_path), "the store, run file or exports")
    for output in outputs:
        assert_no_secret(output, "the console")


def test_mistakes_are_caught_before_the_first_question(server: EdgeServer, tmp_path: Path) -> None:
    dataset = write_cases(tmp_path / "cases.jsonl", {"ok-1": MODES["ok-1"]})
    store = tmp_path / "runs.db"
    base = ["eval", "-d", str(dataset), "--store", str(store), "--no-progress"]
    base += ["--output-dir", str(tmp_path / "runs")]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    no_key = {"OPENAI_API_KEY": ""}
    duplicated = tmp_path / "targets.yaml"
    duplicated.write_text("recall_at_5: '> 0.5'\nrecall_at_5: '> 0.9'\n", encoding="utf-8")
    cases: list[tuple[list[str], str, dict[str, str]]] = [
        (["--target", server.url, "--metrics", "nope"], "nope", {}),
        (["--target", server.url, "--judge", "foo"], "--judge", {}),
        (["--target", server.url, "--judge", "openai:gpt-4o-mini"], "OPENAI_API_KEY", no_key),
        (["--target", server.url, "--judge", "http://127.0.0.1:9/v1#m"], "not reachable", {}),
        (["--target", server.url, "--spot-check", "3"], "--judge", {}),
        (["--target", server.url, "--output-dir", str(dataset)], "is a file", {}),
        (["--target", server.url, "--concurrency", "0"], "invalid option --concurrency", {}),
        ([], "--target", {}),  # the user's own dataset would go to the demo corpus
        (["--target", server.url, "--targets", str(duplicated)], "duplicate key", {}),
        (["--target", "replay:missing.jsonl"], "missing.jsonl does not exist", {}),
    ]
    for extra, message, env in cases:
        proc = cli(*base, *extra, cwd=tmp_path, env=env)
        assert proc.returncode == 2, (extra, proc.stdout, proc.stderr)
        assert message in proc.stderr, (extra, proc.stderr)
        assert "Traceback" not in proc.stderr and "[red]" not in proc.stderr
    text_file = tmp_path / "notes.txt"
    text_file.write_text("not a database\n", encoding="utf-8")
    for command in (
        ["eval", "-d", str(dataset), "--target", server.url, "--store", str(text_file)],
        ["eval", "-d", str(dataset), "--target", server.url, "--store", str(tmp_path)],
        ["runs", "--store", str(text_file)],
        ["show", "abc", "--store", str(tmp_path / "missing.db")],
    ):
        proc = cli(*command, cwd=tmp_path)
        assert proc.returncode == 2, (command, proc.stderr)
        assert "--store" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "missing.db").exists()
    proc = cli(
        "eval", "-d", str(empty), "--target", server.url, "--store", str(store), cwd=tmp_path
    )
    assert proc.returncode == 2 and "no cases" in proc.stderr, proc.stderr
    assert server.queries() == 0  # nothing was asked
    if store.exists():
        with sqlite3.connect(store) as db:
            assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0


def test_gate_fails_when_every_case_failed(server: EdgeServer, tmp_path: Path) -> None:
    modes = {f"nan-{i}": ("NAN again?", "error", "invalid_response") for i in range(4)}
    dataset = write_cases(tmp_path / "cases.jsonl", modes)
    proc = cli(
        "eval",
        "-d",
        str(dataset),
        "--target",
        server.url,
        "--store",
        str(tmp_path / "runs.db"),
        "--output-dir",
        str(tmp_path / "runs"),
        "--no-progress",
        "--gate",
        cwd=tmp_path,
    )
    # every case failed: exit 3 (issue 29), after the gate's lines
    assert proc.returncode == 3, proc.stderr
    assert "not measured" in proc.stderr and "recall_at_5" in proc.stderr
    assert "errors: 4 of 4" in proc.stderr.replace("run errors", "errors")
    assert "every case failed (4 of 4), nothing was measured: invalid_response 4" in " ".join(
        proc.stderr.split()
    )


def test_health_check_can_be_skipped(tmp_path: Path) -> None:
    dataset = write_cases(tmp_path / "cases.jsonl", {"ok-1": MODES["ok-1"]})
    common = ["--store", str(tmp_path / "runs.db"), "--output-dir", str(tmp_path / "runs")]
    with EdgeServer(health=False) as server:
        down = cli("eval", "-d", str(dataset), "--target", server.url, *common, cwd=tmp_path)
        assert down.returncode == 3 and "--no-health-check" in down.stderr, down.stderr
        assert server.queries() == 0
        ok = cli(
            "eval",
            "-d",
            str(dataset),
            "--target",
            server.url,
            "--no-health-check",
            "--no-progress",
            *common,
            cwd=tmp_path,
        )
        assert ok.returncode == 0, ok.stderr
        assert server.queries() == 1


@pytest.fixture
def hung_judge_server() -> Iterator[EdgeServer]:
    """Its judge never answers a chat completion (300 s, until it stops)."""
    with EdgeServer(judge_hang_s=300.0) as running:
        yield running


def test_hung_judge_fails_its_scores_not_the_run(
    hung_judge_server: EdgeServer, tmp_path: Path
) -> None:
    server = hung_judge_server
    dataset = write_cases(
        tmp_path / "cases.jsonl", {"ok-1": MODES["ok-1"], "ok-2": ("And travel?", "ok", None)}
    )
    store = tmp_path / "runs.db"
    judge = credentialed(server.url, "bob", "judgepass") + "/v1#judge-model"
    # the judge timeout also bounds the pre-flight probe of the server, which counts the
    # client's start too (seconds on a loaded machine): 5 s, the probe's own longest wait
    proc = cli(
        "eval",
        "-d",
        str(dataset),
        "--target",
        server.url,
        "--metrics",
        "lexical,judged",
        "--judge",
        judge,
        "--judge-timeout",
        "5",
        "--judge-retries",
        "0",
        "--store",
        str(store),
        "--output-dir",
        str(tmp_path / "runs"),
        "--no-progress",
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert server.judge_requests >= 1
    with sqlite3.connect(store) as db:
        statuses = db.execute(
            "SELECT status, reason FROM scores WHERE metric='faithfulness'"
        ).fetchall()
        token_f1 = db.execute("SELECT status FROM scores WHERE metric='token_f1'").fetchall()
    assert len(statuses) == 2 and all(status == "failed" for status, _ in statuses)
    assert all("timeout" in (reason or "").lower() for _, reason in statuses), statuses
    assert token_f1 == [("ok",), ("ok",)]
    assert_no_secret(all_bytes(tmp_path), "the store or run file")
    assert_no_secret(proc.stdout + proc.stderr, "the console")


PLAIN_TARGET = textwrap.dedent(
    """
    import helper_module

    def answer(question):
        return helper_module.PREFIX + question

    def broken(question):
        return {"answer": "x", "latency_ms": {"generate": float("nan")}}
    """
)


def test_python_targets_from_a_file_and_from_its_folder(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "myrag.py").write_text(PLAIN_TARGET, encoding="utf-8")
    (project / "helper_module.py").write_text("PREFIX = 'Answer: '\n", encoding="utf-8")
    dataset = write_cases(
        tmp_path / "cases.jsonl", {"a": MODES["ok-1"], "b": ("And travel?", "ok", None)}
    )
    store = tmp_path / "runs.db"
    common = ["-d", str(dataset), "--store", str(store), "--no-progress"]
    common += ["--metrics", "retrieval,lexical", "--output-dir", str(tmp_path / "runs")]
    from_elsewhere = cli(
        "eval", "--target", str(project / "myrag.py") + ":answer", *common, cwd=tmp_path
    )
    assert from_elsewhere.returncode == 0, from_elsewhere.stderr
    from_folder = cli("eval", "--target", "myrag:answer", *common, cwd=project)
    assert from_folder.returncode == 0, from_folder.stderr
    with sqlite3.connect(store) as db:
        reasons = {
            row[0] for row in db.execute("SELECT reason FROM scores WHERE metric='recall_at_5'")
        }
    assert reasons == {"target did not report retrieved chunks"}  # skipped, never 0

    broken = cli("eval", "--target", "myrag:broken", *common, cwd=project)
    assert broken.returncode == 3  # every case failed (issue 29): stored, exit 3
    with sqlite3.connect(store) as db:
        kinds = db.execute(
            "SELECT DISTINCT r.error_type FROM responses r JOIN runs ON runs.id = r.run_id"
            " WHERE runs.created_at = (SELECT MAX(created_at) FROM runs)"
        ).fetchall()
    assert ("invalid_response",) in kinds

    missing = cli("eval", "--target", "nosuchmodule:answer", *common, cwd=tmp_path)
    assert missing.returncode == 2, missing.stderr
    assert "nosuchmodule" in missing.stderr and "Traceback" not in missing.stderr


def response_count(store: Path) -> int:
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=1) as db:
            return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    except sqlite3.Error:
        return 0


def run_state(store: Path) -> tuple[str, str]:
    with sqlite3.connect(store) as db:
        ((run_id, status),) = db.execute("SELECT id, status FROM runs").fetchall()
    return run_id, status


def scores_of(store: Path, run_id: str) -> dict[tuple[str, str], Any]:
    with sqlite3.connect(store) as db:
        rows = db.execute(
            "SELECT case_id, metric, status, value FROM scores WHERE run_id=?", (run_id,)
        ).fetchall()
    return {(case_id, metric): (status, value) for case_id, metric, status, value in rows}


def test_found_by_trying_it_as_a_user(server: EdgeServer, tmp_path: Path) -> None:
    """Mistakes caught before the first question, a query-string URL, odd ids and paths."""
    dataset = write_cases(tmp_path / "cases.jsonl", {"ok-1": MODES["ok-1"]})
    store = tmp_path / "runs.db"
    base = ["eval", "-d", str(dataset), "--store", str(store), "--no-progress"]
    base += ["--output-dir", str(tmp_path / "runs"), "--target", server.url]
    typo = tmp_path / "typo.yaml"
    typo.write_text("reclal_at_5: '> 0.9 optional'\n", encoding="utf-8")
    judged = tmp_path / "judged.yaml"
    judged.write_text("faithfulness: '> 0.9'\n", encoding="utf-8")
    empty = tmp_path / "empty.yaml"
    empty.write_text("{}\n", encoding="utf-8")
    for extra, message in (
        (["--targets", str(typo)], "did you mean recall_at_5"),
        (["--targets", str(judged)], "'judged' metric family"),
        (["--targets", str(empty), "--gate"], "checks nothing"),
        (["--header", "X-Key: ${RAGMETER_TEST_UNSET_VARIABLE}"], "is not set"),
        (["--baseline", "nosuchrun"], "--baseline"),
        (["--alpha", "2"], "between 0 and 1"),
        (["--margin", "nan"], "finite"),
        (["--timeout", "inf"], "finite number"),
    ):
        proc = cli(*base, *extra, cwd=tmp_path)
        assert proc.returncode == 2, (extra, proc.stderr)
        assert message in proc.stderr, (extra, proc.stderr)
    assert server.queries() == 0

    # a key in the URL's query string goes with every request, after the path
    with_query = cli(*base[:-1], server.url + "/?api_key=querysecret42&x=1", cwd=tmp_path)
    assert with_query.returncode == 0, with_query.stderr
    assert "/query?api_key=querysecret42&x=1" in server.paths
    assert "/health?api_key=querysecret42&x=1" in server.paths
    assert b"querysecret42" not in all_bytes(tmp_path)
    assert "querysecret42" not in with_query.stdout + with_query.stderr

    again = cli(*base, cwd=tmp_path)
    assert again.returncode == 0
    ids = [row[0] for row in sqlite3.connect(store).execute("SELECT id FROM runs")]
    first, second = ids[:2]
    shared = first[: next(i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b)]
    ambiguous = cli("show", shared, "--store", str(store), cwd=tmp_path)
    assert ambiguous.returncode == 2 and "ambiguous" in ambiguous.stderr, ambiguous.stderr
    nested = tmp_path / "new" / "folder" / "export.json"
    export = cli(
        "export", ids[0], "--format", "json", "-o", str(nested), "--store", str(store), cwd=tmp_path
    )
    assert export.returncode == 0 and nested.is_file(), export.stderr
    under_file = cli(
        "export", ids[0], "-o", str(dataset / "x.json"), "--store", str(store), cwd=tmp_path
    )
    assert under_file.returncode == 2 and "Traceback" not in under_file.stderr

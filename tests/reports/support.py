"""Runs built through the real CLI for the report tests (``test_html.py``, ``test_csv_export.py``
and the browser test): a small replayed dataset with a hostile case, in two versions (a
baseline and a candidate that retrieves worse), and the bundled demo. No tests here."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from ragmeter import EvalConfig

# every default family but grounding and semantic, the two that embed with MiniLM (most of the
# CPU of a demo eval): for the runs whose embedding scores no test reads
NO_EMBEDDINGS = ",".join(f for f in EvalConfig().metrics if f not in ("grounding", "semantic"))

HOSTILE = (
    '<script>window.__pwned=1</script> <img src=x onerror="window.__pwned=1"> '
    '[bold red]x[/] \x1b[31mred\x1b[0m <a href="javascript:alert(1)">click</a> '
    "javascript:alert(1) </script><script>alert(2)</script>"
)
HOSTILE_ID = '=HYPERLINK("http://evil")'
HOSTILE_CATEGORY = "<b>cat</b>\u202e\x1b[31m"  # markup, a bidi override, an ANSI escape
HOSTILE_NAME = 'cand <img src=x onerror="window.__pwned=1"> \u202eevil'  # the candidate run
CHUNKS = {
    "a": {"id": "kb-1#a", "doc_id": "kb-1", "text": "Refunds take five business days."},
    "b": {"id": "kb-2#b", "doc_id": "kb-2", "text": "Offices close at 18:00 on Fridays."},
    "h": {"id": "kb-3#h", "doc_id": "kb-3", "text": "Hostile chunk: " + HOSTILE},
}
CASES = [
    ("refund", "How long do refunds take?", "Five business days.", "a", "policy"),
    ("friday", "When do offices close on Friday?", "At 18:00.", "b", "facilities"),
    ("refund-2", "How many days for a refund?", "Five business days.", "a", "policy"),
    ("friday-2", "Closing time on Fridays?", "At 18:00.", "b", HOSTILE_CATEGORY),
    (HOSTILE_ID, "Hostile: " + HOSTILE, "Nothing to see.", "h", "+cmd"),
]


def ragmeter(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
    )


def _responses(worse: bool) -> list[dict[str, object]]:
    lines = []
    for index, (case_id, _question, reference, chunk, _category) in enumerate(CASES):
        gold = CHUNKS[chunk]
        other = CHUNKS["b" if chunk == "a" else "a"]
        retrieved = [other, gold] if worse and index < 2 else [gold, other]
        answer = reference if not (worse and index < 2) else "I am not sure."
        if chunk == "h":
            answer = "Answer: " + HOSTILE
        lines.append(
            {
                "case_id": case_id,
                "response": {
                    "answer": f"{answer} [{gold['id']}]",
                    "retrieved": retrieved,
                    "citations": [gold["id"]],
                    "latency_ms": {"total": 10.0 + 7 * index + (5 if worse else 0)},
                },
            }
        )
    return lines


def build_replay_runs(folder: Path) -> tuple[Path, str, str]:
    """The store and the ids of the baseline and the candidate run."""
    dataset = folder / "cases.jsonl"
    dataset.write_text(
        "".join(
            json.dumps(
                {
                    "id": case_id,
                    "question": question,
                    "reference_answer": reference,
                    "category": category,
                    "gold_passages": [{"chunk_id": CHUNKS[chunk]["id"]}],
                }
            )
            + "\n"
            for case_id, question, reference, chunk, category in CASES
        ),
        encoding="utf-8",
    )
    store = folder / "runs.db"
    ids = []
    for name, worse in (("base", False), (HOSTILE_NAME, True)):
        replay = folder / f"{'cand' if worse else 'base'}.jsonl"
        replay.write_text("".join(json.dumps(line) + "\n" for line in _responses(worse)))
        done = ragmeter(
            folder,
            "eval",
            "--dataset",
            str(dataset),
            "--target",
            f"replay:{replay}",
            "--name",
            name,
            "--store",
            str(store),
            "--output-dir",
            str(folder / "out"),
            "--no-progress",
        )
        assert done.returncode == 0, done.stderr
        ids.append(run_id(done.stdout))
    return store, ids[0], ids[1]


def run_id(stdout: str) -> str:
    """The id of the run ``ragmeter eval`` printed last."""
    found = re.findall(r"^run ([0-9a-f]{12}) ·", stdout, re.M)
    assert found, stdout
    return found[-1]


def build_demo_runs(folder: Path, *candidate: str) -> tuple[Path, str, str]:
    """The bundled demo, and the demo again retrieving 2 chunks instead of 5 (with the
    ``candidate`` options added, e.g. ``"--metrics", NO_EMBEDDINGS``)."""
    store = folder / "demo.db"
    ids = []
    for extra in ((), ("--top-k", "2", "--name", "demo-top-k-2", *candidate)):
        done = ragmeter(
            folder, "eval", "--store", str(store), "--output-dir", str(folder / "out"),
            "--no-progress", *extra,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        ids.append(run_id(done.stdout))
    return store, ids[0], ids[1]


def data_blob(html: str) -> dict[str, object]:
    """The report's embedded JSON."""
    found = re.search(r'<script type="application/json" id="rm-data">(.*?)</script>', html, re.S)
    assert found
    loaded: dict[str, object] = json.loads(found.group(1))
    return loaded

"""Scale benchmark: N recorded cases scored through the replay target, peak memory and speed.

The cases and responses are the bundled demo's 87 cases and the reference pipeline's answers
to them, repeated until there are N: each copy gets its own case id, and its question and
answer a word of their own (``copy 12345``), so no per-text cache sees the same answer twice.
Each N runs ``ragmeter eval --target replay:FILE`` with the default metric families but
``semantic``, and lexical grounding (no embedder, no judge), in a fresh process. A run of 500
cases or more is scored by a second process while it is asked (docs/runs.md, "Scoring while
asking"), so the memory printed is the peak of the **sum** of the resident memory (RSS) of the
eval process and every process under it, sampled every 0.1 s from /proc (Linux), next to the
largest single process's peak (``getrusage``; the sum includes the small wrapper process that
reads it); then wall time and cases/s, and the store's
size.

    python bench/scale.py [--cases 50000 1000000] [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

DEMO_CASES = Path(__file__).resolve().parents[1] / "src" / "ragmeter" / "demo" / "cases.jsonl"


def record_demo(folder: Path) -> list[dict[str, Any]]:
    """The reference pipeline's responses to the demo cases, as replay lines."""
    store, responses = folder / "demo.db", folder / "demo-responses.jsonl"
    run = [sys.executable, "-m", "ragmeter", "eval", "--store", str(store), "--no-progress"]
    subprocess.run(
        [*run, "--output-dir", str(folder / "demo-runs")], check=True, stdout=subprocess.DEVNULL
    )
    with sqlite3.connect(store) as db:
        (run_id,) = db.execute("SELECT id FROM runs").fetchone()
    export = [sys.executable, "-m", "ragmeter", "export", run_id, "--store", str(store)]
    subprocess.run(
        [*export, "--format", "responses", "-o", str(responses)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return [json.loads(line) for line in responses.read_text(encoding="utf-8").splitlines()]


def write_copies(folder: Path, n: int, recorded: list[dict[str, Any]]) -> tuple[Path, Path]:
    """A dataset of n cases and its replay file, copies of the demo's."""
    cases = [json.loads(line) for line in DEMO_CASES.read_text(encoding="utf-8").splitlines()]
    answers = {line["case_id"]: line for line in recorded}
    dataset, replay = folder / f"cases-{n}.jsonl", folder / f"responses-{n}.jsonl"
    with (
        dataset.open("w", encoding="utf-8") as out_cases,
        replay.open("w", encoding="utf-8") as out,
    ):
        for i in range(n):
            case = dict(cases[i % len(cases)])
            original = case["case_id"]
            copy = f"copy {i}"
            case["case_id"] = f"{original}.{i}"
            case["question"] = f"{case['question']} ({copy})"
            out_cases.write(json.dumps(case) + "\n")
            line = json.loads(json.dumps(answers[original]))
            line["case_id"] = case["case_id"]
            response = line.get("response")
            if isinstance(response, dict) and isinstance(response.get("answer"), str):
                response["answer"] = f"{response['answer']} ({copy})"
            out.write(json.dumps(line) + "\n")
    return dataset, replay


# runs argv[1:] and prints its peak RSS (KB, Linux) as the last line
_PEAK_OF_CHILD = (
    "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(done.returncode)"
)
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def tree_rss_bytes(root: int) -> int:
    """The resident memory of ``root`` and every process under it, from /proc (0 elsewhere)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        with contextlib.suppress(OSError, IndexError, ValueError):  # it may have just ended
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
        stack.extend(children.get(pid, []))
    return total


def run_sampling(command: list[str]) -> tuple[subprocess.CompletedProcess[str], int]:
    """``command`` run to its end, and the peak of its process tree's summed RSS (bytes)."""
    peak = 0
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        stopped = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not stopped.wait(0.1):
                peak = max(peak, tree_rss_bytes(process.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        stdout, stderr = process.communicate()
        stopped.set()
        sampler.join()
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr), peak


def write_config(folder: Path) -> Path:
    """The default metric families but ``semantic``, and lexical grounding: no embedder."""
    from ragmeter.config import EvalConfig

    families = [name for name in EvalConfig().metrics if name != "semantic"]
    path = folder / "no-embedder.yaml"
    path.write_text(
        f"metrics: [{', '.join(families)}]\ngrounding_model: lexical\n", encoding="utf-8"
    )
    return path


def measure(folder: Path, n: int, dataset: Path, replay: Path) -> dict[str, Any]:
    store = folder / f"runs-{n}.db"
    command = [
        sys.executable,
        "-c",
        _PEAK_OF_CHILD,
        sys.executable,
        "-m",
        "ragmeter",
        "eval",
        "--config",
        str(write_config(folder)),
        "--dataset",
        str(dataset),
        "--target",
        f"replay:{replay}",
        "--store",
        str(store),
        "--output-dir",
        str(folder / f"runs-{n}"),
        "--no-progress",
    ]
    started = time.perf_counter()
    finished, tree_peak = run_sampling(command)
    wall = time.perf_counter() - started
    if finished.returncode != 0:
        raise SystemExit(
            f"ragmeter eval failed on {n} cases:\n{finished.stdout}\n{finished.stderr}"
        )
    peak_kb = finished.stdout.strip().splitlines()[-1]
    size = sum(p.stat().st_size for p in folder.glob(f"runs-{n}.db*"))
    return {
        "cases": n,
        "peak_rss_mb": round(tree_peak / 2**20, 1),  # the eval and its scoring process
        "largest_process_peak_rss_mb": round(int(peak_kb) / 1024, 1),
        "seconds": round(wall, 1),
        "cases_per_s": round(n / wall, 1),
        "store_mb": round(size / 2**20, 1),
        "summary": finished.stdout.strip().splitlines()[-4:-1],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[50_000, 1_000_000])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ragmeter-scale-", dir=args.workdir))
    try:
        recorded = record_demo(folder)
        for n in args.cases:
            dataset, replay = write_copies(folder, n, recorded)
            result = measure(folder, n, dataset, replay)
            print(json.dumps(result), flush=True)
            for path in folder.glob(f"runs-{n}*"):
                if path.is_dir():
                    shutil.rmtree(path)
                elif not args.keep:
                    path.unlink()
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

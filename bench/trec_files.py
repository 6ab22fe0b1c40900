"""`ragmeter trec` from TREC files, whole process, against pytrec_eval parsing the same files.

Two seeded shapes: 10,000 queries x 100 documents and 1,000 x 1,000 (five relevant documents
per query with grades 1-3, three of them retrieved, five judged non-relevant), written as TREC
files. Each tool is a new process, timed from start to exit (Python start-up, imports, reading
the files, evaluating, printing):

- `ragmeter trec QRELS RUN -m ndcg_cut.10 -m recall.100 -m recip_rank.10 -m P.5`, through the
  console script (as installed) and through `python -m ragmeter.cli.trec` (the command alone);
- a pytrec_eval script: `parse_qrel`/`parse_run`, one evaluator for nDCG@10, recall@100, P@5,
  and the second call MRR@10 needs (an evaluator on the run cut to its top 10);
- with `--all`, every trec_eval measure: `-m all_trec` against pytrec_eval's `all_trec` set.

Tools alternate round by round (so machine noise spreads over all of them), after one untimed
round (byte-code written, files cached, as on a user's machine); medians of `--repeat`
(default 5). The values printed by both sides are checked to agree to 1e-4 (four
decimals, trec_eval's output).

    python bench/trec_files.py [--repeat 5] [--all]
Needs `pip install pytrec-eval-terrier` (bench only).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MEASURES = ["ndcg_cut.10", "recall.100", "recip_rank.10", "P.5"]
SHAPES = [(10_000, 100), (1_000, 1_000)]

PYTREC_SCRIPT = """
import sys, pytrec_eval
with open(sys.argv[1]) as f: qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f: run = pytrec_eval.parse_run(f)
if sys.argv[3] == "all":
    values = pytrec_eval.RelevanceEvaluator(qrels, {"all_trec"}).evaluate(run)
    names = sorted(next(iter(values.values())))
else:
    measures = {"ndcg_cut.10", "recall.100", "P.5"}
    values = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    order = lambda item: (item[1], item[0])
    top = {q: dict(sorted(d.items(), key=order, reverse=True)[:10]) for q, d in run.items()}
    for q, v in pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top).items():
        values[q]["recip_rank_10"] = v["recip_rank"]
    names = ["ndcg_cut_10", "recall_100", "recip_rank_10", "P_5"]
for name in names:
    print(name, pytrec_eval.compute_aggregated_measure(name, [v[name] for v in values.values()]))
"""


def write_files(folder: Path, n_queries: int, n_docs: int, seed: int = 0) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    pool = 50_000_000
    offsets = rng.integers(0, pool, size=(n_queries, 1))
    docs = (offsets + np.arange(n_docs) * 1_000_003) % pool  # distinct within a query
    scores = -np.sort(-rng.random((n_queries, n_docs)) * 30, axis=1)
    run_lines = []
    qrels_lines = []
    for q in range(n_queries):
        row_docs, row_scores = docs[q].tolist(), scores[q].tolist()
        run_lines.extend(
            f"{q} Q0 D{d} {rank} {s:.6f} bench"
            for rank, (d, s) in enumerate(zip(row_docs, row_scores, strict=True), start=1)
        )
        retrieved = rng.choice(n_docs, 3, replace=False)
        judged = [row_docs[i] for i in retrieved] + (pool + rng.integers(0, pool, 7)).tolist()
        grades = rng.integers(1, 4, 5).tolist() + [0] * 5
        qrels_lines.extend(f"{q} 0 D{d} {g}" for d, g in zip(judged, grades, strict=True))
    qrels, run = folder / "qrels", folder / "run"
    qrels.write_text("\n".join(qrels_lines) + "\n")
    run.write_text("\n".join(run_lines) + "\n")
    return qrels, run


def ragmeter_command() -> list[str]:
    script = shutil.which("ragmeter")
    return [script] if script else [sys.executable, "-m", "ragmeter"]


# as a user's Python runs: byte-code written once, then read (an untimed first round)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=ENV)
    return time.perf_counter() - start, done.stdout


def summary_values(text: str) -> dict[str, float]:
    values = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "all" and parts[0] not in ("runid", "relstring"):
            values[parts[0]] = float(parts[2])
        elif len(parts) == 2:
            values[parts[0]] = float(parts[1])
    return values


def compare(ours: dict[str, float], theirs: dict[str, float]) -> int:
    """Assert the shared values agree (ragmeter prints 4 decimals); return how many."""
    shared = sorted(set(ours) & set(theirs))
    for name in shared:
        tolerance = 0.5 if name.startswith("num_") else 1e-4
        assert abs(ours[name] - theirs[name]) <= tolerance, (name, ours[name], theirs[name])
    return len(shared)


def run_shape(folder: Path, shape: tuple[int, int], args: argparse.Namespace) -> None:
    qrels, run = write_files(folder, *shape)
    script = folder / "pytrec_script.py"
    script.write_text(PYTREC_SCRIPT)
    files = [str(qrels), str(run)]
    sets = [("4 measures", [a for m in MEASURES for a in ("-m", m)], "four")]
    if args.all:
        sets.append(("all_trec", ["-m", "all_trec"], "all"))
    for title, measure_args, kind in sets:
        tools = {
            "ragmeter trec": [*ragmeter_command(), "trec", *files, *measure_args],
            "python -m ragmeter.cli.trec": [
                sys.executable,
                "-m",
                "ragmeter.cli.trec",
                *files,
                *measure_args,
            ],
            "pytrec_eval script": [sys.executable, str(script), *files, kind],
        }
        times: dict[str, list[float]] = {name: [] for name in tools}
        outputs: dict[str, str] = {}
        for command in tools.values():
            timed(command)  # warm-up: byte-code, file cache
        for _ in range(args.repeat):
            for name, command in tools.items():
                seconds, outputs[name] = timed(command)
                times[name].append(seconds)
        theirs = summary_values(outputs["pytrec_eval script"])
        checked = compare(summary_values(outputs["ragmeter trec"]), theirs)
        reference = statistics.median(times["pytrec_eval script"])
        print(f"\n{shape[0]:,} x {shape[1]:,}, {title} ({checked} values agree with pytrec_eval)")
        for name, values in times.items():
            median = statistics.median(values)
            spread = f"{min(values):.2f}-{max(values):.2f}"
            print(f"  {name:32s} {median:6.3f} s  ({spread})  {reference / median:4.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--all", action="store_true", help="also time -m all_trec")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for shape in SHAPES:
            run_shape(Path(tmp), shape, args)
        print("\nx: pytrec_eval's median over the tool's median (higher is faster)")


if __name__ == "__main__":
    main()

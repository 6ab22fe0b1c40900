"""HTML report benchmark: size and render time of ``ragmeter report`` for the bundled demo and a
synthetic 10,000-case run (issue 16: under ~2 MB and ~20 MB).

The demo run is made by ``ragmeter eval`` (offline, ~15 s). The large run is the demo's cases,
responses and scores copied ``--cases`` / 87 times through the store API, each copy with its own
case ids and its own question, answer and chunk text (a copy number appended, so nothing is
shared between copies), 102 metrics a case as in the demo. Times, best of ``--repeat``:

- ``render``: ``render_run_html`` alone, on what the store returned;
- ``store read``: ``get_run``, ``get_cases``, ``get_results`` and ``get_scores``;
- ``ragmeter report`` end to end (a subprocess, Python start-up included), once.

    python bench/html_report_size.py [--cases 10000] [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

from ragmeter.models import CaseResult, Score
from ragmeter.reports.html import render_run_html
from ragmeter.store.sqlite import RunStore


def eval_demo(folder: Path) -> tuple[Path, str]:
    store = folder / "demo.db"
    subprocess.run(
        [sys.executable, "-m", "ragmeter", "eval", "--store", str(store), "--output-dir",
         str(folder / "out"), "--no-progress"],
        check=True, capture_output=True, cwd=folder,
    )  # fmt: skip
    with closing(RunStore(store, create=False)) as run_store:
        return store, run_store.list_runs(1)[0].id


def synthetic(store: Path, run_id: str, n_cases: int, folder: Path) -> tuple[Path, str]:
    """The demo run copied to ``n_cases`` cases, in a store of its own."""
    with closing(RunStore(store, create=False)) as source:
        record = source.get_run(run_id)
        cases, results = source.get_cases(run_id), source.get_results(run_id)
        scores = source.get_scores(run_id)
    big_cases, big_results, big_scores = [], [], []
    copies = -(-n_cases // len(cases))
    for copy in range(copies):
        for case in cases:
            if len(big_cases) == n_cases:
                break
            new_id = f"{case.case_id}-{copy}"
            big_cases.append(
                case.model_copy(update={"case_id": new_id, "question": f"{case.question} #{copy}"})
            )
    kept = {c.case_id.rsplit("-", 1)[0] for c in big_cases}
    result_of = {r.case_id: r for r in results}
    for case in big_cases:
        original, copy = case.case_id.rsplit("-", 1)
        result = result_of[original]
        response = None
        if result.response is not None:
            response = result.response.model_copy(deep=True)
            response.answer = f"{response.answer} (copy {copy})"
            for chunk in response.retrieved:
                chunk.text = f"{chunk.text} (copy {copy})"
        big_results.append(
            CaseResult(**{**result.model_dump(exclude={"response"}), "case_id": case.case_id},
                       response=response)
        )  # fmt: skip
    by_case: dict[str, list[Score]] = {}
    for score in scores:
        if score.case_id in kept:
            by_case.setdefault(score.case_id, []).append(score)
    for case in big_cases:
        original = case.case_id.rsplit("-", 1)[0]
        for s in by_case.get(original, []):
            big_scores.append(Score(case.case_id, s.metric, s.value, s.status, s.reason, s.details))
    path = folder / "big.db"
    new_id = "big" + record.id[3:]
    big = record.model_copy(update={"id": new_id, "question_count": len(big_cases)})
    with closing(RunStore(path)) as target:
        target.create_run(big.model_copy(update={"status": "running"}), big_cases)
        target.save_results(new_id, big_results)
        target.replace_scores(new_id, big_scores)
        assert big.scorecard is not None and big.completed_at is not None
        target.finish_run(new_id, big.scorecard, big.completed_at, big.error_count, big)
    return path, new_id


def measure(store: Path, run_id: str, repeat: int, folder: Path, label: str) -> None:
    reads, renders = [], []
    html = ""
    for _ in range(repeat):
        started = time.perf_counter()
        with closing(RunStore(store, create=False)) as run_store:
            record = run_store.get_run(run_id)
            cases, results = run_store.get_cases(run_id), run_store.get_results(run_id)
            scores = run_store.get_scores(run_id)
        middle = time.perf_counter()
        html = render_run_html(record, cases, results, scores)
        renders.append(time.perf_counter() - middle)
        reads.append(middle - started)
    out = folder / f"{label}.html"
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "ragmeter", "report", run_id, "--store", str(store), "-o", str(out)],
        check=True, capture_output=True, cwd=folder,
    )  # fmt: skip
    end_to_end = time.perf_counter() - started
    size = len(html.encode("utf-8"))
    print(
        f"{label:>12}: {len(cases):>6} cases x {len(scores) // max(len(cases), 1)} metrics · "
        f"{size / 1e6:6.2f} MB · render {min(renders):6.2f} s · store read {min(reads):6.2f} s "
        f"· ragmeter report {end_to_end:6.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="Folder to keep the stores and reports in.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        folder = args.keep or Path(temp)
        folder.mkdir(parents=True, exist_ok=True)
        store, run_id = eval_demo(folder)
        measure(store, run_id, args.repeat, folder, "demo")
        big_store, big_id = synthetic(store, run_id, args.cases, folder)
        measure(big_store, big_id, args.repeat, folder, f"{args.cases} cases")


if __name__ == "__main__":
    main()

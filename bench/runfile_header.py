"""Run file benchmark: read a large run's header without its cases.

Writes a synthetic run file of N cases (default 100,000) x M metrics (default 30; a third of
the scores skipped or failed, with reasons) through ``RunFile.write``, then times, best of
``--repeat``:

- ``RunFile.read(path, header_only=True)``: the header parsed, the cases never read;
- ``RunFile.read(path)``: the whole typed file (what ``compare`` does);
- ``json.loads`` of the whole file, the floor of any reader that parses every case.

It also reports the peak memory (tracemalloc) of the header-only read.

    python bench/runfile_header.py [--cases 100000] [--metrics 30] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragmeter.models import CaseResult, Score
from ragmeter.run_record import MetricSummary, RunRecord, Scorecard
from ragmeter.runfile import RunFile


def build(n_cases: int, n_metrics: int) -> RunFile:
    names = [f"metric_{j}" for j in range(n_metrics)]
    summaries = [
        MetricSummary(
            name=name, group="retrieval", value=0.5, kind="proportion",
            n_scored=n_cases, n_skipped=0, n_failed=0, ci_low=0.49, ci_high=0.51,
        )
        for name in names
    ]  # fmt: skip
    record = RunRecord(
        id="bench0000001",
        name="bench",
        status="completed",
        created_at="2026-11-23T10:00:00+00:00",
        config={"datasets": ["synthetic"], "metrics": ["retrieval"], "seed": 0},
        datasets=["synthetic"],
        scorecard=Scorecard(metrics=summaries, by_group={"retrieval": names}),
        question_count=n_cases,
    )
    results = [
        CaseResult(case_id=f"case-{i:06d}", status="ok", latency_ms=10.0 + i % 97)
        for i in range(n_cases)
    ]
    scores = [
        Score(f"case-{i:06d}", name, ((i * 7 + j) % 100) / 100.0)
        if (i + j) % 3
        else Score(f"case-{i:06d}", name, None, "skipped", "case has no gold passages")
        for i in range(n_cases)
        for j, name in enumerate(names)
    ]
    return RunFile.from_run(record, results, scores)


def best_of(repeat: int, job: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        job()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--metrics", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = build(args.cases, args.metrics).write(Path(folder))
        size_mb = path.stat().st_size / 1e6
        header_s = best_of(args.repeat, lambda: RunFile.read(path, header_only=True))
        tracemalloc.start()
        header = RunFile.read(path, header_only=True)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert header.cases is None and header.question_count == args.cases
        full_s = best_of(args.repeat, lambda: RunFile.read(path))
        loads_s = best_of(args.repeat, lambda: json.loads(path.read_text(encoding="utf-8")))
    print(f"run file: {args.cases:,} cases x {args.metrics} metrics, {size_mb:.1f} MB")
    print(f"RunFile.read(header_only=True): {header_s * 1000:8.1f} ms  (peak {peak / 1e6:.2f} MB)")
    print(f"RunFile.read (whole file):      {full_s * 1000:8.1f} ms")
    print(f"json.loads (whole file):        {loads_s * 1000:8.1f} ms")
    print(f"header-only vs json.loads: {loads_s / header_s:,.0f}x faster")


if __name__ == "__main__":
    main()

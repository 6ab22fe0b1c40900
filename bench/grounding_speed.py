"""Speed of the grounding family on the development sets, with and without embeddings.

Data: Q-squared (600 responses) and BEGIN dev, WoW part (430), from
``../shared/datasets/faithfulness`` (as ``bench/grounding_auc.py`` reads them): the knowledge is
the one retrieved chunk, the response the answer, the dialogue's last message the question.

Each timing is one run's scoring: ``score_results`` over the four grounding metrics (the
family's batch ``prepare`` included), from cold per-process caches (text caches and the
embedder's per-text cache cleared; the model already loaded, its load time printed apart).

* without embeddings: ``grounding_model: lexical``;
* with embeddings: ``grounding_model: auto`` with the ``semantic`` extra (MiniLM word-piece
  alignment).

Printed per mode: best and median answers/s over ``--repeat`` runs, the process CPU seconds,
and the load average (other jobs on the machine slow the wall clock, not the CPU seconds).
``--check`` also compares every alignment with the one-answer-at-a-time, uncached path
(``token_aligner`` on a fresh model), ``--profile`` prints where one run's time goes.

    python bench/grounding_speed.py [--repeat 3] [--check] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

from offline_metrics import clear_text_caches  # bench/ is on sys.path when the script runs
from ragmeter.embedders import base as embedders_base
from ragmeter.metrics.base import Metric, MetricSettings
from ragmeter.metrics.grounding import TOKEN_MODEL, GroundingState, grounding_metrics
from ragmeter.models import Case, CaseResult, Response, RetrievedChunk
from ragmeter.runner.scoring import score_results

DATA = (
    Path(os.environ.get("RAGMETER_SHARED_DATASETS", Path(__file__).resolve().parents[2] / "shared"))
    / "datasets"
    / "faithfulness"
)


def load_items() -> list[tuple[str, str, str]]:
    """(knowledge, response, message) of Q-squared and BEGIN dev (WoW)."""
    items = []
    for path in sorted((DATA / "q_squared").glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as handle:
            items += [(r["knowledge"], r["response"], r["message"]) for r in csv.DictReader(handle)]
    with (DATA / "begin" / "begin_dev_wow.tsv").open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        items += [(r["knowledge"], r["response"], r["message"]) for r in reader]
    return items


def as_results(items: list[tuple[str, str, str]]) -> tuple[list[Case], list[CaseResult]]:
    cases, results = [], []
    for number, (knowledge, answer, message) in enumerate(items):
        case = Case(case_id=str(number), question=message or "-")
        response = Response(answer=answer, retrieved=[RetrievedChunk(id="k0", text=knowledge)])
        cases.append(case)
        results.append(CaseResult(case_id=case.case_id, status="ok", response=response))
    return cases, results


def cold_caches() -> None:
    """A run's start: no text read yet, no word-piece vectors in the embedder's cache."""
    clear_text_caches()
    for cached in embedders_base._BUILT.values():
        cached._tokens = embedders_base._LRU(cached._tokens.max_entries)
        cached._vectors = embedders_base._LRU(cached._vectors.max_entries)


def metrics_for(model: str) -> list[Metric]:
    return grounding_metrics(MetricSettings(grounding_model=model))


def time_runs(
    cases: list[Case],
    results: list[CaseResult],
    model: str,
    repeat: int,
    profile: bool = False,
) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for run in range(repeat):
        metrics = metrics_for(model)
        cold_caches()
        profiler = cProfile.Profile() if profile and run == repeat - 1 else None
        started, cpu = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        scores = score_results(cases, results, metrics)
        if profiler:
            profiler.disable()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
        failed = [s for s in scores if s.status == "failed"]
        if failed:
            raise RuntimeError(f"{len(failed)} scores failed, e.g. {failed[0].reason}")
        models = {s.details.get("score_model") for s in scores if s.metric == "grounding_score"}
        expected = "aligned" if model == "auto" else "lexical"
        if expected not in models:
            raise RuntimeError(f"{model}: scored by {models}, not {expected}")
        if profiler:
            stats = pstats.Stats(profiler)
            stats.sort_stats("tottime").print_stats(12)
    return walls, cpus


def check_alignments(cases: list[Case], results: list[CaseResult]) -> None:
    """Every answer's alignment from the batched, cached path against its texts embedded
    alone by a fresh model (no cache), one answer at a time, as ``token_aligner`` does."""
    from ragmeter.embedders.onnx_minilm import OnnxMiniLM
    from ragmeter.metrics.grounding import token_alignment

    metrics = metrics_for("auto")
    state = metrics[0].prepare.__self__  # type: ignore[union-attr]
    assert isinstance(state, GroundingState)
    cold_caches()
    score_results(cases, results, metrics)
    fresh = OnnxMiniLM()
    worst = 0.0
    for key, value in state._alignments.items():
        vectors = fresh.token_embeddings(list(key))  # this answer's texts alone, no cache
        reference = token_alignment(vectors[0], vectors[1:])
        assert (value is None) == (reference is None), key
        if value is not None and reference is not None:
            worst = max(worst, abs(value[0] - reference[0]), abs(value[1] - reference[1]))
    print(f"check: {len(state._alignments)} alignments, largest difference {worst:.2e}")
    if worst > 1e-6:
        raise SystemExit("the batched alignments differ from the uncached ones")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="compare with the uncached path")
    parser.add_argument("--profile", action="store_true", help="profile the last run of each")
    args = parser.parse_args()
    if not DATA.exists():
        print(f"skipped: {DATA} is absent")
        return 0
    cases, results = as_results(load_items())
    print(f"{len(cases)} answers (Q-squared and BEGIN dev), {os.cpu_count()} CPUs")
    started = time.perf_counter()
    embedders_base.build_embedder(TOKEN_MODEL)
    print(f"MiniLM load: {time.perf_counter() - started:.2f} s (not in the timings)")
    score_results(cases[:20], results[:20], metrics_for("auto"))  # warm-up
    for name, model in (("without embeddings", "lexical"), ("with embeddings", "auto")):
        walls, cpus = time_runs(cases, results, model, args.repeat, args.profile)
        print(
            f"{name:<19} best {len(cases) / min(walls):7.1f} answers/s, median "
            f"{len(cases) / statistics.median(walls):7.1f}; wall {min(walls):.2f} s, CPU "
            f"{statistics.median(cpus):.2f} s; load average {os.getloadavg()[0]:.1f}"
        )
        sys.stdout.flush()
    if args.check:
        check_alignments(cases, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

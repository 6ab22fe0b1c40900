"""Retrieval-metric speed: ragmeter's batch engine against pytrec_eval and ranx, in one run.

Synthetic data (seeded): 10,000 queries x 100 retrieved documents and 1,000 x 1,000, five
relevant documents per query with grades 1-3, float scores. Measures nDCG@10, recall@100,
MRR@10 and P@5, from Python dicts (the form users hold them in), values checked to agree.

- pytrec_eval (trec_eval in Python) has no MRR cutoff, so MRR@10 takes a second evaluator on the
  run truncated to its top 10 (the truncation is timed too);
- ranx is timed warm (an untimed first call on the same data compiles its numba code), building its
  Qrels/Run from the dicts inside the timing;
- peak memory: tracemalloc's peak while ragmeter evaluates, next to the size of the input dicts.

    python bench/retrieval.py [--repeat 3]
Needs `pip install pytrec-eval-terrier ranx` (bench only).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from ragmeter.metrics.ir import parse_measure, trec_order
from ragmeter.metrics.ir.batch import evaluate_batch

MEASURES = [parse_measure(m) for m in ("ndcg_cut.10", "recall.100", "recip_rank.10", "P.5")]
Data = tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]


def make_data(n_queries: int, n_docs: int, seed: int = 0) -> Data:
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    pool = n_docs * 2
    for q in range(n_queries):
        docs = rng.choice(pool, n_docs, replace=False)
        run[f"q{q}"] = {f"d{d}": float(s) for d, s in zip(docs, rng.random(n_docs), strict=True)}
        relevant = rng.choice(pool, 5, replace=False)
        qrels[f"q{q}"] = {
            f"d{d}": int(g) for d, g in zip(relevant, rng.integers(1, 4, 5), strict=True)
        }
    return qrels, run


def ragmeter_means(qrels: Any, run: Any) -> dict[str, float]:
    result = evaluate_batch(qrels, run, MEASURES)
    return {m.label: result.mean(m.label) for m in MEASURES}


def pytrec_means(qrels: Any, run: Any) -> dict[str, float]:
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100", "P.5"})
    per_query = evaluator.evaluate(run)
    top10 = {q: {d: docs[d] for d in trec_order(docs)[:10]} for q, docs in run.items()}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
    n = len(per_query)
    return {
        "ndcg_cut_10": sum(v["ndcg_cut_10"] for v in per_query.values()) / n,
        "recall_100": sum(v["recall_100"] for v in per_query.values()) / n,
        "recip_rank_10": sum(v["recip_rank"] for v in rr.values()) / n,
        "P_5": sum(v["P_5"] for v in per_query.values()) / n,
    }


def ranx_means(qrels: Any, run: Any) -> dict[str, float]:
    from ranx import Qrels, Run, evaluate

    scores = evaluate(Qrels(qrels), Run(run), ["ndcg@10", "recall@100", "mrr@10", "precision@5"])
    return {
        "ndcg_cut_10": scores["ndcg@10"],
        "recall_100": scores["recall@100"],
        "recip_rank_10": scores["mrr@10"],
        "P_5": scores["precision@5"],
    }


def timed(
    function: Callable[[Any, Any], dict[str, float]], data: Data, repeat: int
) -> tuple[float, dict[str, float]]:
    times = []
    values: dict[str, float] = {}
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        values = function(*data)
        times.append(time.perf_counter() - started)
    return statistics.median(times), values


def input_megabytes(n_queries: int, n_docs: int) -> float:
    tracemalloc.start()
    data = make_data(n_queries, n_docs)
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del data
    return size / 1e6


def peak_megabytes(data: Data) -> float:
    gc.collect()
    tracemalloc.start()
    evaluate_batch(data[0], data[1], MEASURES)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    ranx_means(*make_data(50, 20))  # compile ranx's numba functions outside the timing
    print(
        f"{'shape':<12} {'ragmeter':>10} {'pytrec+MRR':>11} {'ranx warm':>10} "
        f"{'vs pytrec':>10} {'vs ranx':>8} {'input MB':>9} {'peak MB':>8}"
    )
    for n_queries, n_docs in ((10_000, 100), (1_000, 1_000)):
        data = make_data(n_queries, n_docs)
        ours, our_values = timed(ragmeter_means, data, args.repeat)
        trec, trec_values = timed(pytrec_means, data, args.repeat)
        ranx_means(*data)  # warm: an untimed call on the same data first
        ranx, ranx_values = timed(ranx_means, data, args.repeat)
        for label, value in our_values.items():
            assert abs(value - trec_values[label]) < 1e-6, (label, value, trec_values[label])
            assert abs(value - ranx_values[label]) < 1e-6, (label, value, ranx_values[label])
        print(
            f"{n_queries}x{n_docs:<6} {ours:>9.3f}s {trec:>10.3f}s {ranx:>9.3f}s "
            f"{trec / ours:>9.1f}x {ranx / ours:>7.1f}x {input_megabytes(n_queries, n_docs):>9.1f} "
            f"{peak_megabytes(data):>8.1f}"
        )
    print(
        "targets: >= 2x faster than pytrec_eval with MRR@10, >= 2.5x faster than warm ranx, "
        "peak within 50 MB of the input's size"
    )


if __name__ == "__main__":
    main()

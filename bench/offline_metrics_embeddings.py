"""Speed of the offline semantic metrics on this machine (all-MiniLM-L6-v2, int8 ONNX, CPU).

Texts are real: sentences and ~170-word-piece passages cut from the bundled demo corpus
(``src/ragmeter/demo/corpus``). Measures, warm (model loaded, one untimed warm-up call):

- embedding throughput of the backend (no cache), texts/s, for sentences and passages;
- BERTScore pairs/s: token vectors for answer and reference, then greedy matching;
- the whole ``semantic`` family through ``engine.score_results`` (4 metrics), cases/s, with an
  empty per-text cache, so every text is embedded;
- model load time, and the process's peak RSS.

    python bench/offline_metrics_embeddings.py [--sentences 512] [--passages 128] [--pairs 256]
        [--repeat 3] [--batch-sizes 16,32,64]
Needs `pip install 'ragmeter[semantic]'`. Target: >= 150 texts/s for sentences.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from ragmeter.embedders import base as embedders_base
from ragmeter.embedders.base import CachedEmbedder
from ragmeter.embedders.onnx_minilm import OnnxMiniLM
from ragmeter.metrics import MetricSettings
from ragmeter.metrics.semantic import bertscore, semantic_metrics
from ragmeter.models import Case, CaseResult, Response
from ragmeter.runner.engine import score_results

CORPUS = Path(__file__).resolve().parents[1] / "src" / "ragmeter" / "demo" / "corpus"


def corpus_texts(model: OnnxMiniLM) -> tuple[list[str], list[str]]:
    """(sentences of 6+ words, passages of about 170 word pieces) from the demo corpus."""
    raw = " ".join(p.read_text(encoding="utf-8") for p in sorted(CORPUS.rglob("*.md")))
    raw = re.sub(r"[#*|`>-]+", " ", raw)
    sentences = [
        " ".join(s.split()) for s in re.split(r"(?<=[.!?])\s+", raw) if len(s.split()) >= 6
    ]
    words = raw.split()
    passages: list[str] = []
    start = 0
    while start < len(words):
        piece = words[start : start + 120]
        while len(piece) > 10 and len(model.encode([" ".join(piece)], 10_000)[0]) > 172:
            piece = piece[:-5]
        passages.append(" ".join(piece))
        start += max(len(piece) // 2, 1)  # overlapping windows: more distinct passages
    return sentences, passages


def cycle(texts: list[str], n: int) -> list[str]:
    """n texts; repeats get a numbered prefix so every text differs (no cache can help)."""
    return [
        texts[i % len(texts)] if i < len(texts) else f"({i}) {texts[i % len(texts)]}"
        for i in range(n)
    ]


def best_rate(work: Callable[[], None], items: int, repeat: int) -> tuple[float, float, float]:
    """(median, best) items per wall-clock second over ``repeat`` timed runs, and items per
    CPU-second of this process (all its threads): the last is less disturbed by other jobs."""
    rates, cpu_rates = [], []
    for _ in range(repeat):
        started, cpu_started = time.perf_counter(), time.process_time()
        work()
        rates.append(items / (time.perf_counter() - started))
        cpu_rates.append(items / max(time.process_time() - cpu_started, 1e-9))
    return statistics.median(rates), max(rates), statistics.median(cpu_rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--passages", type=int, default=128)
    parser.add_argument("--pairs", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batch-sizes", default="32", help="comma-separated, e.g. 16,32,64")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    started = time.perf_counter()
    model = OnnxMiniLM()
    load_s = time.perf_counter() - started
    sentences, passages = corpus_texts(model)
    sent = cycle(sentences, args.sentences)
    pas = cycle(passages, args.passages)
    mean_tokens = statistics.mean(len(ids) for ids in model.encode(sent, 256))
    mean_passage = statistics.mean(len(ids) for ids in model.encode(pas, 256))
    print(f"cpus: {os.cpu_count()}, model load: {load_s:.2f} s")
    print(f"sentences: {len(sent)} (mean {mean_tokens:.0f} word pieces incl. [CLS]/[SEP])")
    print(f"passages:  {len(pas)} (mean {mean_passage:.0f} word pieces incl. [CLS]/[SEP])")

    model.embed(sent[:64])  # warm-up
    print(f"load average: {os.getloadavg()[0]:.1f} (other jobs slow every figure down)")
    print(f"\nembedding, texts/s: median (best) of {args.repeat}; per CPU-second in [ ]")
    for batch_size in [int(b) for b in args.batch_sizes.split(",")]:
        model.batch_size = batch_size
        s_med, s_best, s_cpu = best_rate(lambda: model.embed(sent), len(sent), args.repeat)
        p_med, p_best, p_cpu = best_rate(lambda: model.embed(pas), len(pas), args.repeat)
        print(
            f"  batch {batch_size:>2}: sentences {s_med:6.1f} ({s_best:.1f}) [{s_cpu:.1f}]"
            f"   passages {p_med:5.1f} ({p_best:.1f}) [{p_cpu:.1f}]"
        )
    model.batch_size = 32

    answers = cycle(sentences, args.pairs)
    references = cycle(sentences[1:] + sentences[:1], args.pairs)
    references = [f"In short: {r}" for r in references]

    def bertscore_pairs() -> None:
        texts = list(dict.fromkeys(answers + references))
        tokens = dict(zip(texts, model.token_embeddings(texts), strict=True))
        for a, r in zip(answers, references, strict=True):
            bertscore(tokens[a], tokens[r])

    b_med, b_best, b_cpu = best_rate(bertscore_pairs, len(answers), args.repeat)
    print(f"\nBERTScore (sentence pairs), pairs/s: {b_med:.1f} ({b_best:.1f}) [{b_cpu:.1f}]")

    cases = [
        Case(case_id=f"c{i}", question="q", reference_answer=r) for i, r in enumerate(references)
    ]
    results = [
        CaseResult(case_id=f"c{i}", status="ok", response=Response(answer=a))
        for i, a in enumerate(answers)
    ]

    def whole_family() -> None:
        embedders_base._BUILT["minilm"] = CachedEmbedder(model)  # empty cache, loaded model
        scores = score_results(cases, results, semantic_metrics(MetricSettings()))
        assert all(s.status == "ok" for s in scores)

    f_med, f_best, f_cpu = best_rate(whole_family, len(cases), args.repeat)
    print(
        f"semantic family (4 metrics, score_results), cases/s: {f_med:.1f} ({f_best:.1f})"
        f" [{f_cpu:.1f}]"
    )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS: {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()

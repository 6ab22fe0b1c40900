"""Offline-metric throughput: cases per second for the whole offline metric set on 1,000
recorded cases, without and then with the embedding metrics.

The cases are SQuAD v2 questions (../shared/datasets/squad_v2_small) answered by the reference
pipeline and recorded once (outside the timing); their ids are repeated with a suffix up to
``--cases``. The timing covers ``score_results`` (every metric on every case, batch ``prepare``
included) and ``aggregate_scores`` (bootstrap intervals), i.e. all scoring work of a run, with
the per-process text caches cleared before each timing (chunk texts recur across the cases of a
run, as SQuAD's 87 paragraphs do across its 626 questions, and the caches exploit that).

    python bench/offline_metrics.py [--cases 1000] [--repeat 3]
Targets: the non-embedding set >= 500 cases/s; embedding metrics batched, >= 150 texts/s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ragmeter.config import EvalConfig
from ragmeter.datasets import load_dataset
from ragmeter.datasets.squad import import_squad
from ragmeter.metrics import MetricSettings, resolve_metrics
from ragmeter.metrics.claims import extract_claims
from ragmeter.metrics.grounding import MAX_CLAIMS, alignment_texts, build_context
from ragmeter.models import Case, CaseResult, Response
from ragmeter.runner.engine import score_results
from ragmeter.scoring.aggregate import aggregate_scores
from ragmeter.targets.reference.pipeline import ReferencePipeline

SHARED = Path(__file__).resolve().parents[2] / "shared"
SQUAD = SHARED / "datasets" / "squad_v2_small" / "small.json"
# the default metric families without the embedding ones
OFFLINE = [family for family in EvalConfig().metrics if family != "semantic"]


def recorded_cases(count: int) -> tuple[list[Case], list[CaseResult]]:
    with tempfile.TemporaryDirectory() as folder:
        cases_file, corpus, _ = import_squad(SQUAD, folder)
        base = load_dataset(str(cases_file))
        pipeline = ReferencePipeline.from_corpus(corpus)
        answers = {c.case_id: pipeline.answer(c.question) for c in base}
    cases: list[Case] = []
    results: list[CaseResult] = []
    for i in range(count):
        original = base[i % len(base)]
        case = original.model_copy(update={"case_id": f"{original.case_id}-{i}"})
        response = Response.model_validate(answers[original.case_id])
        response.latency_ms["total"] = 1.0
        cases.append(case)
        results.append(CaseResult(case_id=case.case_id, status="ok", response=response))
    return cases, results


def clear_text_caches() -> None:
    """Cold caches for every timing: every ``lru_cache`` of ragmeter's loaded modules (the text
    caches live for the process)."""
    for name, module in list(sys.modules.items()):
        if name == "ragmeter" or name.startswith("ragmeter."):
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()


def time_families(
    families: list[str],
    cases: list[Case],
    results: list[CaseResult],
    repeat: int,
    settings: MetricSettings,
) -> tuple[float, int]:
    times = []
    scored = 0
    for _ in range(repeat):
        metrics = resolve_metrics(families, settings)
        clear_text_caches()
        started = time.perf_counter()
        scores = score_results(cases, results, metrics)
        aggregate_scores(scores, metrics)
        times.append(time.perf_counter() - started)
        scored = len(metrics)
    return statistics.median(times), scored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not SQUAD.exists():
        sys.exit(f"skipped: {SQUAD} is absent")
    cases, results = recorded_cases(args.cases)
    lexical = MetricSettings(grounding_model="lexical")  # grounding_score without MiniLM
    seconds, count = time_families(OFFLINE, cases, results, args.repeat, lexical)
    print(
        f"offline set without embeddings: {count} metrics, {args.cases} cases in {seconds:.2f} s"
        f" -> {args.cases / seconds:.0f} cases/s (target >= 500)"
    )
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        print("embedding metrics: skipped (pip install 'ragmeter[semantic]')")
        return
    # one answer and one reference a case (semantic), and the distinct texts that
    # grounding_score aligns (claims and context sentences; SQuAD's paragraphs recur)
    texts = 2 * args.cases + alignment_text_count(results)
    seconds, count = time_families([*OFFLINE, "semantic"], cases, results, 1, MetricSettings())
    print(
        f"offline set with embeddings: {count} metrics in {seconds:.2f} s -> "
        f"{args.cases / seconds:.0f} cases/s; {texts} texts, {texts / seconds:.0f} texts/s"
        " (target >= 150)"
    )


def alignment_text_count(results: list[CaseResult]) -> int:
    """Distinct texts grounding_score embeds word piece by word piece for these results."""
    texts: set[str] = set()
    for result in results:
        response = result.response
        if response is None or response.abstained:
            continue
        claims = [c.text for c in extract_claims(response.answer, MAX_CLAIMS)[0]]
        if claims:
            context = build_context([r.text for r in response.retrieved])
            texts.update(alignment_texts(claims, context))
    return len(texts)


if __name__ == "__main__":
    main()

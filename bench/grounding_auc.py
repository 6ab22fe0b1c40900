"""AUC of ``grounding_score`` against human faithfulness labels, next to a token-recall baseline.

Data (see ../shared/datasets/README.md): Q-squared (600 dialogue responses, consistent /
inconsistent with the knowledge) and BEGIN dev, WoW part (430, fully / not fully attributable).
Each set is split in two halves with a seeded shuffle (seed 0): weights are chosen on the
tuning halves only (``--tune``), and the held-out halves are what we report.

The score goes through the metric's own code: the knowledge is the one retrieved chunk, the
response is the answer, and ``score_case`` applies ``grounding_score``. A response without a
checkable claim (only a question, a refusal) is *skipped* by the metric; for the AUC it counts
as 0 (no grounded content), and the number of such responses is printed.

The baseline is content-token recall: the share of the response's content tokens (the
project's tokenizer: lower case, stop words out, light stemming) found in the knowledge.

    python bench/grounding_auc.py            # report the shipped weights
    python bench/grounding_auc.py --tune     # grid search on the tuning halves
    python bench/grounding_auc.py --embedder minilm --tune   # also try embedding alignment
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ragmeter.metrics.base import MetricSettings, score_case
from ragmeter.metrics.grounding import DEFAULT_WEIGHTS, GroundingWeights, grounding_metrics
from ragmeter.models import Case, CaseResult, Response, RetrievedChunk
from ragmeter.targets.reference.text import tokenize

DATA = (
    Path(os.environ.get("RAGMETER_SHARED_DATASETS", Path(__file__).resolve().parents[2] / "shared"))
    / "datasets"
    / "faithfulness"
)
SEED = 0


@dataclass(frozen=True)
class Item:
    knowledge: str
    response: str
    message: str
    label: int  # 1 = consistent / fully attributable


def load_q_squared() -> list[Item]:
    items = []
    for path in sorted((DATA / "q_squared").glob("*.csv")):
        label = 0 if "inconsistent" in path.name else 1
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                items.append(Item(row["knowledge"], row["response"], row["message"], label))
    return items


def load_begin() -> list[Item]:
    path = DATA / "begin" / "begin_dev_wow.tsv"
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [
            Item(
                row["knowledge"],
                row["response"],
                row["message"],
                int(row["begin_label"] == "Fully attributable"),
            )
            for row in reader
        ]


def split(items: list[Item], seed: int = SEED) -> tuple[list[Item], list[Item]]:
    """(tuning half, held-out half): a seeded shuffle cut in the middle."""
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)
    tune = set(order[: len(order) // 2])
    return [items[i] for i in sorted(tune)], [items[i] for i in range(len(items)) if i not in tune]


def auc(scores: list[float], labels: list[int]) -> float:
    """Mann-Whitney AUC: P(score of a positive > score of a negative), ties count 0.5."""
    ranked = sorted(zip(scores, labels, strict=True))
    n_pos = sum(labels)
    n_neg = len(labels) - n_pos
    if not n_pos or not n_neg:
        raise ValueError("AUC needs both labels")
    rank_sum = 0.0
    position = 0
    while position < len(ranked):
        end = position
        while end < len(ranked) and ranked[end][0] == ranked[position][0]:
            end += 1
        mid_rank = (position + 1 + end) / 2  # average 1-based rank of the tie block
        rank_sum += mid_rank * sum(label for _, label in ranked[position:end])
        position = end
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def token_recall(item: Item) -> float:
    tokens = tokenize(item.response)
    knowledge = set(tokenize(item.knowledge))
    return sum(t in knowledge for t in tokens) / len(tokens) if tokens else 0.0


class Scorer:
    """``grounding_score`` for items, through the metric's own code."""

    def __init__(self, weights: GroundingWeights, embedder: str | None) -> None:
        settings = MetricSettings(embedder=embedder or "")
        metrics = grounding_metrics(settings, weights)
        self.metric = next(m for m in metrics if m.name == "grounding_score")
        self.skipped = 0

    def __call__(self, items: list[Item]) -> list[float]:
        pairs = []
        for number, item in enumerate(items):
            case = Case(case_id=str(number), question=item.message or "-")
            response = Response(
                answer=item.response, retrieved=[RetrievedChunk(id="k", text=item.knowledge)]
            )
            pairs.append((case, response))
        if self.metric.prepare is not None:
            self.metric.prepare(pairs)
        values = []
        for case, response in pairs:
            result = CaseResult(case_id=case.case_id, status="ok", response=response)
            score = score_case(self.metric, case, result)
            if score.status == "failed":
                raise RuntimeError(f"grounding_score failed: {score.reason}")
            if score.value is None:
                self.skipped += 1
            values.append(0.0 if score.value is None else score.value)
        return values


def labels(items: list[Item]) -> list[int]:
    return [item.label for item in items]


def tune(
    halves: dict[str, tuple[list[Item], list[Item]]], embedder: str | None
) -> GroundingWeights:
    """Grid search on the tuning halves: maximise the smaller gain over the baseline."""
    embeddings = (0.0, 0.25, 0.5) if embedder else (0.0,)
    grid = itertools.product(
        (0.0, 0.5), (0.0, 0.3), (0.0, 0.2, 0.4), (0.0, 0.2), embeddings, (0.0, 0.5, 1.0)
    )
    baselines = {
        name: auc([token_recall(i) for i in tune_half], labels(tune_half))
        for name, (tune_half, _) in halves.items()
    }
    best: tuple[float, GroundingWeights] | None = None
    for bigram, number, personal, negation, embedding, non_claim in grid:
        weights = GroundingWeights(bigram, number, personal, negation, embedding, non_claim)
        scorer = Scorer(weights, embedder)
        gains = {
            name: auc(scorer(tune_half), labels(tune_half)) - baselines[name]
            for name, (tune_half, _) in halves.items()
        }
        worst = min(gains.values())
        print(f"  {asdict(weights)}  gains {', '.join(f'{k} {v:+.3f}' for k, v in gains.items())}")
        if best is None or worst > best[0] + 1e-12:
            best = (worst, weights)
    assert best is not None
    print(f"chosen on the tuning halves: {best[1]} (smallest gain {best[0]:+.3f})")
    print(f"shipped DEFAULT_WEIGHTS:     {DEFAULT_WEIGHTS}")
    return best[1]


def report(
    halves: dict[str, tuple[list[Item], list[Item]]],
    weights: GroundingWeights,
    embedder: str | None,
) -> None:
    print(f"weights: {weights}; embedder: {embedder or 'none (lexical only)'}; split seed {SEED}")
    header = (
        f"{'dataset':<10} {'part':<9} {'n':>4} {'baseline AUC':>13} {'grounding AUC':>14} "
        f"{'skipped':>8}"
    )
    print(header)
    print("-" * len(header))
    for name, (tune_half, held_out) in halves.items():
        for part, items in (
            ("tuning", tune_half),
            ("held-out", held_out),
            ("all", tune_half + held_out),
        ):
            scorer = Scorer(weights, embedder)
            ours = auc(scorer(items), labels(items))
            base = auc([token_recall(i) for i in items], labels(items))
            print(
                f"{name:<10} {part:<9} {len(items):>4} {base:>13.3f} {ours:>14.3f} "
                f"{scorer.skipped:>8}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tune", action="store_true", help="grid search on the tuning halves")
    parser.add_argument("--embedder", default=None, help="embedder spec, e.g. minilm (optional)")
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"skipped: the faithfulness datasets are not at {DATA} (../shared/datasets)")
        return 0
    started = time.perf_counter()
    halves = {"Q-squared": split(load_q_squared()), "BEGIN dev": split(load_begin())}
    weights = DEFAULT_WEIGHTS
    if args.embedder and not args.tune:
        weights = GroundingWeights(**{**asdict(DEFAULT_WEIGHTS), "embedding": 0.25})
    if args.tune:
        weights = tune(halves, args.embedder)
    report(halves, weights, args.embedder)
    print(f"({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""AUC of ``grounding_score`` against human faithfulness labels, next to token-recall baselines.

Data (see ../shared/datasets/README.md): Q-squared (600 dialogue responses, consistent /
inconsistent with the knowledge) and BEGIN dev, WoW part (430, fully / not fully attributable).
Each set is split in two halves with a seeded shuffle (seed 0): the score's weights are fitted
on the tuning halves only (``--tune``), and the held-out halves are what we report.

The score goes through the metric's own code: the knowledge is the one retrieved chunk, the
response is the answer, and ``score_case`` applies ``grounding_score``. A response without a
checkable claim (only a question, a refusal) is *skipped* by the metric; for the AUC it counts
as 0 (no grounded content), and the number of such responses is printed.

Baselines, all computed in the same run (share of the response's tokens found in the knowledge):

* ``recall (stemmed)``: content tokens by the project's tokenizer (lower case, stop words out,
  light plural stemming);
* ``recall (plain)``: lower-case word tokens, stop words out, no stemming;
* ``recall (all words)``: lower-case word tokens, stop words kept (this is the variant that
  reproduces the 0.95 quoted for BEGIN in ../shared/FACTS.md; it is not a content-token recall).

    python bench/grounding_auc.py            # report the shipped DEFAULT_SCORE_WEIGHTS
    python bench/grounding_auc.py --tune     # refit them on the tuning halves, then report
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragmeter.metrics.base import MetricSettings, score_case
from ragmeter.metrics.grounding import (
    DEFAULT_SCORE_WEIGHTS,
    AnswerSignals,
    ScoreWeights,
    assess,
    grounding_metrics,
)
from ragmeter.models import Case, CaseResult, Response, RetrievedChunk
from ragmeter.text import STOP_WORDS, tokenize

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


_WORD = re.compile(r"\w+")


def token_recall(item: Item) -> float:
    """Content-token recall with the project's tokenizer (stop words out, light stemming)."""
    tokens = tokenize(item.response)
    knowledge = set(tokenize(item.knowledge))
    return sum(t in knowledge for t in tokens) / len(tokens) if tokens else 0.0


def plain_recall(item: Item) -> float:
    """Content-token recall on plain lower-case words: stop words out, no stemming."""
    tokens = [t for t in _WORD.findall(item.response.lower()) if t not in STOP_WORDS]
    knowledge = set(_WORD.findall(item.knowledge.lower())) - STOP_WORDS
    return sum(t in knowledge for t in tokens) / len(tokens) if tokens else 0.0


def all_word_recall(item: Item) -> float:
    """Recall of every lower-case word, stop words kept."""
    tokens = _WORD.findall(item.response.lower())
    knowledge = set(_WORD.findall(item.knowledge.lower()))
    return sum(t in knowledge for t in tokens) / len(tokens) if tokens else 0.0


BASELINES: dict[str, Callable[[Item], float]] = {
    "recall (stemmed)": token_recall,
    "recall (plain)": plain_recall,
    "recall (all words)": all_word_recall,
}


class Scorer:
    """``grounding_score`` for items, through the metric's own code."""

    def __init__(self, score_weights: ScoreWeights) -> None:
        metrics = grounding_metrics(MetricSettings(), score_weights=score_weights)
        self.metric = next(m for m in metrics if m.name == "grounding_score")
        self.skipped = 0

    def __call__(self, items: list[Item]) -> list[float]:
        values = []
        for number, item in enumerate(items):
            case = Case(case_id=str(number), question=item.message or "-")
            response = Response(
                answer=item.response, retrieved=[RetrievedChunk(id="k", text=item.knowledge)]
            )
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


# --- fitting (tuning halves only) ---------------------------------------------------------

FEATURES = tuple(AnswerSignals(0.0, 0.0, 0, 0, False, 0.0, False).features())
L2 = 0.01  # ridge on the standardised weights


def feature_matrix(items: list[Item]) -> tuple[np.ndarray, np.ndarray]:
    """Answer signals (the metric's ``assess``) of the items that have claims, and labels."""
    rows, ys = [], []
    for item in items:
        signals = assess(item.response, [item.knowledge]).signals
        if signals is not None:  # no claim: the metric skips it, the AUC counts it as 0
            rows.append(list(signals.features().values()))
            ys.append(item.label)
    return np.asarray(rows, dtype=float), np.asarray(ys, dtype=float)


def fit_pairwise(sets: list[tuple[np.ndarray, np.ndarray]], l2: float = L2) -> np.ndarray:
    """Linear weights minimising the pairwise logistic loss log(1 + exp(-(s_pos - s_neg)))
    (a smooth stand-in for 1 - AUC), averaged over each set's pairs, the sets weighted
    equally, plus ``l2`` * |w|^2 / 2 (Newton steps)."""
    dim = sets[0][0].shape[1]
    diffs = []
    for x, y in sets:
        pos, neg = x[y == 1], x[y == 0]
        diffs.append((pos[:, None, :] - neg[None, :, :]).reshape(-1, dim))
    w = np.zeros(dim)
    for _ in range(100):
        grad, hess = l2 * w, l2 * np.eye(dim)
        for d in diffs:
            p = 1.0 / (1.0 + np.exp(d @ w))
            grad = grad - (d * p[:, None]).mean(axis=0)
            hess = hess + (d * (p * (1 - p))[:, None]).T @ d / len(d)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w


def fit_calibration(sets: list[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float]:
    """(a, b) of sigmoid(a * s + b) fitted to the labels (logistic likelihood, sets weighted
    equally): turns the ranking score into a probability-like value; the order is kept."""
    s = np.concatenate([z for z, _ in sets])
    y = np.concatenate([t for _, t in sets])
    weight = np.concatenate([np.full(len(t), 1.0 / len(t)) for _, t in sets])
    design = np.stack([s, np.ones_like(s)], axis=1)
    theta = np.zeros(2)
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-design @ theta))
        grad = design.T @ (weight * (p - y)) + 1e-6 * theta
        hess = (design * (weight * p * (1 - p))[:, None]).T @ design + 1e-6 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.abs(step).max() < 1e-12:
            break
    return float(theta[0]), float(theta[1])


def fit_weights(sets: list[tuple[np.ndarray, np.ndarray]]) -> ScoreWeights:
    """Standardise, fit the pairwise ranking weights, calibrate, and return raw-scale weights
    rounded to 3 decimals (the shipped constants)."""
    stacked = np.vstack([x for x, _ in sets])
    mean, scale = stacked.mean(axis=0), stacked.std(axis=0) + 1e-9
    w = fit_pairwise([((x - mean) / scale, y) for x, y in sets])
    raw = w / scale
    offset = -float(mean @ raw)
    a, b = fit_calibration([(x @ raw + offset, y) for x, y in sets])
    coefficients = {name: round(a * float(v), 3) for name, v in zip(FEATURES, raw, strict=True)}
    return ScoreWeights(intercept=round(a * offset + b, 3), **coefficients)


def fast_auc(scores: np.ndarray, y: np.ndarray) -> float:
    return auc([float(v) for v in scores], [int(v) for v in y])


def cross_validate(sets: dict[str, tuple[np.ndarray, np.ndarray]], folds: int = 5) -> None:
    """5-fold cross-validation inside the tuning halves (fit on 4 folds, AUC on the 5th),
    10 seeded repeats: how well the fit generalises, without touching the held-out halves."""
    found: dict[str, list[float]] = {name: [] for name in sets}
    for repeat in range(10):
        fold_of = {}
        for name, (_, y) in sets.items():
            order = list(range(len(y)))
            random.Random(100 + repeat).shuffle(order)
            fold_of[name] = np.empty(len(y), dtype=int)
            for position, index in enumerate(order):
                fold_of[name][index] = position % folds
        for k in range(folds):
            train = [(x[fold_of[n] != k], y[fold_of[n] != k]) for n, (x, y) in sets.items()]
            weights = fit_weights(train)
            coef = np.array([getattr(weights, f) for f in FEATURES])
            for name, (x, y) in sets.items():
                test = fold_of[name] == k
                found[name].append(fast_auc(x[test] @ coef, y[test]))
    print(
        "5-fold CV inside the tuning halves (answers with claims; mean fold AUC): "
        + ", ".join(f"{n} {float(np.mean(v)):.3f}" for n, v in found.items())
    )


def tune(halves: dict[str, tuple[list[Item], list[Item]]]) -> ScoreWeights:
    """Fit the score weights on the tuning halves only and print them as shipped constants."""
    sets = {name: feature_matrix(tune_half) for name, (tune_half, _) in halves.items()}
    print("single-signal AUC on the tuning halves (answers with claims):")
    for column, feature in enumerate(FEATURES):
        parts = ", ".join(f"{n} {fast_auc(x[:, column], y):.3f}" for n, (x, y) in sets.items())
        print(f"  {feature:<16} {parts}")
    cross_validate(sets)
    weights = fit_weights(list(sets.values()))
    print(f"fitted on the tuning halves: {weights}")
    print(f"shipped DEFAULT_SCORE_WEIGHTS: {DEFAULT_SCORE_WEIGHTS}")
    return weights


# --- report -------------------------------------------------------------------------------


def report(halves: dict[str, tuple[list[Item], list[Item]]], weights: ScoreWeights) -> None:
    print(f"score weights: {weights}; split seed {SEED}")
    names = list(BASELINES)
    header = (
        f"{'dataset':<10} {'part':<9} {'n':>4} "
        + " ".join(f"{n:>18}" for n in names)
        + f" {'grounding_score':>15} {'margin':>7} {'skipped':>7}"
    )
    print(header)
    print("-" * len(header))
    for name, (tune_half, held_out) in halves.items():
        for part, items in (
            ("tuning", tune_half),
            ("held-out", held_out),
            ("all", tune_half + held_out),
        ):
            scorer = Scorer(weights)
            ours = auc(scorer(items), labels(items))
            bases = [auc([f(i) for i in items], labels(items)) for f in BASELINES.values()]
            print(
                f"{name:<10} {part:<9} {len(items):>4} "
                + " ".join(f"{b:>18.3f}" for b in bases)
                + f" {ours:>15.3f} {ours - max(bases):>+7.3f} {scorer.skipped:>7}"
            )
    print("margin: grounding_score AUC minus the best baseline AUC on the same items")


def repeated_splits(data: dict[str, list[Item]], n_splits: int) -> None:
    """The fitting procedure judged on many splits: for each seed, refit the weights on that
    seed's tuning halves and measure the held-out halves against each baseline. One 50/50 split
    has a standard error of 0.015-0.03 AUC here; the mean over splits is steadier (the splits
    share items, so they are not independent samples)."""
    signals = {
        name: [assess(i.response, [i.knowledge]).signals for i in items]
        for name, items in data.items()
    }
    width = len(FEATURES)
    matrices = {
        name: np.array([list(s.features().values()) if s else [0.0] * width for s in rows])
        for name, rows in signals.items()
    }
    has_claims = {name: np.array([s is not None for s in rows]) for name, rows in signals.items()}
    y = {name: np.array([i.label for i in items]) for name, items in data.items()}
    base = {
        name: {b: np.array([f(i) for i in items]) for b, f in BASELINES.items()}
        for name, items in data.items()
    }
    margins: dict[str, dict[str, list[float]]] = {n: {b: [] for b in BASELINES} for n in data}
    for seed in range(n_splits):
        halves = {}
        for name, items in data.items():
            order = list(range(len(items)))
            random.Random(seed).shuffle(order)
            cut = len(order) // 2
            halves[name] = (np.array(sorted(order[:cut])), np.array(sorted(order[cut:])))
        train = []
        for name, (tune_idx, _) in halves.items():
            rows = tune_idx[has_claims[name][tune_idx]]
            train.append((matrices[name][rows], y[name][rows]))
        weights = fit_weights(train)
        coef = np.array([getattr(weights, f) for f in FEATURES])
        for name, (_, test) in halves.items():
            # the metric's order: a monotone sigmoid of the linear score; no claim counts as 0
            linear = matrices[name][test] @ coef + weights.intercept
            score = np.where(has_claims[name][test], 1.0 / (1.0 + np.exp(-linear)), 0.0)
            ours = fast_auc(score, y[name][test])
            for b, values in base[name].items():
                margins[name][b].append(ours - fast_auc(values[test], y[name][test]))
    print(f"\n{n_splits} seeded 50/50 splits, weights refit on each tuning half; held-out margin")
    print("(grounding_score AUC minus baseline AUC): mean, and splits with a positive margin")
    for name, by_base in margins.items():
        parts = [
            f"{b} {np.mean(v):+.4f} ({sum(m > 0 for m in v)}/{n_splits})"
            for b, v in by_base.items()
        ]
        print(f"  {name:<10} " + "; ".join(parts))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--tune", action="store_true", help="refit the score weights on the tuning halves"
    )
    parser.add_argument(
        "--splits", type=int, default=0, help="also refit and measure on this many seeded splits"
    )
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"skipped: the faithfulness datasets are not at {DATA} (../shared/datasets)")
        return 0
    started = time.perf_counter()
    data = {"Q-squared": load_q_squared(), "BEGIN dev": load_begin()}
    halves = {name: split(items) for name, items in data.items()}
    weights = tune(halves) if args.tune else DEFAULT_SCORE_WEIGHTS
    report(halves, weights)
    if args.splits:
        repeated_splits(data, args.splits)
    print(f"({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

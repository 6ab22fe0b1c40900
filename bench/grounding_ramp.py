"""Where the long-answer ramp of ``grounding_score`` starts (``grounding_auc.py --choose-long``).

Both rules below were fixed in writing before their grid was run (docs/grounding.md, "Where
the ramp starts"):

* ``summed`` (the first run): the sum of the four fit sets' out-of-fold AUCs; the
  hand-set (30, 20) is kept when within 0.002 of the best point. It chose (20, 10).
* ``weighted`` (the second run): the same AUCs as an inverse-variance weighted mean,
  each set weighted by 1 / the Hanley-McNeil variance of an AUC of its size, so a shard with
  5 unsupported answers weighs what its sampling noise allows; the shipped point is kept
  when within 0.0005 (a quarter of 0.002: a mean of four, not a sum) of the best."""

from __future__ import annotations

import numpy as np

from grounding_fit import (
    MODELS,
    RAGBENCH,
    SUBSETS,
    Signals,
    cross_validate,
    fast_auc,
    fit_sets,
    fit_weights,
    with_long,
)
from ragmeter.metrics.grounding.model import LONG_FROM, LONG_SPAN

# where the long-answer ramp starts and how long it is, the candidates of ``choose_long``
LONG_FROM_GRID = (20, 25, 30, 35, 40, 45)
LONG_SPAN_GRID = (10, 20, 30)
# per rule: the point kept unless another beats it by more than the rule's tie
KEPT = {"summed": (30, 20), "weighted": (20, 10)}
TIES = {"summed": 0.002, "weighted": 0.0005}


def criterion(cv: dict[str, tuple[float, float]]) -> float:
    """The sum of the out-of-fold AUCs of the fit sets (Q-squared, BEGIN and RAGBench's two
    shards, not RAGBench pooled), the criterion the anchored claims and the first ramp choice
    were made by."""
    return sum(auc for row, (auc, _) in cv.items() if row != RAGBENCH)


def hanley_mcneil_variance(auc: float, n_pos: int, n_neg: int) -> float:
    """The sampling variance of an AUC from ``n_pos`` positives and ``n_neg`` negatives
    (Hanley and McNeil, 1982)."""
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    spread = auc * (1 - auc) + (n_pos - 1) * (q1 - auc * auc) + (n_neg - 1) * (q2 - auc * auc)
    return spread / (n_pos * n_neg)


def reliability_weights(
    signals: dict[str, Signals], tuning: dict[str, np.ndarray]
) -> dict[str, float]:
    """Per fit set (a RAGBench shard on its own), 1 / the Hanley-McNeil variance at the set's
    stemmed-recall AUC on its tuning half and its class counts there: fixed by the data, the
    same for every candidate."""
    weights = {}
    for name, index in tuning.items():
        s = signals[name]
        parts = {name: index}
        if name == RAGBENCH:
            parts = {f"{name}/{sub}": index[s.subset[index] == sub] for sub in SUBSETS}
        for row, items in parts.items():
            y = s.y[items]
            at = fast_auc(s.baseline[items], y)
            weights[row] = 1 / hanley_mcneil_variance(at, int(y.sum()), int((1 - y).sum()))
    return weights


def weighted_criterion(cv: dict[str, tuple[float, float]], weights: dict[str, float]) -> float:
    """The fit sets' out-of-fold AUCs averaged with ``weights``."""
    total = sum(weights.values())
    return sum(weights[row] * cv[row][0] for row in weights) / total


def choose_long(
    signals: dict[str, Signals],
    tuning: dict[str, np.ndarray],
    rule: str = "weighted",
    repeats: int = 20,
) -> tuple[int, int]:
    """Choose ``LONG_FROM`` and ``LONG_SPAN`` on the tuning halves only: for each grid point,
    move the ramp (``with_long``), cross-validate both models (``repeats`` x 5 folds, the long
    terms refitted in each fold) and take the point with the highest mean of the two models'
    criterion under ``rule``; ``KEPT[rule]`` stays when within ``TIES[rule]`` of it. The
    aligned model's fallback for answers without alignment is the lexical model fitted on all
    the tuning halves at the same grid point."""
    for s in signals.values():  # the ramp as computed here is the metric's
        assert np.array_equal(with_long(s, LONG_FROM, LONG_SPAN).x, s.x)
    weights = reliability_weights(signals, tuning)
    if rule == "weighted":
        shown = ", ".join(f"{row} {w:.0f}" for row, w in weights.items())
        print(f"reliability weights (1 / Hanley-McNeil variance): {shown}")
    table: dict[tuple[int, int], tuple[float, float]] = {}
    print(
        f"long-answer ramp, {repeats} x 5-fold CV inside the tuning halves, rule {rule}: "
        "out-of-fold AUC of the fit sets (Q-squared, BEGIN, covidqa, emanual), "
        "lexical / aligned / mean"
    )
    for start in LONG_FROM_GRID:
        for span in LONG_SPAN_GRID:
            moved = {n: with_long(s, start, span) for n, s in signals.items()}
            lexical = fit_weights(fit_sets(moved, tuning, MODELS["lexical"]), "lexical")
            values = []
            parts = []
            for model in MODELS:
                cv = cross_validate(moved, tuning, model, repeats, lexical)
                summed = criterion(cv)
                values.append(summed if rule == "summed" else weighted_criterion(cv, weights))
                parts.append(
                    " ".join(
                        f"{row.removeprefix('RAGBench/')} {a:.4f}" for row, (a, _) in cv.items()
                    )
                    + f" sum {summed:.4f}"
                )
            table[start, span] = (values[0], values[1])
            print(
                f"  from {start:>2} span {span:>2}: {values[0]:.4f} / {values[1]:.4f} / "
                f"{np.mean(values):.4f}   [lexical: {parts[0]}] [aligned: {parts[1]}]",
                flush=True,
            )
    kept, tie = KEPT[rule], TIES[rule]
    best = max(table, key=lambda point: float(np.mean(table[point])))
    best_mean = float(np.mean(table[best]))
    kept_mean = float(np.mean(table[kept]))
    chosen = kept if best_mean - kept_mean <= tie else best
    print(
        f"best: from {best[0]} span {best[1]} (mean {best_mean:.4f}); {kept} "
        f"{kept_mean:.4f} (behind by {best_mean - kept_mean:.4f}, tie within {tie}); "
        f"chosen: from {chosen[0]} span {chosen[1]}"
    )
    return chosen

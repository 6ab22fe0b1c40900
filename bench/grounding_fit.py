"""Fitting ``grounding_score``'s weights on the tuning halves (``grounding_auc.py --tune``).

The model has two parts (docs/grounding.md, "How the constants were chosen"):

* the **short-answer part** is the previous model, kept as it is: the weights fitted on the
  tuning halves of Q-squared and BEGIN (``PREVIOUS_*_2026_11_24``, a pairwise-logistic fit of
  dialogue answers of one or two sentences), with the personal and opener cues switched off
  in long answers (``long_personal`` = -``personal``, ``long_opener`` = -``opener``);
* the **long-answer and abstention terms** (``LONG_TERMS``) are fitted with that part's score
  as a fixed offset: a pairwise logistic loss (a smooth stand-in for 1 - AUC) over each fit
  set's positive/negative pairs, the sets' means added with weight 1 each, a ridge of 0.01 on
  the standardised weights. RAGBench's two shards (covidqa, emanual) are two fit sets: their
  base rates differ (84% and 89% adherent), and pairs across them would teach the score which
  shard an answer comes from.

The short-answer part keeps its intercept and scale, so a short answer gets exactly the score
it got before. Only the tuning halves are used."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ragmeter.metrics.grounding import (
    ALIGNED_SCORE_WEIGHTS,
    DEFAULT_SCORE_WEIGHTS,
    Aligner,
    ScoreWeights,
    assess,
)

# the weights shipped before issue 13's scorer changes (src/ragmeter/metrics/grounding/model.py
# as of 2026-11-24): the comparison of the report, and the short-answer part of today's fit
PREVIOUS_SCORE_WEIGHTS_2026_11_24 = ScoreWeights(
    intercept=-2.9,
    coverage=2.539,
    bigram=0.793,
    missing_numbers=-1.413,
    novel_terms=-0.16,
    personal=-0.634,
    word_recall=1.753,
    opener=-0.542,
)
PREVIOUS_ALIGNED_SCORE_WEIGHTS_2026_11_24 = ScoreWeights(
    intercept=-3.413,
    coverage=2.59,
    bigram=0.828,
    missing_numbers=-1.427,
    novel_terms=-0.04,
    personal=-0.489,
    word_recall=1.024,
    opener=-0.265,
    token_precision=0.194,
    weakest_token=1.461,
)
PREVIOUS = {
    "lexical": PREVIOUS_SCORE_WEIGHTS_2026_11_24,
    "aligned": PREVIOUS_ALIGNED_SCORE_WEIGHTS_2026_11_24,
}
SHIPPED = {"lexical": DEFAULT_SCORE_WEIGHTS, "aligned": ALIGNED_SCORE_WEIGHTS}

# the answer signals the score weighs, in ``ScoreWeights``' order (its fields but the intercept)
FEATURES = tuple(f.name for f in dataclasses.fields(ScoreWeights) if f.name != "intercept")
ALIGNMENT = ("token_precision", "weakest_token")
# the fitted terms: a long answer's own intercept, fact coverage, word recall and share of
# anchored claims, and the share of sentences that abstain (``long_relation_violations`` is
# left at 0: cross-validation on the tuning halves scores better without it)
LONG_TERMS = ("long", "abstains", "long_word_recall", "long_coverage", "long_anchored")
# the columns each model weighs: the lexical model leaves the word-piece alignment out
MODELS: dict[str, tuple[str, ...]] = {
    "lexical": tuple(f for f in FEATURES if f not in ALIGNMENT),
    "aligned": FEATURES,
}
L2 = 0.01  # ridge on the standardised weights
RAGBENCH = "RAGBench"
SUBSETS = ("covidqa", "emanual")


class Labelled(Protocol):
    """What the fit reads of a bench item (``grounding_auc.Item``)."""

    contexts: tuple[str, ...]
    response: str
    label: int
    subset: str

    @property
    def case_question(self) -> str: ...


@dataclass
class Signals:
    """Every item's answer signals (the metric's ``assess`` with the MiniLM aligner), whether it
    has claims, its label, its stemmed-recall baseline, its split group and RAGBench shard;
    and, for the answers the weights do not score, the score they get anyway (``fixed``: a
    yes/no answer read through its question, an NLI model; NaN elsewhere) or its cap (``cap``:
    a span answer read through its question is no higher than its claims' support; inf
    elsewhere). An answer without its alignment signals (one read through its question) is
    scored by the lexical weights."""

    x: np.ndarray
    has_claims: np.ndarray
    aligned: np.ndarray
    y: np.ndarray
    baseline: np.ndarray
    groups: list[str]
    subset: np.ndarray
    fixed: np.ndarray
    cap: np.ndarray
    # the answer's words and its anchored share (``AnswerSignals.words``, ``.anchored``; 0 and
    # 1 without signals): what ``with_long`` needs to move the long-answer ramp
    words: np.ndarray
    anchored: np.ndarray

    def weighed(self, index: np.ndarray, columns: tuple[str, ...]) -> np.ndarray:
        """The items of ``index`` that the weights score: the fit's rows (they have claims and
        no fixed score, and their alignment if ``columns`` has it)."""
        kept = self.has_claims[index] & np.isnan(self.fixed[index])
        if any(c in ALIGNMENT for c in columns):
            kept &= self.aligned[index]
        return np.asarray(index[kept])


def compute_signals(
    items: Sequence[Labelled], aligner: Aligner, baseline: Callable[[Any], float], groups: list[str]
) -> Signals:
    rows, has, aligned, fixed, cap, words, anchored = [], [], [], [], [], [], []
    for item in items:
        result = assess(
            item.response, list(item.contexts), aligner=aligner, question=item.case_question
        )
        signals = result.signals
        has.append(signals is not None)
        aligned.append(signals is not None and signals.aligned)
        values = signals.features() if signals is not None else {}
        rows.append([values.get(f, 0.0) for f in FEATURES])
        words.append(signals.words if signals is not None else 0)
        anchored.append(signals.anchored if signals is not None else 1.0)
        used = result.score_model
        weighed = used not in ("question", "nli")
        fixed.append(np.nan if weighed or result.score is None else result.score)
        supports = [c.support for c in result.claims]
        cap.append(min(supports) if weighed and result.asked is not None and supports else np.inf)
    return Signals(
        np.asarray(rows, dtype=float),
        np.asarray(has),
        np.asarray(aligned),
        np.asarray([i.label for i in items], dtype=float),
        np.asarray([baseline(i) for i in items]),
        groups,
        np.asarray([i.subset for i in items]),
        np.asarray(fixed, dtype=float),
        np.asarray(cap, dtype=float),
        np.asarray(words, dtype=float),
        np.asarray(anchored, dtype=float),
    )


# each ``long_`` column and the signal it multiplies by ``long`` (``AnswerSignals.features``;
# ``anchored`` is no column of its own)
LONG_PRODUCTS = {
    "long_personal": "personal",
    "long_opener": "opener",
    "long_coverage": "coverage",
    "long_word_recall": "word_recall",
    "long_relation_violations": "relation_violations",
    "long_anchored": "anchored",
}


def with_long(s: Signals, long_from: float, long_span: float) -> Signals:
    """``s`` with the long-answer ramp moved: ``long`` = clamp((words - long_from) /
    long_span, 0, 1), as ``AnswerSignals.long`` computes it with ``LONG_FROM`` and
    ``LONG_SPAN``, and every ``long_`` column recomputed from it (the other columns, the fixed
    scores and caps do not depend on the ramp)."""
    long = np.minimum(np.maximum((s.words - long_from) / long_span, 0.0), 1.0)
    long = np.where(s.has_claims, long, 0.0)
    x = s.x.copy()
    x[:, FEATURES.index("long")] = long
    for column, signal in LONG_PRODUCTS.items():
        values = s.anchored if signal == "anchored" else s.x[:, FEATURES.index(signal)]
        x[:, FEATURES.index(column)] = long * values
    return dataclasses.replace(s, x=x)


def fit_sets(
    signals: dict[str, Signals], index: dict[str, np.ndarray], columns: tuple[str, ...]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(features, labels) per fit set: the weighed items of ``index`` of each set, RAGBench
    cut into its shards."""
    sets: list[tuple[np.ndarray, np.ndarray]] = []
    for name, rows in index.items():
        s = signals[name]
        kept = s.weighed(rows, columns)
        parts = [kept[s.subset[kept] == sub] for sub in SUBSETS] if name == RAGBENCH else [kept]
        sets.extend((s.x[p], s.y[p]) for p in parts if len(set(s.y[p])) == 2)
    return sets


def fit_pairwise(
    sets: list[tuple[np.ndarray, np.ndarray, np.ndarray]], l2: float = L2
) -> np.ndarray:
    """Linear weights minimising the pairwise logistic loss
    log(1 + exp(-(s_pos - s_neg))), s = offset + x . w, averaged over each set's pairs and
    added over the sets, plus ``l2`` * |w|^2 / 2 (Newton steps). ``sets``: (x, y, offset)."""
    dim = sets[0][0].shape[1]
    diffs = []
    for x, y, offset in sets:
        pos, neg = y == 1, y == 0
        d = (x[pos][:, None, :] - x[neg][None, :, :]).reshape(-1, dim)
        fixed = (offset[pos][:, None] - offset[neg][None, :]).reshape(-1)
        diffs.append((d, fixed))
    w = np.zeros(dim)
    for _ in range(100):
        grad, hess = l2 * w, l2 * np.eye(dim)
        for d, fixed in diffs:
            p = 1.0 / (1.0 + np.exp(np.clip(d @ w + fixed, -50, 50)))
            grad = grad - (d * p[:, None]).mean(axis=0)
            hess = hess + (d * (p * (1 - p))[:, None]).T @ d / len(d)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w


def short_part(model: str) -> np.ndarray:
    """The short-answer part over ``FEATURES``: the previous weights, with the personal and
    opener cues cancelled in long answers."""
    previous = PREVIOUS[model]
    w = {f: getattr(previous, f) for f in MODELS[model]}
    w["long_personal"], w["long_opener"] = -previous.personal, -previous.opener
    for term in LONG_TERMS:
        w[term] = 0.0
    return np.array([w.get(f, 0.0) for f in FEATURES])


def fit_weights(sets: list[tuple[np.ndarray, np.ndarray]], model: str) -> ScoreWeights:
    """Fit ``LONG_TERMS`` with the short-answer part as offset and return the weights
    rounded to 3 decimals (the shipped constants). The short-answer part and its intercept
    are kept as they are, so a short answer gets exactly the previous model's score (the
    long-answer terms are on its scale: the pairs between short and long answers of a set
    fix them)."""
    base = short_part(model)
    cols = [FEATURES.index(t) for t in LONG_TERMS]
    stacked = np.vstack([x[:, cols] for x, _ in sets])
    mean, scale = stacked.mean(axis=0), stacked.std(axis=0) + 1e-9
    w = fit_pairwise([((x[:, cols] - mean) / scale, y, x @ base) for x, y in sets])
    coefficients = base.copy()
    coefficients[cols] = w / scale
    rounded = {f: round(float(v), 3) for f, v in zip(FEATURES, coefficients, strict=True)}
    intercept = PREVIOUS[model].intercept
    return ScoreWeights(intercept=intercept, **{f: rounded[f] for f in MODELS[model]})


def linear_score(
    weights: ScoreWeights, s: Signals, index: np.ndarray, lexical: ScoreWeights | None = None
) -> np.ndarray:
    """The metric's score on precomputed signals for the items in ``index``: the sigmoid of
    the linear score (capped, or replaced by a fixed score, as the metric does), and 0 for an
    answer without claims (the metric skips it; the AUC counts it as 0). With ``lexical``
    (aligned ``weights``), the answers without alignment signals are scored by it."""
    coef = np.array([getattr(weights, f) for f in FEATURES])
    linear = s.x[index] @ coef + weights.intercept
    if lexical is not None:
        fallback = s.x[index] @ np.array([getattr(lexical, f) for f in FEATURES])
        linear = np.where(s.aligned[index], linear, fallback + lexical.intercept)
    value = np.minimum(1.0 / (1.0 + np.exp(-np.clip(linear, -50, 50))), s.cap[index])
    value = np.where(np.isnan(s.fixed[index]), value, s.fixed[index])
    return np.where(s.has_claims[index], value, 0.0)


def fast_auc(scores: np.ndarray, y: np.ndarray) -> float:
    """Mann-Whitney AUC with ties as 0.5 (average ranks)."""
    order = np.argsort(scores, kind="mergesort")
    ranked = np.asarray(scores, dtype=float)[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
    ends = np.r_[starts[1:], len(ranked)]
    ranks = np.empty(len(ranked))
    ranks[order] = np.repeat((starts + 1 + ends) / 2, ends - starts)
    positive = np.asarray(y) == 1
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _folds(s: Signals, index: np.ndarray, folds: int, seed: int) -> np.ndarray:
    groups = [s.groups[i] for i in index]
    keys = list(dict.fromkeys(groups))
    order = list(range(len(keys)))
    random.Random(seed).shuffle(order)
    fold_of = {keys[i]: position % folds for position, i in enumerate(order)}
    return np.array([fold_of[g] for g in groups])


def cross_validate(
    signals: dict[str, Signals],
    tuning: dict[str, np.ndarray],
    model: str,
    repeats: int = 5,
    lexical: ScoreWeights | None = None,
) -> dict[str, tuple[float, float]]:
    """5-fold cross-validation inside the tuning halves (fit on 4 folds, score the fifth; the
    folds cut a set's groups), seeded repeats: per set, and per RAGBench shard
    ("RAGBench/covidqa", ...), the AUC of the pooled out-of-fold scores (mean over repeats)
    and its margin over stemmed recall. The aligned model scores the answers without
    alignment signals by ``lexical`` (default: the shipped lexical weights)."""
    columns = MODELS[model]
    lexical = (lexical or SHIPPED["lexical"]) if model == "aligned" else None
    # each reported row: its set and the positions (in the set's tuning half) of its items
    rows: dict[str, tuple[str, np.ndarray]] = {}
    for n, idx in tuning.items():
        rows[n] = (n, np.arange(len(idx)))
        if n == RAGBENCH:
            for sub in SUBSETS:
                rows[f"{n}/{sub}"] = (n, np.flatnonzero(signals[n].subset[idx] == sub))
    found: dict[str, list[float]] = {row: [] for row in rows}
    for repeat in range(repeats):
        fold_of = {n: _folds(signals[n], idx, 5, 100 + repeat) for n, idx in tuning.items()}
        scores = {n: np.zeros(len(idx)) for n, idx in tuning.items()}
        for k in range(5):
            train = {n: idx[fold_of[n] != k] for n, idx in tuning.items()}
            weights = fit_weights(fit_sets(signals, train, columns), model)
            for n, idx in tuning.items():
                test = fold_of[n] == k
                scores[n][test] = linear_score(weights, signals[n], idx[test], lexical)
        for row, (n, at) in rows.items():
            found[row].append(fast_auc(scores[n][at], signals[n].y[tuning[n][at]]))
    result = {}
    for row, (n, at) in rows.items():
        items = tuning[n][at]
        baseline = fast_auc(signals[n].baseline[items], signals[n].y[items])
        result[row] = (float(np.mean(found[row])), float(np.mean(found[row])) - baseline)
    return result


def tune(
    signals: dict[str, Signals],
    halves: dict[str, tuple[np.ndarray, np.ndarray]],
    fit_names: list[str],
) -> dict[str, ScoreWeights]:
    """Fit both models on the tuning halves of ``fit_names`` only and print them as shipped
    constants."""
    tuning = {name: halves[name][0] for name in fit_names}
    print(f"fitted on the tuning halves of {', '.join(fit_names)}")
    print("single-signal AUC on the tuning halves (answers with claims):")
    for feature in FEATURES:
        column = FEATURES.index(feature)
        parts = []
        for name, s in signals.items():
            kept = s.weighed(halves[name][0], (feature,))
            parts.append(f"{name} {fast_auc(s.x[kept, column], s.y[kept]):.3f}")
        print(f"  {feature:<24} " + ", ".join(parts))
    fitted = {}
    for model in MODELS:
        cv = cross_validate(signals, tuning, model)
        print(
            f"{model} model, 5-fold CV inside the tuning halves (5 repeats): pooled out-of-fold "
            "AUC (margin over stemmed recall): "
            + ", ".join(f"{n} {a:.3f} ({m:+.3f})" for n, (a, m) in cv.items())
        )
        fitted[model] = fit_weights(fit_sets(signals, tuning, MODELS[model]), model)
        print(f"  fitted:  {fitted[model]}")
        print(f"  shipped: {SHIPPED[model]}")
    return fitted


def repeated_splits(
    signals: dict[str, Signals],
    baselines: dict[str, dict[str, np.ndarray]],
    fit_names: list[str],
    n_splits: int,
    halves_of: Callable[[list[str], int], tuple[np.ndarray, np.ndarray]],
) -> None:
    """The fitting procedure judged on many splits: for each seed, refit the long-answer terms
    on that seed's tuning halves, then measure the held-out halves against each baseline and
    the previous weights (on today's signals). The short-answer part stays the previous
    model, which was fitted on the seed-0 tuning halves of Q-squared and BEGIN, so those two
    sets' held-out halves under another seed are not fully held out; the splits share items,
    so they are not independent samples either."""
    for model, columns in MODELS.items():
        lexical = SHIPPED["lexical"] if model == "aligned" else None
        previous_lexical = PREVIOUS["lexical"] if model == "aligned" else None
        versus = [*next(iter(baselines.values())), "previous"]
        margins: dict[str, dict[str, list[float]]] = {n: {b: [] for b in versus} for n in signals}
        aucs: dict[str, list[float]] = {n: [] for n in signals}
        for seed in range(n_splits):
            halves = {name: halves_of(s.groups, seed) for name, s in signals.items()}
            train = {name: halves[name][0] for name in fit_names}
            weights = fit_weights(fit_sets(signals, train, columns), model)
            for name, (_, test) in halves.items():
                s = signals[name]
                ours = fast_auc(linear_score(weights, s, test, lexical), s.y[test])
                aucs[name].append(ours)
                for b, values in baselines[name].items():
                    margins[name][b].append(ours - fast_auc(values[test], s.y[test]))
                previous = linear_score(PREVIOUS[model], s, test, previous_lexical)
                margins[name]["previous"].append(ours - fast_auc(previous, s.y[test]))
        print(f"\n{model} model, {n_splits} seeded 50/50 splits, refit on each tuning half:")
        print(
            "held-out AUC (mean) and margin over each baseline and over the previous weights "
            "(on today's signals): mean, splits with a gain"
        )
        for name, by_base in margins.items():
            parts = [
                f"{b} {np.mean(v):+.4f} ({sum(m > 0 for m in v)}/{n_splits})"
                for b, v in by_base.items()
            ]
            print(f"  {name:<10} AUC {np.mean(aucs[name]):.4f}; " + "; ".join(parts))

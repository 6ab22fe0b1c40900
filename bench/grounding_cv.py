"""Grouped cross-validation of ``grounding_score`` over five families of human labels (issue 32).

The procedure below was written down and committed before any of its figures was computed.

Families (development data only; no public test half of any benchmark is read or fitted)
-----------------------------------------------------------------------------------------
1. **Q-squared** (``../shared/datasets/faithfulness/q_squared``, 600 dialogue responses,
   consistent / inconsistent). Group: the dialogue (``episode_idx``), so every answer of one
   dialogue, by either generator, is in one fold.
2. **BEGIN** dev, WoW part (430 responses, fully attributable or not). Group: the dialogue turn
   (the knowledge and the message), so the answers of several generators to one turn share a
   fold.
3. **RAGBench** samples (``../shared/datasets/hf_samples/ragbench``: covidqa and emanual, 378
   answers, ``adherence_score``; ``bench/ragbench_data.py``). Group: shard and question. Source
   (below): the shard.
4. **AttributionBench id** dev (``../shared/datasets/grounding_rag/attributionbench_id_dev.jsonl``,
   800 claims; label 1 = attributable). Group: the question, lower-cased and whitespace-collapsed
   (as the file's dev/test split was made). Source: its ``source`` field.
5. **AttributionBench ood** dev (``attributionbench_ood_dev.jsonl``, 567 claims), the same way.

Each item becomes one case as a run builds it: the contexts are the retrieved chunks (one chunk
per context / document), the answer (a whole response, or AttributionBench's one claim) is the
answer, and the dialogue's last message or the question is the case's question.

Scores
------
Every score goes through the metric's own code, as ``bench/grounding_auc.py`` does:
``grounding_metrics(MetricSettings(...))`` and ``score_case`` for ``grounding_score`` (the
default ``aligned`` model, ``grounding_model: auto`` with MiniLM, and the ``lexical`` model) and
for ``claim_support_rate``; the family's batch ``prepare`` runs first. An answer the metric
skips (a refusal, no checkable claim) counts as 0 for the AUC; the counts are printed.
**Content-token recall** is the share of the answer's tokens (``ragmeter.text.tokenize``: lower
case, stop words out, light stemming) found in the contexts joined.

The candidate forms are fitted on the answer signals the metric computes (``assess`` with the
MiniLM aligner, ``AnswerSignals.features()``) and scored by the metric's formula on them
(sigmoid of the linear score; a yes/no answer read through its question keeps its fixed score,
a span answer read through its question is capped by its claims' support, the aligned model
scores an answer without alignment by the lexical weights; ``grounding_fit.linear_score``).
Before anything is fitted the script checks that this fast path with the shipped weights gives
the ``score_case`` value of every scored item to 1e-9, and stops if it does not.

Signals that token recall cannot see (candidates)
-------------------------------------------------
Added to ``AnswerSignals`` with weight 0 in the shipped model (so adding them changes no shipped
score), each with a declared direction:

* ``relation_violations`` (exists): key terms (names, numbers, absolute qualifiers) the context
  binds to something else, and qualifiers of the best window the claim lost ("formerly",
  "nearly", "may"), at most 2 per claim. Direction: negative.
* ``negation``: share of the claims whose negation differs from their best context sentence's.
  Direction: negative.
* ``absent_names``: log(1 + names of the claims, capitalised key terms, that the context does not
  have at all). Direction: negative.
* ``number_binding``: a number's proximity to its subject: for each number of a claim that the
  context has, the best share of the claim's other terms in one context window that holds it;
  the lowest over the answer's numbers (1 without such numbers). Direction: positive.
* ``sentence_coverage``: the claims' terms found together: the term-weighted mean over the
  claims of the best share of a claim's terms in one context sentence. Direction: positive.

Candidate forms (each has a lexical variant and an aligned one; the aligned one adds
``token_precision`` and ``weakest_token``)
-------------------------------------------------------------------------------------------
Let S be the shipped terms (``coverage``, ``bigram``, ``missing_numbers``, ``novel_terms``,
``personal``, ``word_recall``, ``opener``, ``long``, ``abstains``, ``long_personal``,
``long_opener``, ``long_coverage``, ``long_word_recall``, ``long_anchored``), N the five
candidate signals above, and C the compact set (``coverage``, ``word_recall``,
``missing_numbers``, ``novel_terms``, ``abstains``).

* ``shipped``: the shipped weights, nothing fitted;
* ``shipped+X`` for each X in N (five forms): the shipped linear score as a fixed offset (its
  intercept and scale kept), the weight of X fitted;
* ``shipped+N``: the same with all five fitted;
* ``refit S``, ``refit S+N``, ``refit C``, ``refit C+N``: every weight of the form fitted
  afresh (``long_personal`` and ``long_opener`` free), then a logistic calibration.

"The shipped weights" are the weights in ``model.py`` when this procedure was fixed, pinned in
this file (``WEIGHTS_BEFORE_ISSUE_32``), so a rerun after they change runs the same procedure.

Terms of a form: the number of its non-zero weights, intercept not counted, lexical variant
(``shipped`` 14, ``shipped+X`` 15, ``shipped+N`` 19, ``refit S`` 14, ``refit S+N`` 19,
``refit C`` 5, ``refit C+N`` 10).

Fit
---
The pairwise logistic loss log(1 + exp(-(s_pos - s_neg))), a smooth stand-in for 1 - AUC, over
the (supported, unsupported) pairs of one family and one source (RAGBench's shard,
AttributionBench's ``source``; Q-squared and BEGIN are one source each: pairs across sources
would reward whatever tells the sources apart), each family's mean pair loss with weight 1,
ridge 0.01 on the standardised terms (standardised over the training rows), Newton steps
(``grounding_fit.fit_pairwise``; halved where a full step would raise the loss, a fix made
after the first run, whose undamped calibration diverged for the aligned refit forms). Only the
answers the weights score are fitted (claims, no fixed question score, not skipped by the
metric; the aligned variant: with alignment). A refit
form then gets a logistic calibration a * z + b on the same training rows, each family's rows
weighing 1 in all, so its values are on a probability scale (this matters only where the score
is capped or mixed with a fixed one). The aligned variant's fallback for an answer without
alignment is the lexical variant fitted on the same rows.

Cross-validation
----------------
K = 5 folds, R = 5 repeats. In repeat r each family's distinct groups are shuffled with
``random.Random(1000 + r)`` and dealt to the folds in turn. For each fold k a form is fitted
on the other four folds of all five families together and scores fold k of every family; the
out-of-fold scores of a family are pooled and give one AUC per repeat (Mann-Whitney, ties 0.5);
the **CV AUC** is the mean over the R repeats. A score with nothing to fit (the shipped
weights, ``claim_support_rate``, token recall) scores every fold as it is, so its CV AUC is its
AUC on the whole family.

Intervals: a paired bootstrap of each family's groups, 1,000 resamples, seeded (0): the same
resampled groups for every column; a CV column's AUC in a resample is the mean over the R
repeats of the AUC of its out-of-fold scores on the resampled items. 95% percentile intervals
of each AUC and of the difference of each ``grounding_score`` column to token recall.

Choosing the form (fixed before any figure was seen)
----------------------------------------------------
1. **Sign rule**: a form whose fit on all items of the five families gives one of the
   candidate signals N the wrong sign (either variant) is out.
2. **Eligibility**: a form whose difference to token recall has a 95% interval with its upper
   end <= 0 on some family (either variant) is out, unless every form is out by this rule, in
   which case rule 2 is dropped (and the acceptance below is reported as not met).
3. **Criterion**: the mean CV AUC over the five families and the two variants. The best form
   by it is found; every form within 0.002 of it ties, and of the tied forms the one with the
   fewest terms is chosen (then the higher criterion).

If the chosen form is not ``shipped``, its fit on all items of the five families (rounded to 3
decimals) becomes ``DEFAULT_SCORE_WEIGHTS`` and ``ALIGNED_SCORE_WEIGHTS`` in
``src/ragmeter/metrics/grounding/model.py``; the long-answer ramp (20 to 30 words) and the
anchored threshold stay as shipped. The figures reported for the new shipped score are its
form's out-of-fold CV figures, not the in-sample AUC of weights fitted on all items.

Acceptance (issue 32): for each family, the shipped ``grounding_score`` (aligned, the default)
is not below token recall: the upper end of the 95% interval of its difference is above 0;
"better" where the lower end is above 0 too.

Caveats stated with the figures: the previously shipped weights were fitted on seed-0 tuning
halves of Q-squared, BEGIN and RAGBench, so their AUC on those families is partly in-sample;
choosing among the forms by the same cross-validation that reports the chosen one makes its
CV AUC slightly optimistic.

    python bench/grounding_cv.py                    # the whole procedure, about 15 minutes
    python bench/grounding_cv.py --repeats 1 --resamples 200   # a quick look
    python bench/grounding_cv.py --print-weights    # also print the chosen fit as constants

Reading RAGBench needs ``pyarrow`` (the ``bench`` extra); MiniLM needs the ``semantic`` extra.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import pickle
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import ragbench_data  # bench/ is on sys.path when the script runs
from grounding_auc import DATA, Item, token_recall
from grounding_fit import FEATURES, Signals, compute_signals, fast_auc, linear_score
from ragmeter.embedders import build_embedder
from ragmeter.metrics.base import Metric, MetricSettings, score_case
from ragmeter.metrics.grounding import (
    ALIGNED_SCORE_WEIGHTS,
    DEFAULT_SCORE_WEIGHTS,
    TOKEN_MODEL,
    ScoreWeights,
    grounding_metrics,
    token_aligner,
)
from ragmeter.models import Case, CaseResult, Response, RetrievedChunk

FOLDS = 5
REPEATS = 5
RESAMPLES = 1000
FOLD_SEED = 1000  # repeat r shuffles the groups with random.Random(FOLD_SEED + r)
BOOTSTRAP_SEED = 0
TIE = 0.002  # criterion ties: the fewest terms wins
L2 = 0.01
CHECK_TOLERANCE = 1e-9

GROUNDING_RAG = DATA.parent / "grounding_rag"
FAMILIES = ("Q-squared", "BEGIN", "RAGBench", "AttributionBench id", "AttributionBench ood")
VARIANTS = ("aligned", "lexical")

# the candidate signals and their declared directions (+1: evidence of support)
CANDIDATES = {
    "relation_violations": -1,
    "negation": -1,
    "absent_names": -1,
    "number_binding": +1,
    "sentence_coverage": +1,
}
SHIPPED_TERMS = (
    "coverage",
    "bigram",
    "missing_numbers",
    "novel_terms",
    "personal",
    "word_recall",
    "opener",
    "long",
    "abstains",
    "long_personal",
    "long_opener",
    "long_coverage",
    "long_word_recall",
    "long_anchored",
)
COMPACT_TERMS = ("coverage", "word_recall", "missing_numbers", "novel_terms", "abstains")
ALIGNMENT_TERMS = ("token_precision", "weakest_token")

# the weights shipped when this procedure was fixed (model.py at commit 9aefe07): the
# ``shipped`` form and the offset of the ``shipped+`` forms, pinned so that a rerun after the
# shipped weights change runs the same procedure
WEIGHTS_BEFORE_ISSUE_32 = {
    "lexical": ScoreWeights(
        intercept=-2.9,
        coverage=2.539,
        bigram=0.793,
        missing_numbers=-1.413,
        novel_terms=-0.16,
        personal=-0.634,
        word_recall=1.753,
        opener=-0.542,
        long=-1.331,
        abstains=13.516,
        long_personal=0.634,
        long_opener=0.542,
        long_coverage=-7.613,
        long_word_recall=7.478,
        long_anchored=0.753,
    ),
    "aligned": ScoreWeights(
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
        long=-1.145,
        abstains=13.358,
        long_personal=0.489,
        long_opener=0.265,
        long_coverage=-8.069,
        long_word_recall=7.936,
        long_anchored=0.647,
    ),
}
SHIPPED_NOW = {"lexical": DEFAULT_SCORE_WEIGHTS, "aligned": ALIGNED_SCORE_WEIGHTS}


# --- the families ---------------------------------------------------------------------------


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def load_q_squared() -> list[Item]:
    """Q-squared; the group is the dialogue (``episode_idx``, shared by both generators)."""
    items = []
    for path in sorted((DATA / "q_squared").glob("*.csv")):
        label = 0 if "inconsistent" in path.name else 1
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                group = f"dialogue {row['episode_idx']}"
                items.append(
                    Item((row["knowledge"],), row["response"], row["message"], label, group)
                )
    return items


def load_begin() -> list[Item]:
    """BEGIN dev (WoW); the group is the dialogue turn (its knowledge and message)."""
    path = DATA / "begin" / "begin_dev_wow.tsv"
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [
            Item(
                (row["knowledge"],),
                row["response"],
                row["message"],
                int(row["begin_label"] == "Fully attributable"),
                f"{_collapse(row['knowledge'])}\x00{_collapse(row['message'])}",
            )
            for row in reader
        ]


def load_ragbench() -> list[Item]:
    """RAGBench's two shards; the group is the shard and question, the source the shard."""
    return [
        Item(row.documents, row.response, row.question, row.label, row.group, row.subset)
        for row in ragbench_data.load_rows()
    ]


def load_attribution(part: str) -> list[Item]:
    """AttributionBench ``part`` ("id" or "ood") dev; the group is the collapsed question."""
    path = GROUNDING_RAG / f"attributionbench_{part}_dev.jsonl"
    items = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            items.append(
                Item(
                    tuple(str(c) for c in row["contexts"]),
                    str(row["answer"]),
                    str(row["question"]),
                    int(row["label"]),
                    _collapse(str(row["question"])),
                    str(row["source"]),
                )
            )
    return items


def load_families() -> dict[str, list[Item]]:
    return {
        "Q-squared": load_q_squared(),
        "BEGIN": load_begin(),
        "RAGBench": load_ragbench(),
        "AttributionBench id": load_attribution("id"),
        "AttributionBench ood": load_attribution("ood"),
    }


# --- the metric's own scores ----------------------------------------------------------------


@dataclass
class MetricScores:
    """Per item, through ``score_case``: ``grounding_score`` and ``claim_support_rate`` (None
    where the metric skipped the item) and the score model that scored it."""

    grounding: list[float | None]
    support_rate: list[float | None]
    used: Counter[str]


def _metric(metrics: list[Metric], name: str) -> Metric:
    return next(m for m in metrics if m.name == name)


def metric_scores(items: list[Item], model: str) -> MetricScores:
    """The shipped metrics on ``items`` as a run scores them (batch ``prepare`` first), with
    ``grounding_model`` "auto" (the aligned model) or "lexical"."""
    metrics = grounding_metrics(MetricSettings(grounding_model=model))
    score, rate = _metric(metrics, "grounding_score"), _metric(metrics, "claim_support_rate")
    pairs = []
    for number, item in enumerate(items):
        case = Case(case_id=str(number), question=item.case_question)
        chunks = [RetrievedChunk(id=f"k{i}", text=t) for i, t in enumerate(item.contexts)]
        pairs.append((case, Response(answer=item.response, retrieved=chunks)))
    assert score.prepare is not None
    score.prepare(pairs)
    found = MetricScores([], [], Counter())
    expected = ("aligned", "question", "lexical") if model == "auto" else ("lexical", "question")
    for case, response in pairs:
        result = CaseResult(case_id=case.case_id, status="ok", response=response)
        value = score_case(score, case, result)
        if value.status == "failed":
            raise RuntimeError(f"grounding_score failed: {value.reason}")
        if value.value is not None:
            used = str(value.details.get("score_model"))
            if used not in expected:
                raise RuntimeError(f"case {case.case_id}: scored by {used}")
            found.used[used] += 1
        found.grounding.append(value.value)
        support = score_case(rate, case, result)
        if support.status == "failed":
            raise RuntimeError(f"claim_support_rate failed: {support.reason}")
        found.support_rate.append(support.value)
    return found


@dataclass
class Family:
    """One family's items, labels, groups and sources, the metric's scores, token recall and
    the answer signals the forms are fitted on."""

    name: str
    items: list[Item]
    y: np.ndarray
    groups: list[str]
    sources: np.ndarray
    metric: dict[str, MetricScores]  # by variant
    recall: np.ndarray
    signals: Signals

    def fixed_columns(self) -> dict[str, np.ndarray]:
        """The scores with nothing to fit (a skipped item counts 0)."""

        def zeroed(values: list[float | None]) -> np.ndarray:
            return np.array([0.0 if v is None else v for v in values])

        return {
            "grounding_score aligned (shipped)": zeroed(self.metric["aligned"].grounding),
            "grounding_score lexical (shipped)": zeroed(self.metric["lexical"].grounding),
            "claim_support_rate": zeroed(self.metric["aligned"].support_rate),
            "token recall": self.recall,
        }


def build_family(name: str, items: list[Item], aligner: Any) -> Family:
    started = time.perf_counter()
    metric = {"aligned": metric_scores(items, "auto"), "lexical": metric_scores(items, "lexical")}
    groups = [item.group or f"#{i}" for i, item in enumerate(items)]
    signals = compute_signals(items, aligner, token_recall, groups)
    # an item the metric skips (a refusal) is neither fitted nor scored by a form
    skipped = np.array([v is None for v in metric["aligned"].grounding])
    signals.has_claims &= ~skipped
    family = Family(
        name,
        items,
        np.array([item.label for item in items]),
        groups,
        np.array([item.subset for item in items]),
        metric,
        np.array([token_recall(item) for item in items]),
        signals,
    )
    print(
        f"  {name}: {len(items)} items, {len(set(groups))} groups, "
        f"{int((family.y == 0).sum())} unsupported; skipped by grounding_score "
        f"{int(skipped.sum())}, by claim_support_rate "
        f"{sum(v is None for v in metric['aligned'].support_rate)}; aligned run: "
        + ", ".join(f"{k} {v}" for k, v in metric["aligned"].used.items())
        + f" ({time.perf_counter() - started:.0f} s)",
        flush=True,
    )
    return family


def check_fast_path(families: dict[str, Family]) -> None:
    """The forms' formula on the precomputed signals gives ``score_case``'s value of every
    scored item with the shipped weights, both variants; stop otherwise."""
    worst = 0.0
    for family in families.values():
        s = family.signals
        every = np.arange(len(family.items))
        fast = {
            "lexical": linear_score(SHIPPED_NOW["lexical"], s, every),
            "aligned": linear_score(
                SHIPPED_NOW["aligned"], s, every, lexical=SHIPPED_NOW["lexical"]
            ),
        }
        for variant in VARIANTS:
            for i, value in enumerate(family.metric[variant].grounding):
                expected = 0.0 if value is None else value
                # the lexical run reads a refusal as the aligned run does: both skip it
                if value is None and s.has_claims[i]:
                    raise RuntimeError(f"{family.name} #{i}: skipped by the {variant} run only")
                worst = max(worst, abs(fast[variant][i] - expected))
    if worst > CHECK_TOLERANCE:
        raise RuntimeError(f"the fast path differs from score_case by up to {worst:.2e}")
    print(f"fast path = score_case on every item, both variants (largest difference {worst:.1e})")


# --- the forms ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Form:
    name: str
    terms: tuple[str, ...]  # the fitted terms (lexical variant)
    offset: bool  # the pinned shipped score as a fixed offset (its intercept and scale kept)

    def columns(self, variant: str) -> tuple[str, ...]:
        if self.offset or not self.terms:
            return self.terms
        return self.terms + (ALIGNMENT_TERMS if variant == "aligned" else ())

    @property
    def size(self) -> int:
        """Non-zero weights of the lexical variant, intercept not counted."""
        if self.offset or not self.terms:
            return len(SHIPPED_TERMS) + len(self.terms)
        return len(self.terms)


NEW = tuple(CANDIDATES)
FORMS = (
    Form("shipped", (), False),
    *(Form(f"shipped+{x}", (x,), True) for x in NEW),
    Form("shipped+N", NEW, True),
    Form("refit S", SHIPPED_TERMS, False),
    Form("refit S+N", SHIPPED_TERMS + NEW, False),
    Form("refit C", COMPACT_TERMS, False),
    Form("refit C+N", COMPACT_TERMS + NEW, False),
)


def _vector(weights: ScoreWeights) -> np.ndarray:
    return np.array([getattr(weights, f) for f in FEATURES])


def _weights(intercept: float, coefficients: np.ndarray) -> ScoreWeights:
    return ScoreWeights(
        intercept=float(intercept),
        **{f: float(v) for f, v in zip(FEATURES, coefficients, strict=True)},
    )


@dataclass
class FitRows:
    """A fit's training rows per family (the weighed ones of one variant), with each family's
    within-source (supported, unsupported) pairs."""

    rows: dict[str, np.ndarray]
    pairs: dict[str, tuple[np.ndarray, np.ndarray]]


def fit_rows(families: dict[str, Family], train: dict[str, np.ndarray], variant: str) -> FitRows:
    columns = ALIGNMENT_TERMS if variant == "aligned" else ()
    rows, pairs = {}, {}
    for name, index in train.items():
        family = families[name]
        kept = family.signals.weighed(index, columns)
        positive, negative = [], []
        for source in sorted(set(family.sources[kept])):
            at = kept[family.sources[kept] == source]
            pos, neg = at[family.y[at] == 1], at[family.y[at] == 0]
            positive.append(np.repeat(pos, len(neg)))
            negative.append(np.tile(neg, len(pos)))
        rows[name] = kept
        empty = np.zeros(0, dtype=int)
        pairs[name] = (np.concatenate([empty, *positive]), np.concatenate([empty, *negative]))
    return FitRows(rows, pairs)


def _newton(
    loss: Callable[[np.ndarray], tuple[float, np.ndarray, np.ndarray]], dim: int
) -> np.ndarray:
    """The minimum of a convex ``loss`` (value, gradient, Hessian) from 0: Newton steps,
    halved until the loss does not rise (a plain Newton step can overshoot and diverge)."""
    w = np.zeros(dim)
    value, grad, hess = loss(w)
    for _ in range(200):
        step = np.linalg.solve(hess, grad)
        size = 1.0
        while True:
            trial = w - size * step
            new_value, new_grad, new_hess = loss(trial)
            if new_value <= value + 1e-12 or size < 1e-8:
                break
            size /= 2
        w, value, grad, hess = trial, new_value, new_grad, new_hess
        if np.abs(size * step).max() < 1e-10:
            break
    return w


def _pairwise(diffs: list[tuple[np.ndarray, np.ndarray]], dim: int, l2: float = L2) -> np.ndarray:
    """Weights minimising each family's mean pairwise logistic loss, added over the families,
    plus ``l2`` |w|^2 / 2. ``diffs``: per family (x_pos - x_neg, offset diff)."""

    def loss(w: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        value, grad, hess = l2 * float(w @ w) / 2, l2 * w, l2 * np.eye(dim)
        for d, fixed in diffs:
            if not len(d):
                continue
            margin = d @ w + fixed
            value += float(np.logaddexp(0.0, -margin).mean())
            p = 1.0 / (1.0 + np.exp(np.clip(margin, -50, 50)))
            grad = grad - (d * p[:, None]).mean(axis=0)
            hess = hess + (d * (p * (1 - p))[:, None]).T @ d / len(d)
        return value, grad, hess

    return _newton(loss, dim)


def _calibrate(z: list[np.ndarray], y: list[np.ndarray]) -> tuple[float, float]:
    """(a, b) of a logistic regression of y on a * z + b, each family's rows weighing 1."""

    def loss(ab: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        value, grad, hess = 0.0, np.zeros(2), 1e-9 * np.eye(2)
        for zf, yf in zip(z, y, strict=True):
            if not len(zf):
                continue
            t = ab[0] * zf + ab[1]
            value += float((np.logaddexp(0.0, t) - yf * t).mean())
            p = 1.0 / (1.0 + np.exp(-np.clip(t, -50, 50)))
            x = np.stack([zf, np.ones_like(zf)], axis=1)
            grad = grad + x.T @ (p - yf) / len(zf)
            hess = hess + (x * (p * (1 - p))[:, None]).T @ x / len(zf)
        return value, grad, hess

    a, b = _newton(loss, 2)
    return float(a), float(b)


def fit_form(form: Form, variant: str, families: dict[str, Family], fit: FitRows) -> ScoreWeights:
    """The form's weights fitted on ``fit``'s rows (see the module doc)."""
    base = WEIGHTS_BEFORE_ISSUE_32[variant]
    if not form.terms:
        return base
    columns = form.columns(variant)
    at = [FEATURES.index(c) for c in columns]
    offset_coef = _vector(base) if form.offset else np.zeros(len(FEATURES))
    stacked = np.vstack([families[n].signals.x[r][:, at] for n, r in fit.rows.items()])
    scale = stacked.std(axis=0) + 1e-9  # differences of pairs: no centring needed
    diffs = []
    for name, (pos, neg) in fit.pairs.items():
        x = families[name].signals.x
        d = (x[pos][:, at] - x[neg][:, at]) / scale
        fixed = (x[pos] - x[neg]) @ offset_coef
        diffs.append((d, fixed))
    w = _pairwise(diffs, len(at)) / scale
    coefficients = offset_coef.copy()
    coefficients[at] += w
    if form.offset:
        return _weights(base.intercept, coefficients)
    z = [families[n].signals.x[r] @ coefficients for n, r in fit.rows.items()]
    y = [families[n].y[r].astype(float) for n, r in fit.rows.items()]
    a, b = _calibrate(z, y)
    return _weights(b, a * coefficients)


def score_form(
    weights: dict[str, ScoreWeights], family: Family, index: np.ndarray
) -> dict[str, np.ndarray]:
    """Both variants' scores of ``index`` (the aligned one falls back to the lexical weights)."""
    s = family.signals
    return {
        "lexical": linear_score(weights["lexical"], s, index),
        "aligned": linear_score(weights["aligned"], s, index, lexical=weights["lexical"]),
    }


# --- cross-validation -----------------------------------------------------------------------


def fold_of(groups: list[str], folds: int, seed: int) -> np.ndarray:
    """Each item's fold: the distinct groups shuffled with ``random.Random(seed)`` and dealt
    to the folds in turn."""
    keys = list(dict.fromkeys(groups))
    random.Random(seed).shuffle(keys)
    fold = {key: position % folds for position, key in enumerate(keys)}
    return np.array([fold[g] for g in groups])


# out-of-fold scores: form -> variant -> family -> one array per repeat
OutOfFold = dict[str, dict[str, dict[str, list[np.ndarray]]]]


def cross_validate(families: dict[str, Family], folds: int, repeats: int) -> OutOfFold:
    found: OutOfFold = {f.name: {v: {n: [] for n in families} for v in VARIANTS} for f in FORMS}
    for repeat in range(repeats):
        started = time.perf_counter()
        assigned = {n: fold_of(f.groups, folds, FOLD_SEED + repeat) for n, f in families.items()}
        scores = {
            f.name: {
                v: {n: np.zeros(len(fam.items)) for n, fam in families.items()} for v in VARIANTS
            }
            for f in FORMS
        }
        for k in range(folds):
            train = {n: np.flatnonzero(a != k) for n, a in assigned.items()}
            test = {n: np.flatnonzero(a == k) for n, a in assigned.items()}
            rows = {v: fit_rows(families, train, v) for v in VARIANTS}
            for form in FORMS:
                weights = {v: fit_form(form, v, families, rows[v]) for v in VARIANTS}
                for name, family in families.items():
                    for v, values in score_form(weights, family, test[name]).items():
                        scores[form.name][v][name][test[name]] = values
        for form in FORMS:
            for v in VARIANTS:
                for name in families:
                    found[form.name][v][name].append(scores[form.name][v][name])
        print(f"  repeat {repeat}: {time.perf_counter() - started:.0f} s", flush=True)
    return found


# --- bootstrap ------------------------------------------------------------------------------


def resamples(family: Family, count: int, index: np.ndarray | None = None) -> list[np.ndarray]:
    """``count`` resamples of the family's groups (seeded), as item index arrays, over the
    items of ``index`` (default all); a resample with one label only is left out."""
    members: dict[str, list[int]] = {}
    for i in range(len(family.groups)) if index is None else index:
        members.setdefault(family.groups[i], []).append(int(i))
    blocks = [np.array(b) for b in members.values()]
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    found = []
    for _ in range(count):
        picked = np.concatenate([blocks[k] for k in rng.integers(0, len(blocks), len(blocks))])
        if 0 < family.y[picked].sum() < len(picked):
            found.append(picked)
    return found


def _aucs(column: list[np.ndarray], y: np.ndarray, picks: list[np.ndarray]) -> np.ndarray:
    """Per resample, the mean over the column's repeats of the AUC on the resampled items."""
    return np.array([np.mean([fast_auc(c[p], y[p]) for c in column]) for p in picks])


@dataclass
class Figure:
    auc: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.auc:.3f} [{self.low:.3f}, {self.high:.3f}]"

    def signed(self) -> str:
        return f"{self.auc:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def figure(value: float, draws: np.ndarray) -> Figure:
    low, high = np.percentile(draws, [2.5, 97.5])
    return Figure(value, float(low), float(high))


def column_auc(column: list[np.ndarray], y: np.ndarray) -> float:
    return float(np.mean([fast_auc(c, y) for c in column]))


# --- the choice -----------------------------------------------------------------------------


def wrong_signs(weights: dict[str, ScoreWeights]) -> list[str]:
    """The candidate signals whose weight has the wrong sign in either variant."""
    return [
        f"{v} {name} {getattr(w, name):+.3f}"
        for v, w in weights.items()
        for name, direction in CANDIDATES.items()
        if getattr(w, name) * direction < 0
    ]


def choose(
    criterion: dict[str, float],
    eligible: dict[str, bool],
    signs_ok: dict[str, bool],
) -> tuple[str, bool]:
    """The chosen form and whether rule 2 (eligibility) held for some form (module doc)."""
    signed = [f for f in FORMS if signs_ok[f.name]]
    kept = [f for f in signed if eligible[f.name]]
    rule_two = bool(kept)
    if not kept:
        kept = signed
    best = max(criterion[f.name] for f in kept)
    tied = [f for f in kept if criterion[f.name] >= best - TIE]
    chosen = min(tied, key=lambda f: (f.size, -criterion[f.name]))
    return chosen.name, rule_two


# --- main -----------------------------------------------------------------------------------


def compute(cache: Path | None) -> dict[str, Family]:
    if cache is not None and cache.is_file():
        with cache.open("rb") as handle:
            families: dict[str, Family] = pickle.load(handle)
        print(f"signals and metric scores read from {cache}")
        return families
    print("scoring every item through the metric (aligned and lexical) and computing signals:")
    aligner = token_aligner(build_embedder(TOKEN_MODEL))
    families = {name: build_family(name, items, aligner) for name, items in load_families().items()}
    if cache is not None:
        with cache.open("wb") as handle:
            pickle.dump(families, handle)
    return families


def print_weights(name: str, weights: dict[str, ScoreWeights]) -> None:
    print(f"\nthe {name} form fitted on all items of the five families (3 decimals):")
    for variant, w in weights.items():
        values = {k: round(v, 3) for k, v in dataclasses.asdict(w).items() if round(v, 3) != 0}
        print(
            f"  {variant}: ScoreWeights(" + ", ".join(f"{k}={v}" for k, v in values.items()) + ")"
        )


def diagnose_skips(families: dict[str, Family], count: int) -> None:
    """A diagnostic, not part of the procedure (it decides nothing): the answers
    ``grounding_score`` skips count 0 in the AUCs above; here are their labels, and the AUCs
    on the answers it scores, skips left out of both columns."""
    print("\ndiagnostic (decides nothing): the answers grounding_score skips (refusals, no claim)")
    for n, f in families.items():
        fixed = f.fixed_columns()
        skipped = np.array([v is None for v in f.metric["aligned"].grounding])
        kept = np.flatnonzero(~skipped)
        line = (
            f"  {n:<22} skipped {int(skipped.sum())} ({int(f.y[skipped].sum())} supported, "
            f"{int((f.y[skipped] == 0).sum())} unsupported)"
        )
        if skipped.any():
            picks = resamples(f, count, kept)
            ours = fixed["grounding_score aligned (shipped)"]
            values = {c: fast_auc(v[kept], f.y[kept]) for c, v in (("gs", ours), ("rec", f.recall))}
            diff = _aucs([ours], f.y, picks) - _aucs([f.recall], f.y, picks)
            line += (
                f"; on the scored answers: grounding_score aligned {values['gs']:.3f}, "
                f"token recall {values['rec']:.3f}, difference "
                f"{figure(values['gs'] - values['rec'], diff).signed()}"
            )
        print(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--folds", type=int, default=FOLDS)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--resamples", type=int, default=RESAMPLES)
    parser.add_argument("--print-weights", action="store_true")
    parser.add_argument(
        "--cache", type=Path, help="keep the metric scores and signals in this pickle file"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    families = compute(args.cache)
    check_fast_path(families)

    print(f"\ncross-validation: {args.folds} folds grouped, {args.repeats} repeats")
    oof = cross_validate(families, args.folds, args.repeats)
    picks = {n: resamples(f, args.resamples) for n, f in families.items()}

    # each form's CV AUC, its difference to token recall with interval, per family and variant
    cv: dict[str, dict[str, dict[str, float]]] = {}
    upper: dict[str, dict[str, dict[str, float]]] = {}
    recall_draws = {n: _aucs([f.recall], f.y, picks[n]) for n, f in families.items()}
    recall_auc = {n: fast_auc(f.recall, f.y) for n, f in families.items()}
    draws: dict[tuple[str, str, str], np.ndarray] = {}
    for form in FORMS:
        cv[form.name], upper[form.name] = {}, {}
        for v in VARIANTS:
            cv[form.name][v], upper[form.name][v] = {}, {}
            for n, f in families.items():
                column = oof[form.name][v][n]
                cv[form.name][v][n] = column_auc(column, f.y)
                draws[form.name, v, n] = _aucs(column, f.y, picks[n])
                diff = draws[form.name, v, n] - recall_draws[n]
                upper[form.name][v][n] = float(np.percentile(diff, 97.5))
    full = fit_rows(families, {n: np.arange(len(f.items)) for n, f in families.items()}, "lexical")
    full_aligned = fit_rows(
        families, {n: np.arange(len(f.items)) for n, f in families.items()}, "aligned"
    )
    fitted = {
        form.name: {
            "aligned": fit_form(form, "aligned", families, full_aligned),
            "lexical": fit_form(form, "lexical", families, full),
        }
        for form in FORMS
    }
    signs = {name: wrong_signs(w) for name, w in fitted.items()}
    criterion = {
        form.name: float(np.mean([cv[form.name][v][n] for v in VARIANTS for n in families]))
        for form in FORMS
    }
    eligible = {
        form.name: all(upper[form.name][v][n] > 0 for v in VARIANTS for n in families)
        for form in FORMS
    }
    chosen, rule_two = choose(criterion, eligible, {k: not v for k, v in signs.items()})

    print("\ncandidate forms: CV AUC per family (aligned / lexical), criterion, rules")
    short = {n: n.replace("AttributionBench", "AB") for n in families}
    print(
        f"{'form':<28} {'terms':>5} "
        + " ".join(f"{short[n]:>15}" for n in families)
        + f" {'criterion':>9}  rules"
    )
    for form in FORMS:
        cells = " ".join(
            f"{cv[form.name]['aligned'][n]:.3f}/{cv[form.name]['lexical'][n]:.3f}".rjust(15)
            for n in families
        )
        rules = []
        if signs[form.name]:
            rules.append("wrong sign: " + ", ".join(signs[form.name]))
        failing = [
            f"{v} {short[n]} (upper {upper[form.name][v][n]:+.3f})"
            for v in VARIANTS
            for n in families
            if upper[form.name][v][n] <= 0
        ]
        if failing:
            rules.append("below recall: " + ", ".join(failing))
        print(
            f"{form.name:<28} {form.size:>5} {cells} {criterion[form.name]:>9.4f}  "
            + ("; ".join(rules) or "ok")
        )
    best = max(criterion, key=lambda k: criterion[k])
    print(
        f"best criterion: {best} {criterion[best]:.4f}; chosen: {chosen} "
        f"({criterion[chosen]:.4f}, {next(f.size for f in FORMS if f.name == chosen)} terms)"
        + ("" if rule_two else "; no form passes rule 2 (below recall somewhere): rule 2 dropped")
    )

    print("\nper family: AUC [95% interval]; CV (out-of-fold, mean of repeats) for fitted forms")
    columns = [
        "grounding_score aligned (shipped)",
        "grounding_score lexical (shipped)",
        "claim_support_rate",
        "token recall",
    ]
    for n, f in families.items():
        fixed = f.fixed_columns()
        print(
            f"{n}: {len(f.items)} items, {int((f.y == 0).sum())} unsupported, "
            f"{len(set(f.groups))} groups, {len(picks[n])} resamples"
        )
        fixed_draws = {c: _aucs([fixed[c]], f.y, picks[n]) for c in columns}
        for c in columns:
            print(f"  {c:<40} {figure(fast_auc(fixed[c], f.y), fixed_draws[c])}")
        for c in columns[:3]:
            diff = fixed_draws[c] - fixed_draws["token recall"]
            value = fast_auc(fixed[c], f.y) - recall_auc[n]
            print(f"  {c + ' - recall':<40} {figure(value, diff).signed()}")
        if chosen != "shipped":
            for v in VARIANTS:
                value = cv[chosen][v][n]
                print(f"  {f'{chosen} {v} (CV)':<40} {figure(value, draws[chosen, v, n])}")
                diff = draws[chosen, v, n] - recall_draws[n]
                print(
                    f"  {f'{chosen} {v} (CV) - recall':<40} "
                    f"{figure(value - recall_auc[n], diff).signed()}"
                )

    shipped_form = chosen
    print(f"\nacceptance (issue 32), the {shipped_form} form, aligned variant (the default):")
    met = True
    for n in families:
        diff = draws[shipped_form, "aligned", n] - recall_draws[n]
        fig = figure(cv[shipped_form]["aligned"][n] - recall_auc[n], diff)
        verdict = "better" if fig.low > 0 else ("not below" if fig.high > 0 else "BELOW")
        met &= fig.high > 0
        print(f"  {n:<22} {fig.signed()}  {verdict}")
    print("acceptance: " + ("met" if met else "NOT met"))
    diagnose_skips(families, args.resamples)
    if args.print_weights or chosen != "shipped":
        print_weights(chosen, fitted[chosen])
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""AUC of ``grounding_score`` against human faithfulness labels, next to token-recall baselines.

Data (see ../shared/datasets/README.md): Q-squared (600 dialogue responses, consistent /
inconsistent with the knowledge), BEGIN dev, WoW part (430, fully / not fully attributable),
and the RAGBench samples (../shared/datasets/hf_samples/ragbench, 378 RAG answers, covidqa and
emanual test shards: adherent or not by GPT-4 sentence-level support labels; ``ragbench_data``).
Each set is split in two halves with a seeded shuffle (seed 0; RAGBench answers to the same
question stay in one half): the score's weights are fitted on the tuning halves only
(``--tune``; the fit is ``grounding_fit``), and the held-out halves are what we report.

The score goes through the metric's own code: the knowledge is the retrieved chunk (RAGBench:
one chunk per document), the response is the answer, the dialogue message (RAGBench: the
question) is the case's question, and ``score_case`` applies ``grounding_score``. A response
without a checkable claim (only a question, a refusal) is *skipped* by the metric; for the AUC
it counts as 0 (no grounded content), and the number of such responses is printed.

Next to the score: the previous model, the weights shipped before the issue-13 scorer changes
(``PREVIOUS_*_2026_11_24``), with the AUCs it had with that day's code
(``PREVIOUS_AUC_2026_11_24``, measured by this script on 2026-11-24: the table's ``prev``
columns) and, in the acceptance block, its weights on today's answer signals. The acceptance
block checks issue 13: on every set (held-out half and all items) each model beats
content-token recall and does not lose to the previous model; each comparison gets a 95%
paired bootstrap interval of the AUC difference (resampling the split groups).

Baselines, all computed in the same run (share of the response's tokens found in the knowledge):

* ``recall (stemmed)``: content tokens by the project's tokenizer (lower case, stop words out,
  light plural stemming);
* ``recall (plain)``: lower-case word tokens, stop words out, no stemming;
* ``recall (all words)``: lower-case word tokens, stop words kept (this is the variant that
  reproduces the 0.95 quoted for BEGIN in ../shared/FACTS.md; it is not a content-token recall).

RAGBench's knowledge for the baselines is its documents joined.

    python bench/grounding_auc.py            # report the shipped score weights
    python bench/grounding_auc.py --tune     # refit them on the tuning halves, then report
    python bench/grounding_auc.py --tune --fit-without-ragbench   # long terms from Q-squared, BEGIN
    python bench/grounding_auc.py --splits 20                     # refit on 20 seeded splits
    python bench/grounding_auc.py --choose-long   # the long-answer ramp by CV, tuning halves only

Reading RAGBench needs ``pyarrow`` (the ``bench`` extra); without it the set is left out.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
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
from grounding_fit import (
    PREVIOUS,
    SHIPPED,
    compute_signals,
    fast_auc,
    repeated_splits,
    tune,
)
from grounding_ramp import choose_long
from ragmeter.embedders import build_embedder
from ragmeter.metrics.base import MetricSettings, score_case
from ragmeter.metrics.grounding import (
    TOKEN_MODEL,
    ScoreWeights,
    grounding_metrics,
    token_aligner,
)
from ragmeter.models import Case, CaseResult, Response, RetrievedChunk
from ragmeter.text import STOP_WORDS, tokenize

DATA = (
    Path(os.environ.get("RAGMETER_SHARED_DATASETS", Path(__file__).resolve().parents[2] / "shared"))
    / "datasets"
    / "faithfulness"
)
SEED = 0
RAGBENCH = "RAGBench"


@dataclass(frozen=True)
class Item:
    contexts: tuple[str, ...]  # the retrieved chunks
    response: str
    question: str  # the dialogue's last message (Q-squared, BEGIN) or the question (RAGBench)
    label: int  # 1 = consistent / fully attributable / adherent
    group: str = ""  # items with the same group go to the same half ("": the item alone)
    subset: str = ""  # RAGBench's source shard (covidqa, emanual)

    @property
    def knowledge(self) -> str:
        """The contexts as one text (the baselines' knowledge)."""
        return "\n".join(self.contexts)

    @property
    def case_question(self) -> str:
        return self.question or "-"


def load_q_squared() -> list[Item]:
    items = []
    for path in sorted((DATA / "q_squared").glob("*.csv")):
        label = 0 if "inconsistent" in path.name else 1
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                items.append(Item((row["knowledge"],), row["response"], row["message"], label))
    return items


def load_begin() -> list[Item]:
    path = DATA / "begin" / "begin_dev_wow.tsv"
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [
            Item(
                (row["knowledge"],),
                row["response"],
                row["message"],
                int(row["begin_label"] == "Fully attributable"),
            )
            for row in reader
        ]


def load_ragbench() -> list[Item]:
    """RAGBench rows as items: the documents as the retrieved chunks, the label
    ``adherence_score`` (see ``ragbench_data``)."""
    return [
        Item(row.documents, row.response, row.question, row.label, row.group, row.subset)
        for row in ragbench_data.load_rows()
    ]


def load_sets() -> dict[str, list[Item]]:
    data = {"Q-squared": load_q_squared(), "BEGIN dev": load_begin()}
    if not ragbench_data.available():
        print(f"RAGBench left out: the samples are not at {ragbench_data.RAGBENCH}")
    else:
        try:
            data[RAGBENCH] = load_ragbench()
        except ImportError as exc:
            print(f"RAGBench left out: {exc} (pip install -e .[bench])")
    return data


def groups_of(items: list[Item]) -> list[str]:
    return [item.group or f"#{number}" for number, item in enumerate(items)]


def halves_of(groups: list[str], seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """(tuning, held-out) index arrays: the distinct groups in a seeded shuffle, cut in the
    middle. With one group per item (Q-squared, BEGIN) this is a seeded shuffle of the items."""
    keys = list(dict.fromkeys(groups))
    order = list(range(len(keys)))
    random.Random(seed).shuffle(order)
    tuning = {keys[i] for i in order[: len(keys) // 2]}
    in_tuning = np.array([g in tuning for g in groups])
    index = np.arange(len(groups))
    return index[in_tuning], index[~in_tuning]


def split(items: list[Item], seed: int = SEED) -> tuple[list[Item], list[Item]]:
    """(tuning half, held-out half) as items, in their original order."""
    tune_index, held_index = halves_of(groups_of(items), seed)
    return [items[i] for i in tune_index], [items[i] for i in held_index]


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
# the content-token recalls the acceptance compares with ("all words" keeps stop words)
TOKEN_RECALL = ("recall (stemmed)", "recall (plain)")


class Scorer:
    """``grounding_score`` for items, through the metric's own code (its batch ``prepare``
    first, as a run does)."""

    def __init__(self, model: str, weights: ScoreWeights) -> None:
        settings = MetricSettings(grounding_model="auto" if model == "aligned" else "lexical")
        if model == "aligned":
            metrics = grounding_metrics(settings, aligned_score_weights=weights)
        else:
            metrics = grounding_metrics(settings, score_weights=weights)
        self.model = model
        self.metric = next(m for m in metrics if m.name == "grounding_score")
        # each item's details as the metric gives them (its answer signals rounded to 4
        # places; None where it skipped the item)
        self.details: list[dict[str, Any] | None] = []
        # how many items each score model scored ("aligned", "lexical", "question", ...)
        self.used: Counter[str] = Counter()

    def __call__(self, items: list[Item]) -> list[float | None]:
        """Each item's score, None where the metric skipped it (no checkable claims)."""
        pairs = []
        for number, item in enumerate(items):
            case = Case(case_id=str(number), question=item.case_question)
            response = Response(
                answer=item.response,
                retrieved=[
                    RetrievedChunk(id=f"k{i}", text=text) for i, text in enumerate(item.contexts)
                ],
            )
            pairs.append((case, response))
        assert self.metric.prepare is not None
        self.metric.prepare(pairs)
        values: list[float | None] = []
        self.details = []
        self.used = Counter()
        for case, response in pairs:
            result = CaseResult(case_id=case.case_id, status="ok", response=response)
            score = score_case(self.metric, case, result)
            if score.status == "failed":
                raise RuntimeError(f"grounding_score failed: {score.reason}")
            if score.value is not None:
                used = str(score.details.get("score_model"))
                if not self._expected(used, score.details):
                    raise RuntimeError(
                        f"case {case.case_id}: scored by {score.details}, not {self.model}"
                    )
                self.used[used] += 1
            values.append(score.value)
            self.details.append(score.details if score.value is not None else None)
        return values

    def _expected(self, used: str, details: dict[str, Any]) -> bool:
        """The model asked for, one that does not use the weights (a yes/no answer read
        through its question, an NLI model), or the lexical model for an answer read through
        its question (which is not aligned); anything else is a fault (MiniLM failing)."""
        if used in (self.model, "question", "nli"):
            return True
        claims = details.get("claims") or []
        return used == "lexical" and any(c.get("from_question") for c in claims)


def previous_score(model: str, details: dict[str, Any] | None, value: float | None) -> float:
    """The previous weights (``PREVIOUS``) on an answer's signals as the metric's details give
    them, applied as the metric applies the shipped ones: the lexical weights for an answer
    without alignment, the score of a yes/no answer read through its question (or an NLI
    model's) as it is, a span answer read through its question capped by its claims'
    support; 0 for an answer the metric skipped."""
    if details is None or value is None:
        return 0.0
    if details.get("score_model") in ("question", "nli"):
        return value
    features = details["answer_signals"]
    weights = PREVIOUS[model if "token_precision" in features else "lexical"]
    z = weights.intercept + sum(getattr(weights, k, 0.0) * v for k, v in features.items())
    score = 1.0 / (1.0 + math.exp(-min(max(z, -50.0), 50.0)))
    claims = details.get("claims") or []
    if any(c.get("from_question") for c in claims):
        score = min([score, *(c["support"] for c in claims)])
    return score


# --- the previous model -------------------------------------------------------------------

# that model with that day's code (signals, claims, numbers): its AUC as this script measured it
# on 2026-11-24 (``--print-aucs``; seed-0 halves, skipped answers count 0), per set (and
# RAGBench subset), model and part
PREVIOUS_AUC_2026_11_24: dict[str, dict[str, dict[str, float]]] = {
    "Q-squared": {
        "lexical": {"tuning": 0.7543, "held-out": 0.7625, "all": 0.7585},
        "aligned": {"tuning": 0.7539, "held-out": 0.7713, "all": 0.7635},
    },
    "BEGIN dev": {
        "lexical": {"tuning": 0.9623, "held-out": 0.9392, "all": 0.9492},
        "aligned": {"tuning": 0.9616, "held-out": 0.9433, "all": 0.9521},
    },
    "RAGBench": {
        "lexical": {"tuning": 0.5603, "held-out": 0.6812, "all": 0.6120},
        "aligned": {"tuning": 0.5634, "held-out": 0.6925, "all": 0.6186},
    },
    "RAGBench/covidqa": {
        "lexical": {"tuning": 0.6616, "held-out": 0.7098, "all": 0.6724},
        "aligned": {"tuning": 0.6581, "held-out": 0.7111, "all": 0.6714},
    },
    "RAGBench/emanual": {
        "lexical": {"tuning": 0.4316, "held-out": 0.7213, "all": 0.6199},
        "aligned": {"tuning": 0.4351, "held-out": 0.7359, "all": 0.6277},
    },
}


# --- report -------------------------------------------------------------------------------

# AUCs by row (a set, or "set/subset"), part and column
Found = dict[str, dict[str, dict[str, float | None]]]


def _auc_or_none(scores: list[float], y: list[int]) -> float | None:
    return auc(scores, y) if 0 < sum(y) < len(y) else None


def _fmt(value: float | None, width: int, sign: bool = False) -> str:
    if value is None:
        return f"{'-':>{width}}"
    return f"{value:>+{width}.3f}" if sign else f"{value:>{width}.3f}"


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


@dataclass
class Scored:
    """One set's per-item scores by column (the baselines, the models, ``weights <model>``:
    the previous weights on today's signals), labels, split groups and parts."""

    scores: dict[str, np.ndarray]
    y: np.ndarray
    groups: list[str]
    parts: dict[str, list[int]]


def report(
    data: dict[str, list[Item]], models: dict[str, ScoreWeights]
) -> tuple[Found, dict[str, Scored]]:
    """The table: per set (and RAGBench subset) and part, the baselines, the previous model
    (``PREVIOUS_AUC_2026_11_24``), the models and the margins. Returns every AUC by row, part
    and column, with the previous weights on today's signals as ``weights <model>``, and each
    set's per-item scores."""
    print(f"split seed {SEED}; AUC by the metric's own code (grounding_score)")
    previous = [f"prev {m[:3]}" for m in PREVIOUS]
    columns = [*BASELINES, *previous, *models]
    widths = {c: max(len(c), 7) for c in columns}
    header = (
        f"{'dataset':<12} {'part':<9} {'n':>4} {'neg':>4} "
        + " ".join(f"{c:>{widths[c]}}" for c in columns)
        + f" {'vs best':>7} {'vs rec.':>7} {'vs prev':>7} {'skipped':>7}"
    )
    print(header)
    print("-" * len(header))
    found: Found = {}
    kept: dict[str, Scored] = {}
    used: dict[str, str] = {}
    for name, items in data.items():
        scores: dict[str, list[float]] = {}
        skipped: list[bool] = []
        for model, weights in models.items():
            scorer = Scorer(model, weights)
            values = scorer(items)
            used[f"{name}, {model}"] = ", ".join(f"{k} {v}" for k, v in scorer.used.items())
            scores[model] = [0.0 if v is None else v for v in values]
            scores[f"weights {model}"] = [
                previous_score(model, d, v) for d, v in zip(scorer.details, values, strict=True)
            ]
            skipped = [v is None for v in values]
        for column, f in BASELINES.items():
            scores[column] = [f(i) for i in items]
        tune_index, held_index = halves_of(groups_of(items), SEED)
        parts = {
            "tuning": [int(i) for i in tune_index],
            "held-out": [int(i) for i in held_index],
            "all": list(range(len(items))),
        }
        kept[name] = Scored(
            {c: np.asarray(v) for c, v in scores.items()},
            np.asarray([i.label for i in items]),
            groups_of(items),
            parts,
        )
        rows = [(name, name, part, index) for part, index in parts.items()]
        for subset in sorted({i.subset for i in items if i.subset}):
            rows += [
                (
                    f"{name}/{subset}",
                    f"  {subset}",
                    part,
                    [i for i in index if items[i].subset == subset],
                )
                for part, index in parts.items()
            ]
        for key, label, part, index in rows:
            y = [items[i].label for i in index]
            aucs = {c: _auc_or_none([v[i] for i in index], y) for c, v in scores.items()}
            frozen = PREVIOUS_AUC_2026_11_24.get(key, {})
            for model, column in zip(PREVIOUS, previous, strict=True):
                aucs[column] = frozen.get(model, {}).get(part)
            found.setdefault(key, {})[part] = aucs
            last = list(models)[-1]  # the aligned model when both are reported
            best = max((aucs[c] for c in BASELINES if aucs[c] is not None), default=None)
            recall = max((aucs[c] for c in TOKEN_RECALL if aucs[c] is not None), default=None)
            print(
                f"{label:<12} {part:<9} {len(index):>4} {len(y) - sum(y):>4} "
                + " ".join(_fmt(aucs[c], widths[c]) for c in columns)
                + " "
                + " ".join(
                    _fmt(_minus(aucs[last], other), 7, sign=True)
                    for other in (best, recall, aucs[f"prev {last[:3]}"])
                )
                + f" {sum(skipped[i] for i in index):>7}"
            )
    print(
        "neg: unsupported answers; prev lex / prev ali: the previous model (the 2026-11-24 code "
        "and weights); vs best / vs rec. / vs prev: aligned minus the best baseline / the best "
        "content-token recall (stemmed, plain) / prev ali"
    )
    print("answers by the score model that scored them (the rest were skipped):")
    for key, counts in used.items():
        print(f"  {key}: {counts}")
    return found, kept


BOOTSTRAP = 1000  # resamples of the paired bootstrap


def bootstrap(
    run: Scored, index: list[int], ours: str, other: str, resamples: int = BOOTSTRAP
) -> tuple[float, float]:
    """95% interval of AUC(ours) - AUC(other) over ``index``: a paired bootstrap that
    resamples the split groups (RAGBench's questions; single items elsewhere), seeded."""
    members: dict[str, list[int]] = {}
    for i in index:
        members.setdefault(run.groups[i], []).append(i)
    blocks = list(members.values())
    rng = np.random.default_rng(SEED)
    a, b = run.scores[ours], run.scores[other]
    found = []
    for _ in range(resamples):
        picked = np.concatenate([blocks[k] for k in rng.integers(0, len(blocks), len(blocks))])
        y = run.y[picked]
        if 0 < y.sum() < len(y):
            found.append(fast_auc(a[picked], y) - fast_auc(b[picked], y))
    low, high = np.percentile(found, [2.5, 97.5])
    return float(low), float(high)


def acceptance(
    found: Found, kept: dict[str, Scored], sets: list[str], models: dict[str, ScoreWeights]
) -> bool:
    """Issue 13: on every set, held-out half and all items, each model beats content-token
    recall (stemmed and plain) and does not lose to the previous model (the 2026-11-24 code
    and weights, ``PREVIOUS_AUC_2026_11_24``). Each comparison also gets a 95% paired
    bootstrap interval of the difference (against the previous weights on today's signals,
    which the frozen figures cannot be resampled for); all-words recall is shown too."""
    print(
        "\nacceptance: each model vs content-token recall and vs the previous model; "
        f"[95% paired bootstrap interval of the difference, {BOOTSTRAP} resamples of the groups]"
    )
    ok = True
    for name in sets:
        for part in ("held-out", "all"):
            aucs = found[name][part]
            index = kept[name].parts[part]
            for model in models:
                ours = aucs[model]
                assert ours is not None
                recall = max(aucs[c] or 0.0 for c in TOKEN_RECALL)
                previous = aucs[f"prev {model[:3]}"]
                passed = ours > recall and (previous is None or ours >= previous - 5e-5)
                ok &= passed
                print(
                    f"  {name:<10} {part:<9} {model:<8} {ours:.3f}: recall {recall:.3f} "
                    f"({ours - recall:+.3f}), previous "
                    + ("-" if previous is None else f"{previous:.3f} ({ours - previous:+.3f})")
                    + ("  ok" if passed else "  FAILS")
                )
                for other in (*BASELINES, f"weights {model}"):
                    value = aucs[other]
                    assert value is not None
                    low, high = bootstrap(kept[name], index, model, other)
                    label = "previous weights, today's signals" if other.startswith("w") else other
                    print(
                        f"      vs {label:<34} {value:.3f}: {ours - value:+.3f} "
                        f"[{low:+.3f}, {high:+.3f}]"
                    )
    print("acceptance: " + ("met" if ok else "NOT met"))
    return ok


def print_aucs(found: Found, models: dict[str, ScoreWeights]) -> None:
    """The models' AUCs as a literal (how ``PREVIOUS_AUC_2026_11_24`` was made)."""
    print("{")
    for key, by_part in found.items():
        print(f"    {key!r}: {{")
        for model in models:
            values = ", ".join(
                f"{part!r}: {by_part[part][model]:.4f}"
                for part in by_part
                if by_part[part][model] is not None
            )
            print(f"        {model!r}: {{{values}}},")
        print("    },")
    print("}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--tune", action="store_true", help="refit the score weights on the tuning halves"
    )
    parser.add_argument(
        "--splits", type=int, default=0, help="also refit and measure on this many seeded splits"
    )
    parser.add_argument(
        "--fit-without-ragbench",
        action="store_true",
        help="fit on Q-squared and BEGIN only (RAGBench is still reported)",
    )
    parser.add_argument(
        "--choose-long",
        nargs="?",
        const="weighted",
        choices=("weighted", "summed"),
        help="choose where the long-answer ramp starts and its span by cross-validation on "
        "the tuning halves (20 repeats) under a rule of bench/grounding_ramp.py (default "
        "weighted), then stop (no held-out figures)",
    )
    parser.add_argument(
        "--print-aucs",
        action="store_true",
        help="print the models' AUCs as a literal (how PREVIOUS_AUC_2026_11_24 was made)",
    )
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"skipped: the faithfulness datasets are not at {DATA} (../shared/datasets)")
        return 0
    started = time.perf_counter()
    data = load_sets()
    fit_names = [n for n in data if not (args.fit_without_ragbench and n == RAGBENCH)]
    signals = {}
    if args.tune or args.splits or args.choose_long:
        aligner = token_aligner(build_embedder(TOKEN_MODEL))
        signals = {
            name: compute_signals(items, aligner, token_recall, groups_of(items))
            for name, items in data.items()
        }
    halves = {name: halves_of(s.groups, SEED) for name, s in signals.items()}
    if args.choose_long:
        choose_long(signals, {name: halves[name][0] for name in fit_names}, args.choose_long)
        print(f"({time.perf_counter() - started:.1f} s)")
        return 0
    models = tune(signals, halves, fit_names) if args.tune else dict(SHIPPED)
    found, kept = report(data, models)
    if args.print_aucs:
        print_aucs(found, models)
    acceptance(found, kept, list(data), models)
    if args.splits:
        baselines = {
            name: {b: np.array([f(i) for i in items]) for b, f in BASELINES.items()}
            for name, items in data.items()
        }
        repeated_splits(signals, baselines, fit_names, args.splits, halves_of)
    print(f"({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

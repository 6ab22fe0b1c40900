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
(``grounding_fit.fit_pairwise``). Only the answers the weights score are fitted (claims, no
fixed question score, not skipped by the metric; the aligned variant: with alignment). A refit
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

    python bench/grounding_cv.py                    # the whole procedure, about 10 minutes
    python bench/grounding_cv.py --repeats 1 --resamples 200   # a quick look
    python bench/grounding_cv.py --print-weights    # also print the chosen fit as constants

Reading RAGBench needs ``pyarrow`` (the ``bench`` extra); MiniLM needs the ``semantic`` extra.
"""

from __future__ import annotations

import argparse
import sys

FOLDS = 5
REPEATS = 5
RESAMPLES = 1000
FOLD_SEED = 1000  # repeat r shuffles the groups with random.Random(FOLD_SEED + r)
BOOTSTRAP_SEED = 0
TIE = 0.002  # criterion ties: the fewest terms wins
L2 = 0.01

FAMILIES = ("Q-squared", "BEGIN", "RAGBench", "AttributionBench id", "AttributionBench ood")

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


def load_families() -> dict[str, list[object]]:
    """The five families' items (contexts, answer, question, label, group, source)."""
    raise NotImplementedError


def cross_validate() -> None:
    """The grouped K-fold cross-validation of every candidate form (module doc)."""
    raise NotImplementedError


def choose() -> None:
    """The sign rule, the eligibility rule and the criterion (module doc)."""
    raise NotImplementedError


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--folds", type=int, default=FOLDS)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--resamples", type=int, default=RESAMPLES)
    parser.add_argument("--print-weights", action="store_true")
    parser.parse_args()
    raise NotImplementedError


if __name__ == "__main__":
    sys.exit(main())

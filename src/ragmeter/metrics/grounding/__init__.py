"""Heuristic grounding: is each claim of the answer supported by the retrieved context?

Citation markers ("[1]", "(Source: X)", "¹": ``ragmeter.metrics.markers``) are removed from the
answer and the context first. The answer is then split into claims
(``ragmeter.metrics.claims``); questions, refusals and sentences without content are not claims.
Each claim gets a support score in [0, 1] from lexical evidence against the retrieved chunk
texts (the context):

* ``coverage``: share of the claim's content terms found in the context (stemmed, stop words
  out, NFKC-folded; CJK runs as character bigrams);
* the best-matching context sentence (most shared terms, via an inverted index; the earliest
  on a tie, so no result depends on the hash seed) is recorded,
  and a negation present on one side only is a ``negation mismatch``;
* every number of the claim with no reading in the context is a missing number
  (``ragmeter.metrics.numbers``: "1,000" = "1000", "15%" = "15 percent", "$604" = "604",
  "12, 500" = 12500 or 12 and 500, dates compared as days, "5 km (3.1 mi)" one number); at
  most ``MAX_MISSING_NUMBERS_PER_CLAIM`` (2) count per claim;
* a claim about the speaker or the user ("I think", "you can") is ``personal``: the context
  cannot support it;
* the relation-level check (``relations``): the claim's key terms (names, numbers, absolute
  qualifiers such as "unlimited") must be found together in one context window (a sentence,
  with the sentence it continues by a pronoun and its chunk's heading); each key term the
  context binds to something else, each added absolute qualifier and each qualifier the best
  window has and the claim lost ("formerly", "nearly", "may") is a relation violation;
* optionally, the cosine of the claim to its best context sentence under an embedder.

``support = clip((1 - w_emb) * (coverage + w_bigram * bigram) / (1 + w_bigram)
+ w_emb * cosine - w_number * min(missing numbers, 2) - w_personal * personal
- w_negation * negation mismatch - w_relation * min(relation violations, 2), 0, 1)``
(``w_relation`` 0.35, so one violation takes an assertion under its threshold; the embedding
term only with an embedder and
``w_emb > 0``, which is off by default). A claim is supported when its support reaches the
threshold of its type (assertion 0.7, inference 0.5); general claims are not checked.

``grounding_score`` is a logistic model over answer-level signals (``AnswerSignals``): the
coverage and term-bigram coverage of the claims' fact terms (stance words such as "love",
"think", "really" and fillers left out: ``STANCE_WORDS``), missing numbers, log(1 + novel fact
terms), a first/second-person word anywhere in the answer, the recall of all the answer's
words (stop words included) in the context, and a conversational opener ("yes", "well",
"i agree"). With the ``semantic`` extra it adds the word-piece alignment of the claims to the
context under MiniLM (``token_alignment``: BERTScore-style precision and its weakest piece) and
uses ``ALIGNED_SCORE_WEIGHTS``; without it (or with ``grounding_model="lexical"``) it uses
``DEFAULT_SCORE_WEIGHTS``. A long answer (over 20 words, fully at 30) also weighs its own
terms: coverage, all-word recall, relation violations and the share of its sentences saying the
context lacks something (``abstains``); a short answer scores as the dialogue fit alone. Four
more signals (``negation``, ``absent_names``, ``number_binding``, ``sentence_coverage``) are
computed and reported with weight 0: a grouped cross-validation over five labelled families did
not choose them (``bench/grounding_cv.py``, docs/grounding.md). The
weights were fitted on seeded tuning halves of three human-labelled sets (Q-squared, BEGIN and
RAGBench's covidqa and emanual) and are reported on the other halves
(``bench/grounding_auc.py``, ``bench/grounding_fit.py``, docs/grounding.md).

With ``grounding_model="nli:PATH"`` a local NLI / cross-encoder model (``nli``: an ONNX or
transformers folder) scores each claim against its best context windows instead: the claim's
support is its entailment probability (supported at 0.5) and ``grounding_score`` the
term-weighted mean over the checked claims (``score_model`` "nli").

Metrics (group ``grounding``, need the ``retrieved`` input):

* ``claim_support_rate``: supported / checked claims (seed 003 target > 0.85);
* ``unsupported_claim_count``: checked claims that are not supported (lower is better);
* ``numeric_fabrication_count``: numbers of the answer (outside questions) whose value is not
  in the context (lower is better; 0 for an answer without numbers);
* ``grounding_score``: sigmoid(weights . answer signals), in (0, 1), its details naming the
  ``score_model`` ("aligned" or "lexical"); the term-weighted mean claim support (the score
  before the logistic model) is kept in its details as ``mean_support``.

A short answer is read through the case's question (``questions``): "yes"/"no" to a yes/no
question is checked as the question's statement (or its negation), and its
``grounding_score`` is that statement's support (``score_model`` "question"); a span ("Penguin")
to a wh-question must sit in the context window the question points to, and its
``grounding_score`` is capped by its claim support.

A refusal, read by the abstention family's rules (``abstention.detect_abstention``: the
``abstained`` field, an empty answer, a phrase of the run's ``abstention_phrases``, a short
non-answer), is skipped by all four metrics with reason "the response abstained (RULE)", RULE
the one that decided ("phrase: could not find"). Another answer with no claim (questions only,
refusal sentences the phrase list misses) is skipped by the three claim metrics with reason
"no checkable claims" (and by ``claim_support_rate`` / ``unsupported_claim_count`` also when
every claim is general). With an empty context every claim has support 0.
"""

from __future__ import annotations

from ragmeter.metrics.grounding.alignment import (
    MAX_ALIGNED_SENTENCES,
    Aligner,
    Alignment,
    SentenceEmbedder,
    TokenEmbedder,
    aligned_sentences,
    alignment_texts,
    token_aligner,
    token_alignment,
)
from ragmeter.metrics.grounding.assessment import (
    MAX_CLAIMS,
    MAX_CONTEXT_CHARS,
    THRESHOLDS,
    Assessment,
    ClaimVerdict,
    assess,
)
from ragmeter.metrics.grounding.family import (
    NO_CHECKED_CLAIMS,
    GroundingState,
    grounding_metrics,
)
from ragmeter.metrics.grounding.features import (
    STANCE_WORDS,
    ClaimSignals,
    Context,
    build_context,
    claim_signals,
    has_negation,
    is_personal,
    terms,
)
from ragmeter.metrics.grounding.model import (
    ALIGNED_SCORE_WEIGHTS,
    DEFAULT_SCORE_WEIGHTS,
    DEFAULT_WEIGHTS,
    MAX_MISSING_NUMBERS_PER_CLAIM,
    TOKEN_MODEL,
    AnswerSignals,
    GroundingWeights,
    ScoreWeights,
    answer_signals,
)

__all__ = [
    "ALIGNED_SCORE_WEIGHTS",
    "DEFAULT_SCORE_WEIGHTS",
    "DEFAULT_WEIGHTS",
    "MAX_ALIGNED_SENTENCES",
    "MAX_CLAIMS",
    "MAX_CONTEXT_CHARS",
    "MAX_MISSING_NUMBERS_PER_CLAIM",
    "NO_CHECKED_CLAIMS",
    "STANCE_WORDS",
    "THRESHOLDS",
    "TOKEN_MODEL",
    "Aligner",
    "Alignment",
    "AnswerSignals",
    "Assessment",
    "ClaimSignals",
    "ClaimVerdict",
    "Context",
    "GroundingState",
    "GroundingWeights",
    "ScoreWeights",
    "SentenceEmbedder",
    "TokenEmbedder",
    "aligned_sentences",
    "alignment_texts",
    "answer_signals",
    "assess",
    "build_context",
    "claim_signals",
    "grounding_metrics",
    "has_negation",
    "is_personal",
    "terms",
    "token_aligner",
    "token_alignment",
]

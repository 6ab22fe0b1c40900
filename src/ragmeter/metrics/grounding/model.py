"""The grounding models: the per-claim support weights (``GroundingWeights``), the
answer-level signals (``AnswerSignals``) and the fitted logistic ``grounding_score`` weights
(``ScoreWeights``: ``DEFAULT_SCORE_WEIGHTS``, ``ALIGNED_SCORE_WEIGHTS``)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ragmeter.metrics import textmatch
from ragmeter.metrics.claims import fold, split_sentences
from ragmeter.metrics.grounding.alignment import Alignment
from ragmeter.metrics.grounding.features import (
    _OPENER,
    _PERSON_WORD,
    ClaimSignals,
    Context,
)


@dataclass(frozen=True)
class GroundingWeights:
    """How the per-claim signals combine into one support score (see the module doc)."""

    bigram: float = 0.0
    missing_number: float = 0.3
    personal: float = 0.2
    negation: float = 0.2
    embedding: float = 0.0
    non_claim: float = 0.0
    # per key term the context binds to something else, or qualifier lost (``relations``), at
    # most ``MAX_RELATION_VIOLATIONS_PER_CLAIM`` per claim: one takes an assertion under 0.7
    relation: float = 0.35


# at most this many missing numbers of one claim count, in its support (so at most
# 2 x ``missing_number`` = 0.6 is taken off) and in ``grounding_score``'s ``missing_numbers``
# signal; ``numeric_fabrication_count`` counts them all
MAX_MISSING_NUMBERS_PER_CLAIM = 2
MAX_RELATION_VIOLATIONS_PER_CLAIM = 2

# per-claim support weights (claim verdicts, ``mean_support``): chosen by an earlier grid search
# on the seeded tuning halves of Q-squared and BEGIN dev (docs/grounding.md); they no longer
# enter ``grounding_score``, which has its own fitted weights (``DEFAULT_SCORE_WEIGHTS``).
# Embedding alignment (MiniLM) is off by default; pass weights with ``embedding > 0`` to use it.
DEFAULT_WEIGHTS = GroundingWeights()


# the long-answer regime of ``grounding_score``: an answer of up to ``LONG_FROM`` words is
# short (``AnswerSignals.long`` 0), one of ``LONG_FROM + LONG_SPAN`` words or more is long (1),
# linearly in between. Both chosen by cross-validation on the tuning halves (grid 20 to 45 by
# 5, span 10 / 20 / 30; ``grounding_auc.py --choose-long``, docs/grounding.md)
LONG_FROM = 20
LONG_SPAN = 10

# a claim is anchored when one context sentence holds at least this share of its terms
# (``ClaimSignals.sentence_coverage``); chosen by cross-validation on the tuning halves
ANCHORED_FROM = 0.5

# an answer sentence saying that the context lacks something ("The passage does not mention
# ...", "... is not stated in the context", "no information about ..."): an abstention, which
# asserts nothing the context would have to support
_CONTEXT_NOUN = (
    r"(?:context|contexts|passage|passages|document|documents|text|texts|article|articles|"
    r"source|sources|excerpt|excerpts|information(?:\s*provided|\s*given)?)"
)
_HOW = r"(?:explicitly\s*|specifically\s*|directly\s*|clearly\s*)?"
_ABSTENTION = re.compile(
    "|".join(
        [
            # "the passage does not (explicitly) mention ..."
            rf"\b{_CONTEXT_NOUN}\b[^.;:!?]{{0,60}}?\b(?:does|do|did)\s*(?:not|n't)\s*{_HOW}"
            r"(?:provide|contain|mention|specify|state|include|say|give|discuss|address|"
            r"describe|cover|offer)\b",
            # "... is not stated in the (given) context"
            rf"\bnot\s*{_HOW}(?:mentioned|stated|provided|specified|given|discussed|addressed|"
            rf"described|covered|included)\s*in\s*the\s*(?:given\s*|provided\s*|above\s*)?"
            rf"{_CONTEXT_NOUN}\b",
            rf"\bit\s*is\s*not\s*{_HOW}(?:stated|mentioned|specified|clear)\b",
            r"\bnot\s*possible\s*to\s*(?:answer|determine|say|tell)\b",
            r"\bcannot\s*be\s*determined\b",
            r"\bno\s*(?:specific\s*|relevant\s*|explicit\s*|direct\s*)?"
            r"(?:information|mention|details?)\s*(?:about|on|regarding|of|in|is|was)\b",
        ]
    )
)


def abstention_share(answer: str) -> float:
    """Share of the answer's sentences that say the context lacks something (0 without
    sentences)."""
    sentences = [s for s in split_sentences(answer) if s.strip()]
    if not sentences:
        return 0.0
    return sum(bool(_ABSTENTION.search(fold(s))) for s in sentences) / len(sentences)


@dataclass(frozen=True)
class AnswerSignals:
    """Answer-level evidence that ``grounding_score`` combines (see ``ScoreWeights``)."""

    fact_coverage: float  # found / all fact terms, summed over the claims (1.0 without any)
    fact_bigram_coverage: float  # the same over consecutive fact-term pairs
    # numbers of the claims whose value is not in the context, at most
    # ``MAX_MISSING_NUMBERS_PER_CLAIM`` per claim
    missing_numbers: int
    novel_terms: int  # distinct fact terms of the claims not in the context
    personal: bool  # a first- or second-person word anywhere in the answer
    word_recall: float  # share of all the answer's words (stop words too) in the context
    opener: bool  # the answer opens with "yes", "well", "me too", "i agree", ...
    # MiniLM word-piece alignment of the answer to the context (``token_alignment``); None
    # when no token vectors were available
    token_precision: float | None = None  # mean over answer pieces of the best cosine
    weakest_token: float | None = None  # the lowest of those best cosines
    # key terms bound to something else and lost qualifiers (``relations``), at most
    # ``MAX_RELATION_VIOLATIONS_PER_CLAIM`` per claim
    relation_violations: int = 0
    words: int = 0  # the answer's words (stop words too), as ``word_recall`` counts them
    abstains: float = 0.0  # share of its sentences saying the context lacks something
    # share of the claims' terms in anchored claims (``ANCHORED_FROM``; 1.0 without claims)
    anchored: float = 1.0
    # signals token recall cannot see (weight 0 unless a fit gives them one): the share of the
    # claims whose negation differs from their best context sentence's; the distinct names of
    # the claims absent from the context; the lowest ``number_binding`` of the claims (1.0
    # without a number the context has); the term-weighted mean of the claims' best share of
    # their terms in one context sentence (1.0 without claims)
    negation: float = 0.0
    absent_names: int = 0
    number_binding: float = 1.0
    sentence_coverage: float = 1.0

    @property
    def aligned(self) -> bool:
        return self.token_precision is not None and self.weakest_token is not None

    @property
    def long(self) -> float:
        """0 for a short answer, 1 for a long one (``LONG_FROM``, ``LONG_SPAN``)."""
        return min(max((self.words - LONG_FROM) / LONG_SPAN, 0.0), 1.0)

    def features(self) -> dict[str, float]:
        """The values the score weighs (``novel_terms`` as log(1 + count); the alignment
        signals as 0 when absent, where the lexical weights give them no weight; the ``long_``
        values are ``long`` times the signal)."""
        long = self.long
        return {
            "coverage": self.fact_coverage,
            "bigram": self.fact_bigram_coverage,
            "missing_numbers": float(self.missing_numbers),
            "novel_terms": math.log1p(self.novel_terms),
            "personal": float(self.personal),
            "word_recall": self.word_recall,
            "opener": float(self.opener),
            "token_precision": self.token_precision or 0.0,
            "weakest_token": self.weakest_token or 0.0,
            "relation_violations": float(self.relation_violations),
            "long": long,
            "abstains": self.abstains,
            "long_personal": long * self.personal,
            "long_opener": long * self.opener,
            "long_coverage": long * self.fact_coverage,
            "long_word_recall": long * self.word_recall,
            "long_relation_violations": long * self.relation_violations,
            "long_anchored": long * self.anchored,
            "negation": self.negation,
            "absent_names": math.log1p(self.absent_names),
            "number_binding": self.number_binding,
            "sentence_coverage": self.sentence_coverage,
        }


def answer_signals(
    answer: str,
    claims: list[ClaimSignals],
    context: Context,
    alignment: Alignment = None,
) -> AnswerSignals:
    """Aggregate the claims' fact-term evidence and how much of it is anchored in one context
    sentence, read the answer's conversational cues and add the word-piece ``alignment``
    (precision, weakest) when there is one."""
    fact_terms = sum(c.fact_terms for c in claims)
    coverage = sum(c.fact_found for c in claims) / fact_terms if fact_terms else 1.0
    pairs = sum(c.fact_bigrams for c in claims)
    bigram = sum(c.fact_bigrams_found for c in claims) / pairs if pairs else coverage
    weights = [max(c.n_terms, 1) for c in claims]
    anchored = sum(
        w for w, c in zip(weights, claims, strict=True) if c.sentence_coverage >= ANCHORED_FROM
    )
    bindings = [c.number_binding for c in claims if c.number_binding is not None]
    together = sum(w * c.sentence_coverage for w, c in zip(weights, claims, strict=True))
    folded = fold(answer)
    answer_words = textmatch.words(answer)
    recall = (
        sum(w in context.words for w in answer_words) / len(answer_words) if answer_words else 0.0
    )
    return AnswerSignals(
        fact_coverage=coverage,
        fact_bigram_coverage=bigram,
        missing_numbers=sum(min(c.missing_weight, MAX_MISSING_NUMBERS_PER_CLAIM) for c in claims),
        novel_terms=len(frozenset().union(*(c.novel_facts for c in claims))),
        personal=bool(_PERSON_WORD.search(folded)),
        word_recall=recall,
        opener=bool(_OPENER.search(folded)),
        token_precision=None if alignment is None else alignment[0],
        weakest_token=None if alignment is None else alignment[1],
        relation_violations=sum(
            min(c.relation_violations, MAX_RELATION_VIOLATIONS_PER_CLAIM) for c in claims
        ),
        words=len(answer_words),
        abstains=abstention_share(answer),
        anchored=anchored / sum(weights) if claims else 1.0,
        negation=sum(c.negation_mismatch for c in claims) / len(claims) if claims else 0.0,
        absent_names=len(frozenset().union(*(c.absent_names for c in claims))),
        number_binding=min(bindings, default=1.0),
        sentence_coverage=together / sum(weights) if claims else 1.0,
    )


@dataclass(frozen=True)
class ScoreWeights:
    """``grounding_score = sigmoid(intercept + sum(weight * feature))`` over
    ``AnswerSignals.features()``; the signs are part of the weights."""

    intercept: float
    coverage: float
    bigram: float
    missing_numbers: float
    novel_terms: float
    personal: float
    word_recall: float
    opener: float
    token_precision: float = 0.0
    weakest_token: float = 0.0
    relation_violations: float = 0.0
    long: float = 0.0
    abstains: float = 0.0
    long_personal: float = 0.0
    long_opener: float = 0.0
    long_coverage: float = 0.0
    long_word_recall: float = 0.0
    long_relation_violations: float = 0.0
    long_anchored: float = 0.0
    negation: float = 0.0
    absent_names: float = 0.0
    number_binding: float = 0.0
    sentence_coverage: float = 0.0

    def score(self, signals: AnswerSignals) -> float:
        z = self.intercept + sum(
            getattr(self, name) * value for name, value in signals.features().items()
        )
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


# fitted by `python bench/grounding_auc.py --tune` (bench/grounding_fit.py) on the seeded tuning
# halves (seed 0) only, in two parts. The short-answer part (coverage ... opener, and the
# alignment signals) and the intercept are the weights shipped before issue 13, a
# pairwise-logistic (AUC surrogate) fit on Q-squared and BEGIN, kept as they were, so a short
# answer scores as before; in a long answer the personal and opener cues are cancelled
# (``long_personal`` = -``personal``, ``long_opener`` = -``opener``, not fitted). The
# long-answer and abstention terms (``long``, ``abstains``, ``long_coverage``,
# ``long_word_recall``, ``long_anchored``) were then fitted with that part as a fixed offset,
# by the same pairwise loss over Q-squared, BEGIN and RAGBench's two shards (covidqa, emanual;
# each its own set, weight 1), ridge 0.01; docs/grounding.md reports the held-out halves
DEFAULT_SCORE_WEIGHTS = ScoreWeights(
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
)
# the same fit with the two word-piece alignment signals (MiniLM, ``TOKEN_MODEL``): the model
# ``grounding_score`` uses when the token vectors are available (the ``semantic`` extra)
ALIGNED_SCORE_WEIGHTS = ScoreWeights(
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
)
# the word-piece vectors the aligned weights were fitted on; another model needs its own fit
TOKEN_MODEL = "minilm"

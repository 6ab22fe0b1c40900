"""Heuristic grounding: is each claim of the answer supported by the retrieved context?

The answer is split into claims (``ragmeter.metrics.claims``); questions, refusals and sentences
without content are not claims. Each claim gets a support score in [0, 1] from lexical evidence
against the retrieved chunk texts (the context):

* ``coverage``: share of the claim's content terms found in the context (stemmed, stop words
  out, NFKC-folded; CJK runs as character bigrams);
* the best-matching context sentence (most shared terms, via an inverted index) is recorded,
  and a negation present on one side only is a ``negation mismatch``;
* every number of the claim whose normalised value is not in the context is a missing number
  (``ragmeter.metrics.numbers``: "1,000" = "1000", "15%" = "15 percent", "$604" = "604");
* a claim about the speaker or the user ("I think", "you can") is ``personal``: the context
  cannot support it;
* optionally, the cosine of the claim to its best context sentence under an embedder.

``support = clip((1 - w_emb) * (coverage + w_bigram * bigram) / (1 + w_bigram)
+ w_emb * cosine - w_number * missing numbers - w_personal * personal
- w_negation * negation mismatch, 0, 1)`` (the embedding term only with an embedder and
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
``DEFAULT_SCORE_WEIGHTS``. Both were fitted on a seeded half of two human-labelled sets and are
reported on the other half (``bench/grounding_auc.py``, docs/grounding.md).

Metrics (group ``grounding``, need the ``retrieved`` input):

* ``claim_support_rate``: supported / checked claims (seed 003 target > 0.85);
* ``unsupported_claim_count``: checked claims that are not supported (lower is better);
* ``numeric_fabrication_count``: numbers of the answer (outside questions) whose value is not
  in the context (lower is better; 0 for an answer without numbers);
* ``grounding_score``: sigmoid(weights . answer signals), in (0, 1), its details naming the
  ``score_model`` ("aligned" or "lexical"); the term-weighted mean claim support (the score
  before the logistic model) is kept in its details as ``mean_support``.

An answer with no claim (empty, refusal only, questions only) is skipped by the three claim
metrics with reason "no checkable claims" (and by ``claim_support_rate`` /
``unsupported_claim_count`` also when every claim is general). With an empty context every
claim has support 0.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ragmeter.metrics import textmatch
from ragmeter.metrics.base import Metric, MetricOutput, MetricSettings, SkipScore
from ragmeter.metrics.claims import (
    FILLERS,
    ClaimType,
    NonClaim,
    extract_claims,
    fold,
    split_sentences,
)
from ragmeter.metrics.numbers import NumberMention, extract_numbers, value_key
from ragmeter.models import Case, Response
from ragmeter.text import stem, tokenize

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_NEGATION = re.compile(
    r"\b(not|no|never|none|nobody|nothing|neither|nor|without|cannot|isn't|aren't|wasn't|"
    r"weren't|don't|doesn't|didn't|won't|can't|couldn't|shouldn't|n't)\b|n't\b|\bn ' t\b"
)


# pieces of split contractions ("it ' s", "don ' t"): tokenizer artefacts, not content
# and unit words that belong to a number term ("15 percent" is the term #15 either way)
_FRAGMENTS = frozenset(["s", "t", "m", "d", "ll", "re", "ve", "nt", "percent"])


def terms(text: str) -> list[str]:
    """Content terms: NFKC-folded, stemmed content words; CJK runs become character bigrams;
    numbers become one term per normalised value ("1,000" and "1000" are both ``#1000``)."""
    text = unicodedata.normalize("NFKC", text)
    out: list[str] = []
    for token in tokenize(text):
        if token in _FRAGMENTS or token.isdigit():
            continue
        if _CJK.search(token) and len(token) > 2:
            out.extend(token[i : i + 2] for i in range(len(token) - 1))
        else:
            out.append(token)
    out.extend("#" + value_key(n.value) for n in extract_numbers(text))
    return out


def has_negation(text: str) -> bool:
    return bool(_NEGATION.search(fold(text)))


# attitude, opinion and discourse words: they say what the speaker feels or how the turn is
# framed, not a fact the context could support, so they are left out of the fact terms (and
# counted by the personal / opener signals instead); stemmed like ``terms``
STANCE_WORDS = frozenset(
    stem(w)
    for w in [
        "know",
        "knew",
        "think",
        "thought",
        "believe",
        "guess",
        "love",
        "loved",
        "like",
        "liked",
        "likes",
        "favorite",
        "favourite",
        "enjoy",
        "enjoyed",
        "fan",
        "heard",
        "hear",
        "agree",
        "sure",
        "interesting",
        "awesome",
        "great",
        "cool",
        "fun",
        "amazing",
        "wow",
        "wish",
        "hope",
        "want",
        "wanted",
        "feel",
        "sounds",
        "sound",
        "lot",
        "also",
        "actually",
        "really",
        "well",
        "yeah",
        "yea",
        "yes",
        "pretty",
        "definitely",
        "totally",
        "maybe",
        "kind",
        "stuff",
        "thing",
        "things",
    ]
)
_NOT_FACT = STANCE_WORDS | FILLERS
# first or second person anywhere in the answer ("us" is left out: "the US")
_PERSON_WORD = re.compile(
    r"\b(i|im|ive|me|my|mine|myself|we|our|ours|ourselves|you|your|yours|yourself|"
    r"yourselves)\b"
)
# a conversational opener: agreement, interjection or back-channel before any content
_OPENER = re.compile(
    r"^\W*(yes|yeah|yep|yea|no|nope|well|oh|wow|ok|okay|sure|haha|lol|hmm|um|uh|that's|"
    r"that is|me too|i agree)\b"
)


@dataclass
class Context:
    """The retrieved context, precomputed once per response for sentence-level matching."""

    sentences: list[str]
    sentence_terms: list[frozenset[str]]
    sentence_negated: list[bool]
    index: dict[str, list[int]]
    terms: frozenset[str]
    bigrams: frozenset[tuple[str, str]]
    numbers: frozenset[str]
    truncated: bool = False
    words: frozenset[str] = frozenset()  # every word, stop words included


def build_context(texts: list[str], max_chars: int = 2_000_000) -> Context:
    """Sentence term sets, an inverted index, bigrams and number values of the context."""
    sentences: list[str] = []
    used = 0
    truncated = False
    for text in texts:
        if used + len(text) > max_chars:
            text = text[: max(0, max_chars - used)]
            truncated = True
        used += len(text)
        sentences.extend(split_sentences(text))
    sentence_terms: list[frozenset[str]] = []
    index: dict[str, list[int]] = {}
    all_terms: set[str] = set()
    bigrams: set[tuple[str, str]] = set()
    for position, sentence in enumerate(sentences):
        sequence = terms(sentence)
        bigrams.update(pairwise(sequence))
        unique = frozenset(sequence)
        sentence_terms.append(unique)
        all_terms.update(unique)
        for term in unique:
            index.setdefault(term, []).append(position)
    numbers = frozenset(value_key(n.value) for t in texts for n in extract_numbers(t))
    context_words = frozenset(w for sentence in sentences for w in textmatch.words(sentence))
    return Context(
        sentences=sentences,
        sentence_terms=sentence_terms,
        sentence_negated=[has_negation(s) for s in sentences],
        index=index,
        terms=frozenset(all_terms),
        bigrams=frozenset(bigrams),
        numbers=numbers,
        truncated=truncated,
        words=context_words,
    )


@dataclass
class ClaimSignals:
    """Per-claim lexical evidence (all fractions in [0, 1])."""

    n_terms: int
    coverage: float  # share of the claim's terms found anywhere in the context
    sentence_coverage: float  # best share found within one context sentence
    best_sentence: int | None
    bigram_coverage: float  # share of the claim's term bigrams found in the context
    novel_terms: list[str] = field(default_factory=list)
    missing_numbers: list[str] = field(default_factory=list)
    n_numbers: int = 0
    negation_mismatch: bool = False
    # the same, over fact terms only (stance words and fillers out: ``STANCE_WORDS``)
    fact_terms: int = 0
    fact_found: int = 0
    fact_bigrams: int = 0
    fact_bigrams_found: int = 0
    novel_facts: frozenset[str] = frozenset()


def claim_signals(claim: str, context: Context) -> ClaimSignals:
    sequence = terms(claim)
    unique = set(sequence)
    numbers = extract_numbers(claim)
    missing = [n.text for n in numbers if value_key(n.value) not in context.numbers]
    facts = [t for t in sequence if t not in _NOT_FACT]
    fact_set = set(facts)
    fact_pairs = list(pairwise(facts))
    fact_fields: dict[str, Any] = {
        "fact_terms": len(fact_set),
        "fact_found": len(fact_set & context.terms),
        "fact_bigrams": len(fact_pairs),
        "fact_bigrams_found": sum(p in context.bigrams for p in fact_pairs),
        "novel_facts": frozenset(fact_set - context.terms),
    }
    if not unique:
        return ClaimSignals(0, 1.0, 1.0, None, 1.0, [], missing, len(numbers), **fact_fields)
    found = unique & context.terms
    hits: Counter[int] = Counter()
    for term in found:
        hits.update(context.index[term])
    best, best_hits = (hits.most_common(1)[0]) if hits else (None, 0)
    pairs = list(pairwise(sequence))
    bigram = sum(p in context.bigrams for p in pairs) / len(pairs) if pairs else float(bool(found))
    negation = best is not None and has_negation(claim) != context.sentence_negated[best]
    return ClaimSignals(
        n_terms=len(unique),
        coverage=len(found) / len(unique),
        sentence_coverage=best_hits / len(unique),
        best_sentence=best,
        bigram_coverage=bigram,
        novel_terms=sorted(unique - found),
        missing_numbers=missing,
        n_numbers=len(numbers),
        negation_mismatch=negation,
        **fact_fields,
    )


_PERSONAL = re.compile(
    r"\b(i|i'm|i've|i'd|i'll|im|ive|me|my|mine|myself|we|we're|we've|our|ours|you|you're|"
    r"you've|your|yours)\b"
)


def is_personal(claim: str) -> bool:
    """A claim about the speaker or the user (first or second person), which no context backs."""
    return bool(_PERSONAL.search(fold(claim)))


@dataclass(frozen=True)
class GroundingWeights:
    """How the per-claim signals combine into one support score (see the module doc)."""

    bigram: float = 0.0
    missing_number: float = 0.3
    personal: float = 0.2
    negation: float = 0.2
    embedding: float = 0.0
    non_claim: float = 0.0


# per-claim support weights (claim verdicts, ``mean_support``): chosen by an earlier grid search
# on the seeded tuning halves of Q-squared and BEGIN dev (docs/grounding.md); they no longer
# enter ``grounding_score``, which has its own fitted weights (``DEFAULT_SCORE_WEIGHTS``).
# Embedding alignment (MiniLM) is off by default; pass weights with ``embedding > 0`` to use it.
DEFAULT_WEIGHTS = GroundingWeights()


@dataclass(frozen=True)
class AnswerSignals:
    """Answer-level evidence that ``grounding_score`` combines (see ``ScoreWeights``)."""

    fact_coverage: float  # found / all fact terms, summed over the claims (1.0 without any)
    fact_bigram_coverage: float  # the same over consecutive fact-term pairs
    missing_numbers: int  # numbers of the claims whose value is not in the context
    novel_terms: int  # distinct fact terms of the claims not in the context
    personal: bool  # a first- or second-person word anywhere in the answer
    word_recall: float  # share of all the answer's words (stop words too) in the context
    opener: bool  # the answer opens with "yes", "well", "me too", "i agree", ...
    # MiniLM word-piece alignment of the answer to the context (``token_alignment``); None
    # when no token vectors were available
    token_precision: float | None = None  # mean over answer pieces of the best cosine
    weakest_token: float | None = None  # the lowest of those best cosines

    @property
    def aligned(self) -> bool:
        return self.token_precision is not None and self.weakest_token is not None

    def features(self) -> dict[str, float]:
        """The values the score weighs (``novel_terms`` as log(1 + count); the alignment
        signals as 0 when absent, where the lexical weights give them no weight)."""
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
        }


def answer_signals(
    answer: str,
    claims: list[ClaimSignals],
    context: Context,
    alignment: Alignment = None,
) -> AnswerSignals:
    """Aggregate the claims' fact-term evidence, read the answer's conversational cues and add
    the word-piece ``alignment`` (precision, weakest) when there is one."""
    fact_terms = sum(c.fact_terms for c in claims)
    coverage = sum(c.fact_found for c in claims) / fact_terms if fact_terms else 1.0
    pairs = sum(c.fact_bigrams for c in claims)
    bigram = sum(c.fact_bigrams_found for c in claims) / pairs if pairs else coverage
    folded = fold(answer)
    answer_words = textmatch.words(answer)
    recall = (
        sum(w in context.words for w in answer_words) / len(answer_words) if answer_words else 0.0
    )
    return AnswerSignals(
        fact_coverage=coverage,
        fact_bigram_coverage=bigram,
        missing_numbers=sum(len(c.missing_numbers) for c in claims),
        novel_terms=len(frozenset().union(*(c.novel_facts for c in claims))),
        personal=bool(_PERSON_WORD.search(folded)),
        word_recall=recall,
        opener=bool(_OPENER.search(folded)),
        token_precision=None if alignment is None else alignment[0],
        weakest_token=None if alignment is None else alignment[1],
    )


Alignment = tuple[float, float] | None  # (token precision, weakest token)
Aligner = Callable[[list[str], Context], Alignment]


def token_alignment(
    answer_tokens: npt.NDArray[np.float32], context_tokens: list[npt.NDArray[np.float32]]
) -> Alignment:
    """BERTScore-style precision of the answer against the context: each answer word piece's
    best cosine with any context word piece (rows are L2-normalised), then their mean and their
    minimum. None for an answer without word pieces; (0, 0) for a context without any."""
    if answer_tokens.shape[0] == 0:
        return None
    matrices = [m for m in context_tokens if m.shape[0]]
    if not matrices:
        return 0.0, 0.0
    best = np.clip((answer_tokens @ np.vstack(matrices).T).max(axis=1), -1.0, 1.0)
    return float(best.mean()), float(best.min())


def aligned_sentences(answer: str, context: Context, limit: int) -> list[str]:
    """The context sentences whose word pieces the answer is aligned to: all of them up to
    ``limit``, else the ``limit`` sharing the most terms with the answer (context order)."""
    if len(context.sentences) <= limit:
        return context.sentences
    hits: Counter[int] = Counter()
    for term in set(terms(answer)) & context.terms:
        hits.update(context.index[term])
    ranked = sorted(range(len(context.sentences)), key=lambda i: (-hits[i], i))[:limit]
    return [context.sentences[i] for i in sorted(ranked)]


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

    def score(self, signals: AnswerSignals) -> float:
        z = self.intercept + sum(
            getattr(self, name) * value for name, value in signals.features().items()
        )
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


# fitted by `python bench/grounding_auc.py --tune` on the seeded tuning halves (seed 0) of
# Q-squared and BEGIN dev only: a pairwise-logistic (AUC surrogate) fit with the two sets
# weighted equally, then a logistic calibration of its output; docs/grounding.md reports them on
# the held-out halves
DEFAULT_SCORE_WEIGHTS = ScoreWeights(
    intercept=-2.9,
    coverage=2.539,
    bigram=0.793,
    missing_numbers=-1.413,
    novel_terms=-0.16,
    personal=-0.634,
    word_recall=1.753,
    opener=-0.542,
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
)
# the word-piece vectors the aligned weights were fitted on; another model needs its own fit
TOKEN_MODEL = "minilm"
MAX_ALIGNED_SENTENCES = 32  # context sentences aligned per answer (the most related ones)
THRESHOLDS: dict[str, float] = {"assertion": 0.7, "inference": 0.5}
MAX_CLAIMS = 200
MAX_CONTEXT_CHARS = 2_000_000


class SentenceEmbedder(Protocol):
    def embed(self, texts: list[str]) -> Any: ...


class TokenEmbedder(Protocol):
    def token_embeddings(self, texts: list[str]) -> list[npt.NDArray[np.float32]]: ...


_ALIGNMENT_FEATURES = ("token_precision", "weakest_token")


@dataclass
class ClaimVerdict:
    text: str
    type: ClaimType
    indicator: str | None
    support: float
    supported: bool | None  # None: a general claim, not checked
    signals: ClaimSignals
    personal: bool = False
    embedding_cosine: float | None = None

    def as_dict(self, context: Context) -> dict[str, Any]:
        best = self.signals.best_sentence
        return {
            "claim": self.text,
            "type": self.type,
            "indicator": self.indicator,
            "support": round(self.support, 4),
            "verdict": "skipped (general)"
            if self.supported is None
            else ("supported" if self.supported else "unsupported"),
            "coverage": round(self.signals.coverage, 4),
            "bigram_coverage": round(self.signals.bigram_coverage, 4),
            "best_sentence": context.sentences[best][:300] if best is not None else None,
            "best_sentence_coverage": round(self.signals.sentence_coverage, 4),
            "novel_terms": self.signals.novel_terms[:20],
            "missing_numbers": self.signals.missing_numbers,
            "negation_mismatch": self.signals.negation_mismatch,
            "personal": self.personal,
            "embedding_cosine": None
            if self.embedding_cosine is None
            else round(self.embedding_cosine, 4),
        }


@dataclass
class Assessment:
    """Everything the four grounding metrics report about one answer."""

    claims: list[ClaimVerdict]
    non_claims: list[NonClaim]
    answer_numbers: list[NumberMention]
    fabricated_numbers: list[NumberMention]
    context: Context
    notes: list[str]
    non_claim_weight: float = 0.0
    signals: AnswerSignals | None = None  # None without claims
    score_weights: ScoreWeights = DEFAULT_SCORE_WEIGHTS
    aligned_score_weights: ScoreWeights = ALIGNED_SCORE_WEIGHTS

    @property
    def checked(self) -> list[ClaimVerdict]:
        return [c for c in self.claims if c.supported is not None]

    @property
    def unsupported(self) -> list[ClaimVerdict]:
        return [c for c in self.claims if c.supported is False]

    @property
    def signals_aligned(self) -> bool:
        return self.signals is not None and self.signals.aligned

    @property
    def score_model(self) -> str | None:
        """Which weights ``score`` uses: "aligned" (lexical and word-piece signals) when the
        answer has its alignment signals, else "lexical". None without claims."""
        if self.signals is None:
            return None
        return "aligned" if self.signals.aligned else "lexical"

    @property
    def score(self) -> float | None:
        """``grounding_score``: the answer's signals through the weights of its
        ``score_model`` (a logistic model, in (0, 1)). None without claims."""
        if self.signals is None:
            return None
        if self.signals.aligned:
            return self.aligned_score_weights.score(self.signals)
        return self.score_weights.score(self.signals)

    @property
    def mean_support(self) -> float | None:
        """Term-weighted mean claim support; non-claim sentences (questions, hedges, chit-chat)
        add ``non_claim_weight`` x their terms as unsupported content. None without claims."""
        if not self.claims:
            return None
        supported = sum(c.support * max(c.signals.n_terms, 1) for c in self.claims)
        total = float(sum(max(c.signals.n_terms, 1) for c in self.claims))
        total += self.non_claim_weight * sum(len(terms(n.text)) for n in self.non_claims)
        return supported / total

    def details(self) -> dict[str, Any]:
        mean_support = self.mean_support
        features = None if self.signals is None else self.signals.features()
        if features is not None and not self.signals_aligned:
            features = {k: v for k, v in features.items() if k not in _ALIGNMENT_FEATURES}
        return {
            "score_model": self.score_model,
            "answer_signals": None
            if features is None
            else {k: round(v, 4) for k, v in features.items()},
            "mean_support": None if mean_support is None else round(mean_support, 4),
            "claims": [c.as_dict(self.context) for c in self.claims],
            "unsupported_claims": [c.text for c in self.unsupported],
            "non_claims": [{"text": n.text[:300], "reason": n.reason} for n in self.non_claims],
            "fabricated_numbers": [n.text for n in self.fabricated_numbers],
            "context_sentences": len(self.context.sentences),
            "notes": self.notes,
        }


def _support(
    signals: ClaimSignals, personal: bool, cosine: float | None, w: GroundingWeights
) -> float:
    if signals.n_terms == 0:
        lexical = 1.0
    else:
        lexical = (signals.coverage + w.bigram * signals.bigram_coverage) / (1 + w.bigram)
    if cosine is not None and w.embedding > 0:
        lexical = (1 - w.embedding) * lexical + w.embedding * max(cosine, 0.0)
    value = (
        lexical
        - w.missing_number * len(signals.missing_numbers)
        - w.personal * personal
        - w.negation * signals.negation_mismatch
    )
    return min(1.0, max(0.0, value))


def _cosines(claims: list[str], context: Context, embedder: SentenceEmbedder) -> list[float]:
    if not claims or not context.sentences:
        return [0.0] * len(claims)
    claim_vectors = np.asarray(embedder.embed(claims), dtype=np.float32)
    sentence_vectors = np.asarray(embedder.embed(context.sentences), dtype=np.float32)
    return [float(x) for x in (claim_vectors @ sentence_vectors.T).max(axis=1)]


def assess(
    answer: str,
    contexts: list[str],
    weights: GroundingWeights = DEFAULT_WEIGHTS,
    embedder: SentenceEmbedder | None = None,
    score_weights: ScoreWeights = DEFAULT_SCORE_WEIGHTS,
    aligner: Aligner | None = None,
    aligned_score_weights: ScoreWeights = ALIGNED_SCORE_WEIGHTS,
) -> Assessment:
    """Split, classify and score every claim of ``answer`` against the ``contexts`` texts;
    with an ``aligner`` (``token_aligner``: MiniLM word pieces) the score also uses the claims'
    alignment to the context."""
    notes: list[str] = []
    context = build_context(contexts, MAX_CONTEXT_CHARS)
    if context.truncated:
        notes.append(f"context cut to its first {MAX_CONTEXT_CHARS} characters")
    claims, non_claims = extract_claims(answer, MAX_CLAIMS)
    if len(claims) == MAX_CLAIMS:
        notes.append(f"only the first {MAX_CLAIMS} claims were checked")
    cosines: list[float | None] = [None] * len(claims)
    if embedder is not None and weights.embedding > 0:
        try:
            cosines = list(_cosines([c.text for c in claims], context, embedder))
        except Exception as exc:  # fail soft: lexical only, and say why
            notes.append(f"embedding alignment not used: {type(exc).__name__}: {exc}")
    verdicts: list[ClaimVerdict] = []
    for claim, cosine in zip(claims, cosines, strict=True):
        signals = claim_signals(claim.text, context)
        personal = is_personal(claim.text)
        support = _support(signals, personal, cosine, weights)
        supported = None if claim.type == "general" else support >= THRESHOLDS[claim.type]
        verdicts.append(
            ClaimVerdict(
                claim.text,
                claim.type,
                claim.indicator,
                support,
                supported,
                signals,
                personal,
                cosine,
            )
        )
    numbers = [n for c in claims for n in extract_numbers(c.text)]
    fabricated = [n for n in numbers if value_key(n.value) not in context.numbers]
    overall = None
    if verdicts:
        alignment = None
        if aligner is not None:
            try:
                alignment = aligner([c.text for c in claims], context)
            except Exception as exc:  # fail soft: the lexical model, and say why
                notes.append(f"word-piece alignment not used: {type(exc).__name__}: {exc}")
        overall = answer_signals(answer, [v.signals for v in verdicts], context, alignment)
    return Assessment(
        verdicts,
        non_claims,
        numbers,
        fabricated,
        context,
        notes,
        weights.non_claim,
        overall,
        score_weights,
        aligned_score_weights,
    )


_CITATION_MARK = re.compile(r"\s*\[[^\[\]\n]{1,200}\]")


def alignment_texts(claims: list[str], context: Context) -> list[str]:
    """What ``token_aligner`` embeds: the claims as one text (citation marks such as
    "[doc#section]" out), then the context sentences it is aligned to."""
    answer = _CITATION_MARK.sub("", " ".join(claims)).strip()
    return [answer, *aligned_sentences(answer, context, MAX_ALIGNED_SENTENCES)]


def token_aligner(embedder: TokenEmbedder) -> Aligner:
    """Aligns claims to a context with ``embedder``'s word-piece vectors."""

    def align(claims: list[str], context: Context) -> Alignment:
        vectors = embedder.token_embeddings(alignment_texts(claims, context))
        return token_alignment(vectors[0], vectors[1:])

    return align


def _skip_abstention(response: Response) -> None:
    if response.abstained:
        raise SkipScore("the response abstained (no claims to ground)")


NO_CHECKED_CLAIMS = "no checked claims (none, or only general claims, which are not checked)"


class GroundingState:
    """Per-run state of the family: the embedders (built lazily, failing soft), the word-piece
    alignments computed in batches by ``prepare``, and a cache of assessments."""

    def __init__(
        self,
        embedder_spec: str | None,
        weights: GroundingWeights = DEFAULT_WEIGHTS,
        score_weights: ScoreWeights = DEFAULT_SCORE_WEIGHTS,
        aligned_score_weights: ScoreWeights = ALIGNED_SCORE_WEIGHTS,
        align: bool = True,
    ):
        self.embedder_spec = embedder_spec
        self.weights = weights
        self.score_weights = score_weights
        self.aligned_score_weights = aligned_score_weights
        self.align = align
        self._embedder: SentenceEmbedder | None = None
        self.embedder_note: str | None = None
        self._cache: dict[tuple[str, tuple[str, ...]], Assessment] = {}
        self._tried = False
        self._token_embedder: TokenEmbedder | None = None
        self.token_note: str | None = None if align else "word-piece alignment off: lexical model"
        self._token_tried = False
        self._alignments: dict[tuple[str, ...], Alignment] = {}

    def embedder(self) -> SentenceEmbedder | None:
        if self.weights.embedding <= 0 or not self.embedder_spec:
            self.embedder_note = "embedding alignment off (weight 0): lexical signals only"
            return None
        if not self._tried:
            self._tried = True
            try:
                from ragmeter.embedders import build_embedder

                self._embedder = build_embedder(self.embedder_spec)
            except Exception as exc:  # no embedder: lexical only, with the reason recorded
                self.embedder_note = (
                    f"embedder {self.embedder_spec!r} unavailable ({type(exc).__name__}: {exc});"
                    " lexical signals only"
                )
        return self._embedder

    def token_embedder(self) -> TokenEmbedder | None:
        """MiniLM's word-piece vectors for ``grounding_score``, or None (lexical model) with
        the reason in ``token_note``."""
        if self.align and not self._token_tried:
            self._token_tried = True
            try:
                from ragmeter.embedders import build_embedder

                self._token_embedder = build_embedder(TOKEN_MODEL)
            except Exception as exc:
                self.token_note = (
                    f"word-piece alignment unavailable ({type(exc).__name__}: {exc}): "
                    "grounding_score uses its lexical model"
                )
        return self._token_embedder

    def aligner(self) -> Aligner | None:
        """Alignments from ``prepare``'s batches, else computed (and kept) one answer at a
        time."""
        embedder = self.token_embedder()
        if embedder is None:
            return None

        def align(claims: list[str], context: Context) -> Alignment:
            key = tuple(alignment_texts(claims, context))
            if key not in self._alignments:
                vectors = embedder.token_embeddings(list(key))
                self._alignments[key] = token_alignment(vectors[0], vectors[1:])
            return self._alignments[key]

        return align

    def prepare(self, pairs: list[tuple[Case, Response]]) -> None:
        """Embed in batches what the run needs: claims and context sentences (when the claim
        support uses an embedder), and the word-piece texts of every answer's alignment."""
        self._prepare_alignments(pairs)
        embedder = self.embedder()
        if embedder is None:
            return
        texts: list[str] = []
        for _, response in pairs:
            texts.extend(c.text for c in extract_claims(response.answer, MAX_CLAIMS)[0])
            texts.extend(build_context([r.text for r in response.retrieved]).sentences)
        try:
            embedder.embed(list(dict.fromkeys(texts)))
        except Exception as exc:  # scored lexically later if the embedder keeps failing
            self.embedder_note = f"batch embedding failed ({type(exc).__name__}: {exc})"

    def _prepare_alignments(self, pairs: list[tuple[Case, Response]], batch: int = 512) -> None:
        """Alignments of every answer with claims, ``batch`` distinct texts per embedding call;
        only the two numbers per answer are kept, not the vectors."""
        embedder = self.token_embedder()
        if embedder is None:
            return
        pending: list[tuple[str, ...]] = []
        for _, response in pairs:
            if response.abstained:
                continue
            claims = [c.text for c in extract_claims(response.answer, MAX_CLAIMS)[0]]
            if claims:
                context = build_context([r.text for r in response.retrieved], MAX_CONTEXT_CHARS)
                pending.append(tuple(alignment_texts(claims, context)))
        pending = [key for key in dict.fromkeys(pending) if key not in self._alignments]
        start = 0
        while start < len(pending):
            group: list[tuple[str, ...]] = []
            texts: dict[str, None] = {}
            while start < len(pending) and (not group or len(texts) < batch):
                group.append(pending[start])
                texts.update(dict.fromkeys(pending[start]))
                start += 1
            try:
                vectors = dict(zip(texts, embedder.token_embeddings(list(texts)), strict=True))
            except Exception as exc:  # each answer tries again alone when it is scored
                self.token_note = f"batch word-piece embedding failed ({type(exc).__name__}: {exc})"
                return
            for key in group:
                self._alignments[key] = token_alignment(
                    vectors[key[0]], [vectors[t] for t in key[1:]]
                )

    def assess(self, response: Response) -> Assessment:
        key = (response.answer, tuple(chunk.text for chunk in response.retrieved))
        found = self._cache.get(key)
        if found is None:
            found = assess(
                key[0],
                list(key[1]),
                self.weights,
                self.embedder(),
                self.score_weights,
                self.aligner(),
                self.aligned_score_weights,
            )
            found.notes.extend(n for n in (self.embedder_note, self.token_note) if n)
            if len(self._cache) > 1024:
                self._cache.clear()
            self._cache[key] = found
        return found


def grounding_metrics(
    settings: MetricSettings,
    weights: GroundingWeights = DEFAULT_WEIGHTS,
    score_weights: ScoreWeights = DEFAULT_SCORE_WEIGHTS,
    aligned_score_weights: ScoreWeights = ALIGNED_SCORE_WEIGHTS,
) -> list[Metric]:
    state = GroundingState(
        settings.embedder,
        weights,
        score_weights,
        aligned_score_weights,
        align=settings.grounding_model == "auto",
    )

    def support_rate(_: Case, response: Response) -> MetricOutput:
        _skip_abstention(response)
        result = state.assess(response)
        checked = result.checked
        if not checked:
            raise SkipScore(NO_CHECKED_CLAIMS)
        supported = sum(bool(c.supported) for c in checked)
        return supported / len(checked), result.details()

    def unsupported_count(_: Case, response: Response) -> MetricOutput:
        _skip_abstention(response)
        result = state.assess(response)
        if not result.checked:
            raise SkipScore(NO_CHECKED_CLAIMS)
        return float(len(result.unsupported)), result.details()

    def numeric_fabrications(_: Case, response: Response) -> MetricOutput:
        result = state.assess(response)
        return float(len(result.fabricated_numbers)), {
            "answer_numbers": [n.text for n in result.answer_numbers],
            "normalized": [n.normalized for n in result.answer_numbers],
            "fabricated_numbers": [n.text for n in result.fabricated_numbers],
        }

    def score(_: Case, response: Response) -> MetricOutput:
        _skip_abstention(response)
        result = state.assess(response)
        if result.score is None:
            raise SkipScore("no checkable claims (empty, refusal-only or question-only answer)")
        return result.score, result.details()

    needs = ("retrieved",)
    return [
        Metric(
            "claim_support_rate",
            "grounding",
            support_rate,
            needs,
            description="share of checked (assertion and inference) claims the context supports",
            prepare=state.prepare,
        ),
        Metric(
            "unsupported_claim_count",
            "grounding",
            unsupported_count,
            needs,
            higher_is_better=False,
            unit="claims",
            description="checked claims the retrieved context does not support",
            prepare=state.prepare,
        ),
        Metric(
            "numeric_fabrication_count",
            "grounding",
            numeric_fabrications,
            ("retrieved",),
            higher_is_better=False,
            unit="numbers",
            description="numbers in the answer whose normalised value is not in the context",
            prepare=state.prepare,
        ),
        Metric(
            "grounding_score",
            "grounding",
            score,
            ("retrieved",),
            description="continuous support of the answer's claims by the context, in [0, 1]",
            prepare=state.prepare,
        ),
    ]

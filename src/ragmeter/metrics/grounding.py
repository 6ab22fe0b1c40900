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
``w_emb > 0``, which is off by default: it did not help on the tuning data); the weights
(``DEFAULT_WEIGHTS``) were chosen on a seeded half of two human-labelled sets and are reported
on the other half (``bench/grounding_auc.py``, docs/grounding.md). A claim is supported when
its support reaches the threshold of its type (assertion 0.7, inference 0.5); general claims
are not checked.

Metrics (group ``grounding``, need the ``retrieved`` input):

* ``claim_support_rate``: supported / checked claims (seed 003 target > 0.85);
* ``unsupported_claim_count``: checked claims that are not supported (lower is better);
* ``numeric_fabrication_count``: numbers of the answer (outside questions) whose value is not
  in the context (lower is better; 0 for an answer without numbers);
* ``grounding_score``: continuous support of the whole answer in [0, 1]: the content-term-
  weighted mean of the support of all its claims (general ones included), where the content of
  non-claim sentences (questions, hedges, chit-chat) counts as unsupported with weight
  ``w_non_claim``.

An answer with no claim (empty, refusal only, questions only) is skipped by the three claim
metrics with reason "no checkable claims" (and by ``claim_support_rate`` /
``unsupported_claim_count`` also when every claim is general). With an empty context every
claim has support 0.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Protocol

import numpy as np

from ragmeter.metrics.base import Metric, MetricOutput, MetricSettings, SkipScore
from ragmeter.metrics.claims import (
    ClaimType,
    NonClaim,
    extract_claims,
    split_sentences,
)
from ragmeter.metrics.numbers import NumberMention, extract_numbers, value_key
from ragmeter.models import Case, Response
from ragmeter.targets.reference.text import tokenize

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
    return bool(_NEGATION.search(text.lower().replace("\u2019", "'")))


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
    return Context(
        sentences=sentences,
        sentence_terms=sentence_terms,
        sentence_negated=[has_negation(s) for s in sentences],
        index=index,
        terms=frozenset(all_terms),
        bigrams=frozenset(bigrams),
        numbers=numbers,
        truncated=truncated,
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


def claim_signals(claim: str, context: Context) -> ClaimSignals:
    sequence = terms(claim)
    unique = set(sequence)
    numbers = extract_numbers(claim)
    missing = [n.text for n in numbers if value_key(n.value) not in context.numbers]
    if not unique:
        return ClaimSignals(0, 1.0, 1.0, None, 1.0, [], missing, len(numbers))
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
    )


_PERSONAL = re.compile(
    r"\b(i|i'm|i've|i'd|i'll|im|ive|me|my|mine|myself|we|we're|we've|our|ours|you|you're|"
    r"you've|your|yours)\b"
)


def is_personal(claim: str) -> bool:
    """A claim about the speaker or the user (first or second person), which no context backs."""
    folded = claim.lower().replace("\u2019", "'").replace(" ' ", "'")
    return bool(_PERSONAL.search(folded))


@dataclass(frozen=True)
class GroundingWeights:
    """How the per-claim signals combine into one support score (see the module doc)."""

    bigram: float = 0.0
    missing_number: float = 0.3
    personal: float = 0.2
    negation: float = 0.2
    embedding: float = 0.0
    non_claim: float = 0.0


# chosen by `python bench/grounding_auc.py --tune` on the seeded tuning halves (seed 0) of
# Q-squared and BEGIN dev (grid search, best smallest gain over the token-recall baseline); the
# held-out halves are what docs/grounding.md reports. Embedding alignment (MiniLM) was in the
# grid and not chosen, so it is off by default; pass weights with ``embedding > 0`` to use it.
DEFAULT_WEIGHTS = GroundingWeights()
THRESHOLDS: dict[str, float] = {"assertion": 0.7, "inference": 0.5}
MAX_CLAIMS = 200
MAX_CONTEXT_CHARS = 2_000_000


class SentenceEmbedder(Protocol):
    def embed(self, texts: list[str]) -> Any: ...


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

    @property
    def checked(self) -> list[ClaimVerdict]:
        return [c for c in self.claims if c.supported is not None]

    @property
    def unsupported(self) -> list[ClaimVerdict]:
        return [c for c in self.claims if c.supported is False]

    @property
    def score(self) -> float | None:
        """Term-weighted mean claim support; non-claim sentences (questions, hedges, chit-chat)
        add ``non_claim_weight`` x their terms as unsupported content. None without claims."""
        if not self.claims:
            return None
        supported = sum(c.support * max(c.signals.n_terms, 1) for c in self.claims)
        total = float(sum(max(c.signals.n_terms, 1) for c in self.claims))
        total += self.non_claim_weight * sum(len(terms(n.text)) for n in self.non_claims)
        return supported / total

    def details(self) -> dict[str, Any]:
        return {
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
) -> Assessment:
    """Split, classify and score every claim of ``answer`` against the ``contexts`` texts."""
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
    return Assessment(verdicts, non_claims, numbers, fabricated, context, notes, weights.non_claim)


def _skip_abstention(response: Response) -> None:
    if response.abstained:
        raise SkipScore("the response abstained (no claims to ground)")


NO_CHECKED_CLAIMS = "no checked claims (none, or only general claims, which are not checked)"


class GroundingState:
    """Per-run state of the family: the embedder (built lazily, failing soft) and a cache."""

    def __init__(self, embedder_spec: str | None, weights: GroundingWeights = DEFAULT_WEIGHTS):
        self.embedder_spec = embedder_spec
        self.weights = weights
        self._embedder: SentenceEmbedder | None = None
        self.embedder_note: str | None = None
        self._cache: dict[tuple[str, tuple[str, ...]], Assessment] = {}
        self._tried = False

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

    def prepare(self, pairs: list[tuple[Case, Response]]) -> None:
        """Embed every claim and context sentence of the run in one batch (when embedding)."""
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

    def assess(self, response: Response) -> Assessment:
        key = (response.answer, tuple(chunk.text for chunk in response.retrieved))
        found = self._cache.get(key)
        if found is None:
            found = assess(key[0], list(key[1]), self.weights, self.embedder())
            if self.embedder_note:
                found.notes.append(self.embedder_note)
            if len(self._cache) > 1024:
                self._cache.clear()
            self._cache[key] = found
        return found


def grounding_metrics(
    settings: MetricSettings, weights: GroundingWeights = DEFAULT_WEIGHTS
) -> list[Metric]:
    state = GroundingState(settings.embedder, weights)

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

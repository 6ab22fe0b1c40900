"""Assessing an answer against its retrieved context: every claim's support and verdict
(``ClaimVerdict``), the numbers, the answer signals and the score (``Assessment``, ``assess``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragmeter.metrics.claims import Claim, ClaimType, NonClaim, extract_claims
from ragmeter.metrics.grounding.alignment import Aligner, SentenceEmbedder, _cosines
from ragmeter.metrics.grounding.features import (
    ClaimSignals,
    Context,
    build_context,
    claim_signals,
    is_personal,
    terms,
)
from ragmeter.metrics.grounding.model import (
    ALIGNED_SCORE_WEIGHTS,
    DEFAULT_SCORE_WEIGHTS,
    DEFAULT_WEIGHTS,
    MAX_MISSING_NUMBERS_PER_CLAIM,
    MAX_RELATION_VIOLATIONS_PER_CLAIM,
    AnswerSignals,
    GroundingWeights,
    ScoreWeights,
    answer_signals,
)
from ragmeter.metrics.grounding.questions import QuestionClaim, question_claim
from ragmeter.metrics.grounding.relations import KeyTerm
from ragmeter.metrics.markers import strip_markers
from ragmeter.metrics.numbers import NumberMention, extract_numbers, unsupported_numbers

THRESHOLDS: dict[str, float] = {"assertion": 0.7, "inference": 0.5}
MAX_CLAIMS = 200
MAX_CONTEXT_CHARS = 2_000_000


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
    model_support: float | None = None  # an NLI model's entailment probability, when one is used
    asked: QuestionClaim | None = None  # a short answer read through its question

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
            "unbound_terms": [] if self.signals.relation is None else self.signals.relation.unbound,
            "lost_qualifiers": []
            if self.signals.relation is None
            else self.signals.relation.lost_qualifiers,
            "personal": self.personal,
            "embedding_cosine": None
            if self.embedding_cosine is None
            else round(self.embedding_cosine, 4),
            "model_support": None if self.model_support is None else round(self.model_support, 4),
            "from_question": None
            if self.asked is None
            else {
                "answer": self.asked.answer,
                "reads_as": self.asked.polarity,
                "statement": self.asked.text,
            },
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
    markers: tuple[str, ...] = ()  # ids of the answer's citation markers (removed before reading)
    signals: AnswerSignals | None = None  # None without claims
    score_weights: ScoreWeights = DEFAULT_SCORE_WEIGHTS
    aligned_score_weights: ScoreWeights = ALIGNED_SCORE_WEIGHTS
    model_score: float | None = None  # set when an NLI model scores the claims (score_model "nli")
    asked: QuestionClaim | None = None  # a short answer read through its question ("question")
    # ``shared_details``' dict, made once the assessment is complete
    _details: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)

    def shared_details(self) -> dict[str, Any]:
        """``details()`` made once and shared by the metrics that report it (the store then
        writes its JSON once); for a complete assessment only, and never changed."""
        if self._details is None:
            self._details = self.details()
        return self._details

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
        """Which model ``score`` uses: "nli" (a local NLI model), "question" (a yes/no answer
        read through its question: the support of the statement it asserts), "aligned"
        (lexical and word-piece signals) when the answer has its alignment signals, else
        "lexical". None without claims."""
        if self.model_score is not None:
            return "nli"
        if self.asked is not None and self.asked.polarity != "span":
            return "question"
        if self.signals is None:
            return None
        return "aligned" if self.signals.aligned else "lexical"

    @property
    def score(self) -> float | None:
        """``grounding_score``: the answer's signals through the weights of its
        ``score_model`` (a logistic model, in (0, 1)), capped by the claim support for a span
        answer read through its question; a yes/no answer's statement support; or the NLI
        model's score when one was used. None without claims."""
        if self.model_score is not None:
            return self.model_score
        if self.asked is not None and self.asked.polarity != "span":
            return self.claims[0].support if self.claims else None
        if self.signals is None:
            return None
        if self.signals.aligned:
            value = self.aligned_score_weights.score(self.signals)
        else:
            value = self.score_weights.score(self.signals)
        if self.asked is not None:  # a span: no higher than its claims' support
            value = min([value, *(c.support for c in self.claims)])
        return value

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
            "citation_markers": list(self.markers),
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
        - w.missing_number * min(signals.missing_weight, MAX_MISSING_NUMBERS_PER_CLAIM)
        - w.personal * personal
        - w.negation * signals.negation_mismatch
        - w.relation * min(signals.relation_violations, MAX_RELATION_VIOLATIONS_PER_CLAIM)
    )
    return min(1.0, max(0.0, value))


def _verdicts(
    claims: list[Claim],
    context: Context,
    weights: GroundingWeights,
    embedder: SentenceEmbedder | None,
    notes: list[str],
    focus: KeyTerm | None = None,
    asked_terms: frozenset[str] = frozenset(),
) -> list[ClaimVerdict]:
    cosines: list[float | None] = [None] * len(claims)
    if embedder is not None and weights.embedding > 0:
        try:
            cosines = list(_cosines([c.text for c in claims], context, embedder))
        except Exception as exc:  # fail soft: lexical only, and say why
            notes.append(f"embedding alignment not used: {type(exc).__name__}: {exc}")
    verdicts: list[ClaimVerdict] = []
    for claim, cosine in zip(claims, cosines, strict=True):
        signals = claim_signals(claim.text, context, focus=focus, asked=asked_terms)
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
    return verdicts


def _question_verdict(
    asked: QuestionClaim, context: Context, weights: GroundingWeights
) -> ClaimVerdict:
    """The verdict on what a yes/no answer asserts about its question (``questions``).

    "yes" is supported like the question's statement, except that a context negating the
    statement caps its support at 0.3. "no" is supported by a context that negates the
    statement or binds its names and numbers to something else (or names another in their
    place), with the share of the statement's terms it accounts for; otherwise its support is
    1 minus the statement's."""
    signals = claim_signals(asked.text, context)
    support = _support(signals, False, None, weights)
    if asked.polarity == "yes" and signals.negation_mismatch:
        support = min(support, 0.3)
    elif asked.polarity == "no":
        relation = signals.relation
        absent = len(relation.absent) if relation is not None else 0
        if signals.negation_mismatch or signals.relation_violations or absent:
            found = signals.coverage * signals.n_terms
            support = min(1.0, (found + absent) / max(signals.n_terms, 1))
        else:
            support = 1.0 - support
    return ClaimVerdict(
        asked.text,
        "assertion",
        None,
        support,
        support >= THRESHOLDS["assertion"],
        signals,
        asked=asked,
    )


def _focus(
    asked: QuestionClaim | None, question: str | None
) -> tuple[KeyTerm | None, frozenset[str]]:
    """A span answer's focus (its terms the question does not have) and the question's terms."""
    if asked is None or asked.focus is None or not question:
        return None, frozenset()
    asked_terms = frozenset(terms(question))
    readings = tuple(t for t in dict.fromkeys(terms(asked.focus)) if t not in asked_terms)
    return (KeyTerm(asked.focus, readings) if readings else None), asked_terms


def assess(
    answer: str,
    contexts: list[str],
    weights: GroundingWeights = DEFAULT_WEIGHTS,
    embedder: SentenceEmbedder | None = None,
    score_weights: ScoreWeights = DEFAULT_SCORE_WEIGHTS,
    aligner: Aligner | None = None,
    aligned_score_weights: ScoreWeights = ALIGNED_SCORE_WEIGHTS,
    *,
    question: str | None = None,
) -> Assessment:
    """Split, classify and score every claim of ``answer`` against the ``contexts`` texts;
    with an ``aligner`` (``token_aligner``: MiniLM word pieces) the score also uses the claims'
    alignment to the context. Citation markers ("[1]", "(Source: X)") are removed from the
    answer first; their ids are kept in ``Assessment.markers``."""
    notes: list[str] = []
    marked = strip_markers(answer)
    answer = marked.text
    context = build_context(contexts, MAX_CONTEXT_CHARS)
    if context.truncated:
        notes.append(f"context cut to its first {MAX_CONTEXT_CHARS} characters")
    asked = question_claim(question, answer)
    if asked is not None and asked.polarity != "span":
        verdicts = [_question_verdict(asked, context, weights)]
        claims: list[Claim] = [Claim(asked.text, "assertion", None)]
        non_claims: list[NonClaim] = []
        by_claim = [extract_numbers(asked.answer, dates=True)]
    else:
        claims, non_claims = extract_claims(answer, MAX_CLAIMS)
        if len(claims) == MAX_CLAIMS:
            notes.append(f"only the first {MAX_CLAIMS} claims were checked")
        focus, asked_terms = _focus(asked, question)
        verdicts = _verdicts(claims, context, weights, embedder, notes, focus, asked_terms)
        for verdict in verdicts:
            verdict.asked = asked
        by_claim = [extract_numbers(c.text, dates=True) for c in claims]
    numbers = [n for found in by_claim for n in found]
    fabricated = [n for found in by_claim for n in unsupported_numbers(found, context.numbers)]
    overall = None
    if verdicts:
        alignment = None
        if aligner is not None and asked is None:
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
        marked.ids,
        overall,
        score_weights,
        aligned_score_weights,
        asked=asked,
    )

"""Lexical evidence for grounding: content terms, negation, stance words, the precomputed
context (``build_context``) and each claim's signals against it (``claim_signals``), including
the numbers of the claim whose normalised value is not in the context."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from ragmeter.metrics import textmatch
from ragmeter.metrics.claims import FILLERS, fold, split_sentences
from ragmeter.metrics.numbers import extract_numbers, value_key
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

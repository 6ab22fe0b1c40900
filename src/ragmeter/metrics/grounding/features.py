"""Lexical evidence for grounding: content terms, negation, stance words, the precomputed
context (``build_context``) and each claim's signals against it (``claim_signals``), including
the numbers of the claim whose normalised value is not in the context.

Everything here is deterministic: no result depends on the iteration order of a set or on the
hash seed (a claim's best sentence is the one sharing the most terms, the earliest on a tie)."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise
from typing import Any

from ragmeter.metrics import textmatch
from ragmeter.metrics.claims import FILLERS, fold, split_sentences
from ragmeter.metrics.grounding.relations import (
    MAX_HEADING_WORDS,
    KeyTerm,
    Relation,
    Windows,
    context_names,
    continues,
    key_terms,
    name_evidence,
    relation,
)
from ragmeter.metrics.markers import strip_markers
from ragmeter.metrics.numbers import (
    NumberMention,
    context_keys,
    extract_numbers,
    missing_weight,
    unsupported_numbers,
    value_key,
)
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
    numbers become one term per normalised value ("1,000" and "1000" are both ``#1000``; see
    ``number_terms`` for dates and tokenised numbers). A unit conversion ("5 km (3.1 mi)") adds
    no term. A context sentence also gets ``number_keys``."""
    mentions = extract_numbers(text, dates=True)
    text = unicodedata.normalize("NFKC", text)
    out: list[str] = []
    for token in tokenize(text):
        if token in _FRAGMENTS or token.isdigit():
            continue
        if _CJK.search(token) and len(token) > 2:
            out.extend(token[i : i + 2] for i in range(len(token) - 1))
        else:
            out.append(token)
    out.extend(t for n in mentions if not n.conversion for t in number_terms(n))
    return out


def number_keys(text: str) -> frozenset[str]:
    """Terms for every reading and part of the numbers of a context sentence
    (``NumberMention.keys``: "12, 500" gives ``#12500``, ``#12`` and ``#500``, a date also
    ``#date:1998-04-02``), so that any reading of a claim's number is found."""
    return frozenset("#" + k for n in extract_numbers(text, dates=True) for k in n.keys)


def number_terms(mention: NumberMention) -> list[str]:
    """A claim's terms for one number: ``#`` + its value key, or the numbers it is written with
    when it has several (a date: "April 2, 1998" is ``#2``, ``#1998``; "12, 500" is ``#12``,
    ``#500``). They count as found when any reading of the number is in the context."""
    if mention.parts:
        return ["#" + value_key(p) for p in mention.parts]
    return ["#" + mention.key]


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
    windows: Windows | None = None  # sentence windows for the relation check (``relations``)
    names: frozenset[str] = frozenset()  # words the context writes as names (``relations``)


@dataclass(frozen=True)
class _Sentence:
    text: str
    sequence: tuple[str, ...]  # ``terms``, in order
    unique: frozenset[str]  # the terms and every number reading (``number_keys``)
    negated: bool
    words: tuple[str, ...]
    continues: bool  # opens with a pronoun: continues the sentence before
    names: tuple[frozenset[str], frozenset[str], frozenset[str]]  # ``name_evidence``
    heading: bool  # short and without a sentence end: a title for the sentences after it


@lru_cache(maxsize=4096)  # chunk texts recur across the cases of a run
def _chunk(text: str) -> tuple[_Sentence, ...]:
    """One context text read once: its sentences and their terms."""
    sentences = []
    for sentence in split_sentences(text):
        sequence = tuple(terms(sentence))
        unique = frozenset(sequence) | number_keys(sentence)
        words = textmatch.words(sentence)
        sentences.append(
            _Sentence(
                sentence,
                sequence,
                unique,
                has_negation(sentence),
                words,
                continues(sentence),
                name_evidence(sentence),
                len(words) <= MAX_HEADING_WORDS and not sentence.rstrip().endswith((".", "!", "?")),
            )
        )
    return tuple(sentences)


def build_context(texts: list[str], max_chars: int = 2_000_000) -> Context:
    """Sentence term sets, an inverted index, bigrams and number values of the context (its
    citation markers removed: ``ragmeter.metrics.markers``). The same texts give the same
    (shared, read-only) Context: a run's batch preparation and its scoring read each once."""
    return _build_context(tuple(texts), max_chars)


@lru_cache(maxsize=256)
def _build_context(texts: tuple[str, ...], max_chars: int) -> Context:
    chunks: list[tuple[_Sentence, ...]] = []
    numbers: set[str] = set()
    used = 0
    truncated = False
    for text in texts:
        text = strip_markers(text).text
        # the numbers come from the whole text, the sentences from what fits
        numbers.update(context_keys(extract_numbers(text, dates=True)))
        if used + len(text) > max_chars:
            text = text[: max(0, max_chars - used)]
            truncated = True
        used += len(text)
        chunks.append(_chunk(text))
    sentences = [s for chunk in chunks for s in chunk]
    previous: list[int | None] = []
    heading: list[int | None] = []
    for chunk in chunks:
        first = len(previous)
        head = first if chunk and chunk[0].heading and len(chunk) > 1 else None
        for offset, sentence in enumerate(chunk):
            previous.append(first + offset - 1 if offset and sentence.continues else None)
            heading.append(head if head is not None and offset else None)
    index: dict[str, list[int]] = {}
    all_terms: set[str] = set()
    bigrams: set[tuple[str, str]] = set()
    context_words: set[str] = set()
    for position, sentence in enumerate(sentences):
        bigrams.update(pairwise(sentence.sequence))
        all_terms.update(sentence.unique)
        context_words.update(sentence.words)
        for term in sentence.unique:
            index.setdefault(term, []).append(position)
    return Context(
        sentences=[s.text for s in sentences],
        sentence_terms=[s.unique for s in sentences],
        sentence_negated=[s.negated for s in sentences],
        index=index,
        terms=frozenset(all_terms),
        bigrams=frozenset(bigrams),
        numbers=frozenset(numbers),
        truncated=truncated,
        words=frozenset(context_words),
        windows=Windows([s.unique for s in sentences], previous, heading),
        names=context_names([s.names for s in sentences]),
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
    negation_mismatch: bool = False
    # the same, over fact terms only (stance words and fillers out: ``STANCE_WORDS``)
    fact_terms: int = 0
    fact_found: int = 0
    fact_bigrams: int = 0
    fact_bigrams_found: int = 0
    novel_facts: frozenset[str] = frozenset()
    # the missing numbers counted by the written numbers not in the context (at least 1 each):
    # "march 30 , 2002" with neither 30 nor 2002 in the context counts 2 (``missing_weight``)
    missing_weight: int = 0
    relation: Relation | None = None  # the relation-level check (``relations``)
    # the claim's names (capitalised key terms, ``relations.key_terms``) that the context does
    # not have at all, lower-cased
    absent_names: frozenset[str] = frozenset()

    @property
    def relation_violations(self) -> int:
        return 0 if self.relation is None else self.relation.violations

    @property
    def number_binding(self) -> float | None:
        """``Relation.number_binding``: how close the claim's numbers sit to its other terms."""
        return None if self.relation is None else self.relation.number_binding


def claim_signals(
    claim: str,
    context: Context,
    *,
    focus: KeyTerm | None = None,
    asked: frozenset[str] = frozenset(),
) -> ClaimSignals:
    """The claim's evidence in the context; a span answer's ``focus`` must also sit in the
    window its question (``asked``: the question's terms) points to (``relations``)."""
    sequence = terms(claim)
    unique = set(sequence)
    numbers = extract_numbers(claim, dates=True)
    unsupported = unsupported_numbers(numbers, context.numbers)
    missing = [n.text for n in unsupported]
    weight = sum(missing_weight(n, context.numbers) for n in unsupported)
    # a number supported by another reading than its term's ("12, 500" by 12 and 500, a
    # conversion, a date's second reading) counts as found
    missing_at = {n.start for n in unsupported}
    known = context.terms | {
        t
        for n in numbers
        if not n.conversion and n.start not in missing_at
        for t in number_terms(n)
    }
    facts = [t for t in sequence if t not in _NOT_FACT]
    fact_set = set(facts)
    fact_pairs = list(pairwise(facts))
    fact_fields: dict[str, Any] = {
        "fact_terms": len(fact_set),
        "fact_found": len(fact_set & known),
        "fact_bigrams": len(fact_pairs),
        "fact_bigrams_found": sum(p in context.bigrams for p in fact_pairs),
        "novel_facts": frozenset(fact_set - known),
    }
    if not unique:
        return ClaimSignals(
            0, 1.0, 1.0, None, 1.0, [], missing, missing_weight=weight, **fact_fields
        )
    found = unique & known
    hits: Counter[int] = Counter()
    for term in found:
        hits.update(context.index.get(term, ()))
    # the sentence sharing the most terms; on a tie the earliest (not the set's order)
    best, best_hits = min(hits.items(), key=lambda kv: (-kv[1], kv[0])) if hits else (None, 0)
    pairs = list(pairwise(sequence))
    bigram = sum(p in context.bigrams for p in pairs) / len(pairs) if pairs else float(bool(found))
    negation = best is not None and has_negation(claim) != context.sentence_negated[best]
    bound = None
    absent: frozenset[str] = frozenset()
    if context.windows is not None:
        keys = key_terms(claim, numbers, context.names)
        bound = relation(
            claim, unique, keys, context.windows, context.index, context.sentences, focus, asked
        )
        absent = frozenset(
            k.text.lower()
            for k in keys
            if not k.qualifier
            and not k.readings[0].startswith("#")
            and not any(r in context.index for r in k.readings)
        )
    return ClaimSignals(
        n_terms=len(unique),
        coverage=len(found) / len(unique),
        sentence_coverage=best_hits / len(unique),
        best_sentence=best,
        bigram_coverage=bigram,
        novel_terms=sorted(unique - found),
        missing_numbers=missing,
        missing_weight=weight,
        negation_mismatch=negation,
        relation=bound,
        absent_names=absent,
        **fact_fields,
    )


_PERSONAL = re.compile(
    r"\b(i|i'm|i've|i'd|i'll|im|ive|me|my|mine|myself|we|we're|we've|our|ours|you|you're|"
    r"you've|your|yours)\b"
)


def is_personal(claim: str) -> bool:
    """A claim about the speaker or the user (first or second person), which no context backs."""
    return bool(_PERSONAL.search(fold(claim)))

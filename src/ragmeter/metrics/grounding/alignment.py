"""Alignment of an answer to its context: the word-piece (token) aligner behind
``grounding_score``'s aligned model, the context sentences it aligns to, and the sentence
embedding cosines of the optional claim-support embedding term."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ragmeter.metrics.grounding.features import Context, terms
from ragmeter.metrics.markers import strip_markers

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


MAX_ALIGNED_SENTENCES = 32  # context sentences aligned per answer (the most related ones)


class SentenceEmbedder(Protocol):
    def embed(self, texts: list[str]) -> Any: ...


class TokenEmbedder(Protocol):
    def token_embeddings(self, texts: list[str]) -> list[npt.NDArray[np.float32]]: ...


def _cosines(claims: list[str], context: Context, embedder: SentenceEmbedder) -> list[float]:
    if not claims or not context.sentences:
        return [0.0] * len(claims)
    claim_vectors = np.asarray(embedder.embed(claims), dtype=np.float32)
    sentence_vectors = np.asarray(embedder.embed(context.sentences), dtype=np.float32)
    return [float(x) for x in (claim_vectors @ sentence_vectors.T).max(axis=1)]


def alignment_texts(claims: list[str], context: Context) -> list[str]:
    """What ``token_aligner`` embeds: the claims as one text (citation markers such as
    "[doc#section]" out: ``ragmeter.metrics.markers``), then the context sentences it is
    aligned to."""
    answer = strip_markers(" ".join(claims)).text.strip()
    return [answer, *aligned_sentences(answer, context, MAX_ALIGNED_SENTENCES)]


def token_aligner(embedder: TokenEmbedder) -> Aligner:
    """Aligns claims to a context with ``embedder``'s word-piece vectors."""

    def align(claims: list[str], context: Context) -> Alignment:
        vectors = embedder.token_embeddings(alignment_texts(claims, context))
        return token_alignment(vectors[0], vectors[1:])

    return align


ALIGN_BATCH_TEXTS = 512  # distinct texts embedded per group (their vectors are then dropped)


def batched_alignments(
    keys: list[tuple[str, ...]],
    embedder: TokenEmbedder,
    batch: int = ALIGN_BATCH_TEXTS,
) -> Iterator[tuple[tuple[str, ...], Alignment]]:
    """The alignment of every key (``alignment_texts``: the answer, then its context
    sentences), as ``token_aligner`` gives it, computed in groups of about ``batch`` distinct
    texts (a group closes once it has that many). Each text of a group is embedded once,
    however many answers share it; answers with the same context go into the same group; a
    group's vectors are dropped once its alignments are computed."""
    ordered = sorted(dict.fromkeys(keys), key=lambda key: key[1:])
    start = 0
    while start < len(ordered):
        group: list[tuple[str, ...]] = []
        texts: dict[str, None] = {}
        while start < len(ordered) and (not group or len(texts) < batch):
            group.append(ordered[start])
            texts.update(dict.fromkeys(ordered[start]))
            start += 1
        vectors = dict(zip(texts, embedder.token_embeddings(list(texts)), strict=True))
        for key in group:
            yield key, token_alignment(vectors[key[0]], [vectors[t] for t in key[1:]])

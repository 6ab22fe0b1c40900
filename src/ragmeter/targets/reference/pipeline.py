"""The built-in reference RAG pipeline: heading chunks, BM25 retrieval, extractive answers.

It answers with the sentences of the retrieved chunks that cover the most query weight, cites
the chunks those sentences came from, and abstains when no sentence covers enough of the
question. Its JSON answer is the documented ``POST /query`` contract (docs/targets.md).

Before anything else an input guardrail scores the question for prompt injection
(``guardrail.injection_score``) and reports it as ``guardrail_scores["injection"]``: over the
block threshold (0.50; seed 003's "score > block_threshold") the pipeline refuses without
retrieving (``guardrail_blocked``), at or above the warn threshold (0.40) it answers and flags
``guardrail_warning``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.targets.reference.bm25 import BM25Index
from ragmeter.targets.reference.chunking import Chunk, chunk_corpus
from ragmeter.targets.reference.guardrail import BLOCK_THRESHOLD, WARN_THRESHOLD, assess
from ragmeter.text import split_sentences, tokenize

ABSTENTION_ANSWER = "I don't have enough information in the documents to answer that."
BLOCKED_ANSWER = "I can't help with that request."


@dataclass(frozen=True)
class PipelineSettings:
    top_k: int = 5
    max_answer_sentences: int = 2
    # a second sentence joins only while the answer stays this short: the pipeline quotes
    # evidence, it does not reproduce passages (the leakage family's verbatim_copy)
    max_answer_words: int = 45
    abstain_below: float = 0.35
    second_sentence_ratio: float = 0.8
    max_chunk_words: int = 400
    guardrail: bool = True
    guardrail_warn: float = WARN_THRESHOLD
    guardrail_block: float = BLOCK_THRESHOLD


def contract_confidence(support: float, abstain_below: float) -> float:
    """The pipeline's support (query-term coverage) on the response contract's confidence
    scale, where under 0.5 means uncertain (seed 003): piecewise linear and increasing, with the
    pipeline's own abstention cut-off at 0.5, so it answers exactly when it reports 0.5 or more."""
    support = min(max(support, 0.0), 1.0)
    if support < abstain_below:
        return 0.5 * support / abstain_below
    return 0.5 + 0.5 * (support - abstain_below) / (1.0 - abstain_below)


class ReferencePipeline:
    def __init__(self, chunks: list[Chunk], settings: PipelineSettings | None = None) -> None:
        self.settings = settings or PipelineSettings()
        self.chunks = chunks
        self.index = BM25Index([tokenize(f"{c.heading_path}\n{c.text}") for c in chunks])

    @classmethod
    def from_corpus(
        cls, root: str | Path, settings: PipelineSettings | None = None
    ) -> ReferencePipeline:
        settings = settings or PipelineSettings()
        return cls(chunk_corpus(Path(root), settings.max_chunk_words), settings)

    def info(self) -> dict[str, Any]:
        s = self.settings
        return {
            "pipeline": "ragmeter-reference",
            "retriever": "bm25",
            "bm25": {"k1": self.index.k1, "b": self.index.b},
            "chunker": "markdown-headings",
            "corpus_chunks": len(self.chunks),
            "corpus_docs": len({c.doc_id for c in self.chunks}),
            "answerer": "extractive",
            "retrieval_top_k": s.top_k,
            "abstain_below": s.abstain_below,
            "guardrail": (
                {"injection": "heuristic", "warn": s.guardrail_warn, "block": s.guardrail_block}
                if s.guardrail
                else None
            ),
        }

    def _weight(self, term: str) -> float:
        """A term's idf; a term the corpus never uses weighs as much as the rarest one."""
        return self.index.idf.get(term, self.index.unseen_idf)

    def _coverage(self, query_terms: set[str], sentence: str) -> float:
        """The share of the question's idf weight that a sentence contains.

        ``math.fsum`` (exactly rounded) rather than ``sum``: a set's iteration order changes
        with the process's string hash seed, and a plain float sum in that order made sentences
        with the same query terms differ in the last bit, so which one came first in the answer
        depended on the process (the HTTP server vs. the caller's own process).
        """
        total = math.fsum(self._weight(t) for t in query_terms)
        if total == 0:
            return 0.0
        present = query_terms.intersection(tokenize(sentence))
        return math.fsum(self._weight(t) for t in present) / total

    def _blocked(self, score: float, screened_ms: float) -> dict[str, Any]:
        """The refusal of a blocked question: nothing retrieved, nothing cited."""
        return {
            "answer": BLOCKED_ANSWER,
            "retrieved": [],
            "citations": [],
            "abstained": True,
            "confidence": 0.0,
            "policy_flags": ["guardrail_blocked"],
            "guardrail_scores": {"injection": score},
            "latency_ms": {"guardrail": screened_ms},
        }

    def answer(self, question: str, top_k: int | None = None) -> dict[str, Any]:
        screening = time.perf_counter()
        guard = assess(question).score if self.settings.guardrail else None
        started = time.perf_counter()
        screened_ms = (started - screening) * 1000.0
        if guard is not None and guard > self.settings.guardrail_block:
            return self._blocked(guard, screened_ms)
        k = top_k or self.settings.top_k
        query = tokenize(question)
        hits = self.index.top(query, k)
        retrieved_at = time.perf_counter()

        retrieved = [
            {
                "id": self.chunks[i].chunk_id,
                "doc_id": self.chunks[i].doc_id,
                "rank": rank,
                "score": round(score, 6),
                "text": self.chunks[i].text,
                "rel_path": self.chunks[i].rel_path,
                "heading_path": self.chunks[i].heading_path,
            }
            for rank, (i, score) in enumerate(hits, start=1)
        ]
        query_terms = set(query)
        candidates: list[tuple[float, int, str, int]] = []
        for rank, (i, _) in enumerate(hits, start=1):
            for sentence in split_sentences(self.chunks[i].text):
                coverage = self._coverage(query_terms, sentence)
                candidates.append((coverage - 0.01 * rank, rank, sentence, i))
        candidates.sort(key=lambda c: (-c[0], c[1]))  # stable: ties keep the chunk's order

        best = candidates[0][0] if candidates else 0.0
        support = max(
            (
                self._coverage(query_terms, f"{self.chunks[i].heading_path} {self.chunks[i].text}")
                for i, _ in hits
            ),
            default=0.0,
        )
        abstained = support < self.settings.abstain_below
        chosen: list[tuple[float, int, str, int]] = []
        if not abstained:
            chosen = [candidates[0]]
            words = len(candidates[0][2].split())
            for candidate in candidates[1 : self.settings.max_answer_sentences]:
                more = len(candidate[2].split())
                if (
                    candidate[0] >= self.settings.second_sentence_ratio * best
                    and words + more <= self.settings.max_answer_words
                ):
                    chosen.append(candidate)
                    words += more
        cited: list[int] = []
        for _, _, _, chunk_index in chosen:
            if chunk_index not in cited:
                cited.append(chunk_index)
        answer = " ".join(sentence for _, _, sentence, _ in chosen) or ABSTENTION_ANSWER
        finished = time.perf_counter()
        return {
            "answer": answer,
            "retrieved": retrieved,
            "citations": [
                {
                    "chunk_id": self.chunks[i].chunk_id,
                    "doc_id": self.chunks[i].doc_id,
                    "rel_path": self.chunks[i].rel_path,
                    "heading_path": self.chunks[i].heading_path,
                }
                for i in cited
            ],
            "abstained": abstained,
            "confidence": round(contract_confidence(support, self.settings.abstain_below), 6),
            "policy_flags": self._flags(hits, guard),
            **({"guardrail_scores": {"injection": guard}} if guard is not None else {}),
            "latency_ms": {
                **({"guardrail": screened_ms} if guard is not None else {}),
                "retrieve": (retrieved_at - started) * 1000.0,
                "generate": (finished - retrieved_at) * 1000.0,
            },
        }

    def _flags(self, hits: list[tuple[int, float]], guard: float | None) -> list[str]:
        flags = ["no_context"] if not hits else []
        if guard is not None and guard >= self.settings.guardrail_warn:
            flags.append("guardrail_warning")
        return flags

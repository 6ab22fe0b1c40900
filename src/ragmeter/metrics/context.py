"""Context quality (seed 003): is the retrieved context useful, or repetitive?

- ``redundancy_ngram``: mean over chunk pairs of |trigrams(a) & trigrams(b)| / min(|a|, |b|);
- ``redundancy_tfidf``: mean pairwise cosine of TF-IDF vectors, idf over every chunk the run
  retrieved (smoothed: ln((1 + N) / (1 + df)) + 1);
- ``fact_dispersion``: mean number of retrieved chunks holding each gold fact (or an alias);
- ``fact_recall_in_context``: share of gold facts that some retrieved chunk holds;
- ``unique_token_ratio``: distinct / total word tokens over the whole retrieved context;
- ``expected_chunk_recall``: share of the case's ``expected_chunks`` (chunk ids) retrieved.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from itertools import combinations

from ragmeter.metrics.base import Metric, MetricOutput, MetricSettings, SkipScore
from ragmeter.metrics.textmatch import content_tokens, fact_stated, index_text, words
from ragmeter.models import Case, Response
from ragmeter.repeat_ids import REPEAT_KEY

NGRAM = 3


def _texts(response: Response) -> list[str]:
    return [chunk.text for chunk in response.retrieved if chunk.text.strip()]


def _pairs_needed(texts: list[str]) -> None:
    if len(texts) < 2:
        raise SkipScore("fewer than 2 retrieved chunks with text")


@lru_cache(maxsize=8192)
def ngrams(text: str, n: int = NGRAM) -> frozenset[tuple[str, ...]]:
    tokens = words(text)
    return frozenset(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def ngram_redundancy(texts: list[str]) -> float:
    grams = [ngrams(t) for t in texts]
    overlaps = [
        len(a & b) / min(len(a), len(b)) if a and b else 0.0 for a, b in combinations(grams, 2)
    ]
    return sum(overlaps) / len(overlaps)


class IdfTable:
    """Document frequencies over every retrieved chunk of a run (filled by ``prepare``)."""

    def __init__(self) -> None:
        self.df: Counter[str] = Counter()
        self.documents = 0
        self._vectors: dict[str, dict[str, float]] = {}
        self._whole_run = False  # the frequencies are the run's (prepare_run), not a batch's

    def prepare_run(self, batches: Iterable[list[tuple[Case, Response]]]) -> None:
        """Count the document frequencies over every batch of the run."""
        self._reset()
        for pairs in batches:
            self._count(pairs)
        self._whole_run = True

    def prepare(self, pairs: list[tuple[Case, Response]]) -> None:
        """Count over ``pairs`` (the whole run, when the engine has not given the run's batches
        to ``prepare_run``); after ``prepare_run`` only the cached vectors are dropped."""
        if self._whole_run:
            self._vectors.clear()
            return
        self._reset()
        self._count(pairs)

    def _reset(self) -> None:
        self.df.clear()
        self.documents = 0
        self._vectors.clear()
        self._whole_run = False

    def _count(self, pairs: list[tuple[Case, Response]]) -> None:
        for case, response in pairs:
            if case.metadata.get(REPEAT_KEY):  # a repeat: the run's corpus counted once
                continue
            for text in _texts(response):
                self.documents += 1
                self.df.update(set(content_tokens(text)))

    def idf(self, term: str) -> float:
        return math.log((1 + self.documents) / (1 + self.df.get(term, 0))) + 1.0

    def vector(self, text: str) -> dict[str, float]:
        cached = self._vectors.get(text)
        if cached is None:
            cached = self._vectors[text] = self._vector(text)
        return cached

    def _vector(self, text: str) -> dict[str, float]:
        counts = Counter(content_tokens(text))
        vector = {term: count * self.idf(term) for term, count in counts.items()}
        norm = math.sqrt(sum(v * v for v in vector.values()))
        return {term: v / norm for term, v in vector.items()} if norm else {}


def cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(value * b.get(term, 0.0) for term, value in a.items())


def _facts_in_chunks(case: Case, response: Response) -> list[int]:
    if not case.gold_facts:
        raise SkipScore("case declares no gold_facts")
    chunks = [index_text(t) for t in _texts(response)]
    return [sum(fact_stated(f, chunk) for chunk in chunks) for f in case.gold_facts]


def _expected_chunks(case: Case, response: Response) -> MetricOutput:
    expected = list(dict.fromkeys(case.expected_chunks))
    if not expected:
        raise SkipScore("case declares no expected_chunks")
    retrieved = {chunk.id for chunk in response.retrieved if chunk.id is not None}
    missing = [chunk_id for chunk_id in expected if chunk_id not in retrieved]
    return (len(expected) - len(missing)) / len(expected), {"missing": missing}


def context_metrics(_: MetricSettings) -> list[Metric]:
    table = IdfTable()

    def redundancy_ngram(case: Case, response: Response) -> MetricOutput:
        texts = _texts(response)
        _pairs_needed(texts)
        return ngram_redundancy(texts), {"chunks": len(texts)}

    def redundancy_tfidf(case: Case, response: Response) -> MetricOutput:
        texts = _texts(response)
        _pairs_needed(texts)
        if table.documents == 0:
            table.prepare([(case, response)])
        vectors = [table.vector(t) for t in texts]
        similarities = [cosine(a, b) for a, b in combinations(vectors, 2)]
        return sum(similarities) / len(similarities), {"max_pair": max(similarities)}

    def dispersion(case: Case, response: Response) -> MetricOutput:
        counts = _facts_in_chunks(case, response)
        return sum(counts) / len(counts), {"chunks_per_fact": counts}

    def fact_recall(case: Case, response: Response) -> MetricOutput:
        counts = _facts_in_chunks(case, response)
        missing = [f.fact for f, c in zip(case.gold_facts, counts, strict=True) if c == 0]
        return sum(c > 0 for c in counts) / len(counts), {"missing": missing}

    def unique_ratio(case: Case, response: Response) -> MetricOutput:
        tokens = [w for t in _texts(response) for w in words(t)]
        if not tokens:
            raise SkipScore("retrieved context is empty")
        return len(set(tokens)) / len(tokens), {"tokens": len(tokens)}

    needs = ("retrieved",)
    return [
        Metric(
            "redundancy_ngram",
            "context_quality",
            redundancy_ngram,
            needs,
            higher_is_better=False,
            description="mean pairwise word-trigram overlap between retrieved chunks",
            kind="proportion",
        ),
        Metric(
            "redundancy_tfidf",
            "context_quality",
            redundancy_tfidf,
            needs,
            higher_is_better=False,
            prepare=table.prepare,
            prepare_run=table.prepare_run,
            description="mean pairwise TF-IDF cosine between retrieved chunks",
            kind="score",
        ),
        Metric(
            "fact_dispersion",
            "context_quality",
            dispersion,
            needs,
            higher_is_better=False,
            description="mean number of retrieved chunks holding each gold fact",
            kind="count",
        ),
        Metric(
            "fact_recall_in_context",
            "context_quality",
            fact_recall,
            needs,
            description="share of gold facts held by some retrieved chunk",
            kind="proportion",
        ),
        Metric(
            "unique_token_ratio",
            "context_quality",
            unique_ratio,
            needs,
            description="distinct / total word tokens in the retrieved context",
            kind="proportion",
        ),
        Metric(
            "expected_chunk_recall",
            "context_quality",
            _expected_chunks,
            needs,
            description="share of the case's expected_chunks (chunk ids) among the retrieved "
            "chunks",
            kind="proportion",
        ),
    ]

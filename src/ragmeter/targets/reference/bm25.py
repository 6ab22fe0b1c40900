"""A small Okapi BM25 index in NumPy (postings per term, scores accumulated per query)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import numpy.typing as npt


class BM25Index:
    def __init__(self, documents: list[list[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.size = len(documents)
        lengths = np.array([len(doc) for doc in documents], dtype=np.float64)
        average = float(lengths.mean()) if self.size and lengths.mean() > 0 else 1.0
        norm = k1 * (1.0 - b + b * lengths / average)
        postings: dict[str, tuple[list[int], list[int]]] = {}
        for index, doc in enumerate(documents):
            for term, count in Counter(doc).items():
                ids, counts = postings.setdefault(term, ([], []))
                ids.append(index)
                counts.append(count)
        self._postings: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]] = {}
        self.idf: dict[str, float] = {}
        for term, (ids, counts) in postings.items():
            doc_ids = np.array(ids, dtype=np.int64)
            tf = np.array(counts, dtype=np.float64)
            self._postings[term] = (doc_ids, tf * (k1 + 1.0) / (tf + norm[doc_ids]))
            df = len(ids)
            self.idf[term] = math.log(1.0 + (self.size - df + 0.5) / (df + 0.5))
        self.unseen_idf = math.log(1.0 + (self.size + 0.5) / 0.5)

    def scores(self, query: list[str]) -> npt.NDArray[np.float64]:
        totals = np.zeros(self.size, dtype=np.float64)
        # a fixed term order: a set's order follows the string hash seed, and float sums in
        # that order differ in the last bit from one process to another
        for term in sorted(set(query)):
            posting = self._postings.get(term)
            if posting is not None:
                doc_ids, weights = posting
                totals[doc_ids] += self.idf[term] * weights
        return totals

    def top(self, query: list[str], k: int) -> list[tuple[int, float]]:
        """The ``k`` best (document index, score) pairs with score > 0, best first."""
        totals = self.scores(query)
        candidates = np.flatnonzero(totals > 0)
        if candidates.size == 0:
            return []
        order = candidates[np.lexsort((candidates, -totals[candidates]))][:k]
        return [(int(i), float(totals[i])) for i in order]

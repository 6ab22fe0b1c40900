"""Which chunks each category of case is written from, in a seeded order.

The chunks are the reference pipeline's own (:func:`ragmeter.targets.reference.target.
load_pipeline` over the same corpus argument ``ragmeter eval --corpus`` takes), so the gold
chunk and document ids of a generated case are the ids that pipeline retrieves.

- every category uses chunks of at least ``MIN_WORDS`` words;
- ``numeric``: chunks that hold a digit; ``list``: chunks with two or more bullet lines or
  three or more commas;
- ``multi_hop``: pairs (A, B) where B is the chunk of another document that BM25 ranks
  highest for A's text (a chunk of the same document when no other document matches), so the
  two passages share a subject;
- ``unanswerable``: any chunk, as the subject the question is near.

Each category shuffles its candidates with ``random.Random(f"{seed}:{category}")``: the same corpus,
seed and categories give the same plan.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ragmeter.errors import InputError
from ragmeter.targets.reference.chunking import Chunk
from ragmeter.targets.reference.pipeline import ReferencePipeline
from ragmeter.text import tokenize

MIN_WORDS = 12
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\S", re.MULTILINE)


@dataclass(frozen=True)
class Corpus:
    """A corpus as the reference pipeline sees it: its argument, its chunks, its retriever."""

    argument: str  # what eval --corpus takes (absolute path, or a spec)
    pipeline: ReferencePipeline

    @property
    def chunks(self) -> list[Chunk]:
        return self.pipeline.chunks

    def nearest(self, question: str, k: int) -> list[Chunk]:
        """The ``k`` chunks the reference pipeline retrieves for ``question``, best first."""
        hits = self.pipeline.index.top(tokenize(question), k)
        return [self.pipeline.chunks[i] for i, _ in hits]


def open_corpus(corpus: str) -> Corpus:
    """The reference pipeline's view of ``corpus`` (a Markdown folder, a corpus spec such as
    ``cranfield:DIR``, a BEIR/Cranfield folder or an index folder)."""
    from ragmeter.datasets.corpus import corpus_spec
    from ragmeter.datasets.declarations import CORPUS_READERS
    from ragmeter.targets.reference.target import load_pipeline

    name, sep, argument = corpus.partition(":")
    given = Path(corpus)
    if sep and name in CORPUS_READERS and not given.exists():
        resolved = corpus_spec(name, argument)
    else:
        resolved = str(given.resolve()) if given.exists() else corpus
    pipeline = load_pipeline(resolved, 5)
    if not any(_eligible(chunk) for chunk in pipeline.chunks):
        raise InputError(
            f"{corpus}: no chunk of {MIN_WORDS} words or more to write cases from (give a "
            "Markdown folder or a corpus spec such as cranfield:DIR)"
        )
    return Corpus(resolved, pipeline)


def _eligible(chunk: Chunk) -> bool:
    return len(chunk.text.split()) >= MIN_WORDS


def _fits(category: str, chunk: Chunk) -> bool:
    if category == "numeric":
        return any(ch.isdigit() for ch in chunk.text)
    if category == "list":
        return len(_BULLET.findall(chunk.text)) >= 2 or chunk.text.count(",") >= 3
    return True


def _partner(corpus: Corpus, index: int) -> int | None:
    chunk = corpus.chunks[index]
    hits = corpus.pipeline.index.top(tokenize(f"{chunk.heading_path}\n{chunk.text}"), 25)
    others = [
        i
        for i, _ in hits
        if i != index and _eligible(corpus.chunks[i]) and corpus.chunks[i].text != chunk.text
    ]
    other_doc = [i for i in others if corpus.chunks[i].doc_id != chunk.doc_id]
    best = other_doc or others
    return best[0] if best else None


def candidates(corpus: Corpus, category: str, seed: int) -> Iterator[tuple[Chunk, ...]]:
    """The chunk tuples ``category`` may be written from, in the seeded order they are tried
    (lazily: a pair's partner is searched only when the pair is reached)."""
    rng = random.Random(f"{seed}:{category}")
    indices = [
        i for i, chunk in enumerate(corpus.chunks) if _eligible(chunk) and _fits(category, chunk)
    ]
    rng.shuffle(indices)
    if category != "multi_hop":
        yield from ((corpus.chunks[i],) for i in indices)
        return
    seen: set[frozenset[int]] = set()
    for i in indices:
        j = _partner(corpus, i)
        if j is None or frozenset((i, j)) in seen:
            continue
        seen.add(frozenset((i, j)))
        yield (corpus.chunks[i], corpus.chunks[j])

"""The reference pipeline's index statistics (``GET /index/stats``, the ``index_stats`` hook of
the in-process target): documents, chunks, words per chunk and the chunker's version.

The chunker splits a long section into parts instead of dropping it, so no chunk is ever
skipped for context length; a Markdown file with no text under any heading has no chunk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.targets.reference.pipeline import ReferencePipeline

CHUNKER_VERSION = "markdown-headings-1"
INDEX_VERSION = "bm25-1"


def reference_index_stats(
    pipeline: ReferencePipeline, corpus: Path | None = None
) -> dict[str, Any]:
    """The stats in ragmeter's index stats contract (docs/targets.md); ``corpus`` (the folder
    the pipeline was built from) lets documents without chunks be counted."""
    chunked = {chunk.rel_path for chunk in pipeline.chunks}
    files = (
        {path.relative_to(corpus).as_posix() for path in corpus.rglob("*.md")}
        if corpus is not None
        else chunked
    )
    words = np.asarray([len(chunk.text.split()) for chunk in pipeline.chunks], dtype=np.float64)
    tokens: dict[str, float] = {}
    if words.size:
        tokens = {
            "min": float(words.min()),
            "max": float(words.max()),
            "mean": round(float(words.mean()), 3),
            "p95": round(float(np.percentile(words, 95)), 3),
        }
    without = len(files - chunked)
    return {
        "documents": len(files),
        "documents_without_chunks": without,
        "chunks": len(pipeline.chunks),
        "chunks_attempted": len(pipeline.chunks),
        "chunks_skipped": {"context_length": 0},
        "tokens_per_chunk": tokens,
        "token_unit": "words",
        "chunker_version": CHUNKER_VERSION,
        "chunk_max_words": pipeline.settings.max_chunk_words,
        "embedding_model": None,
        "retriever": "bm25",
        "index_version": INDEX_VERSION,
        "documents_by_type": {"markdown": {"documents": len(files), "without_chunks": without}},
    }

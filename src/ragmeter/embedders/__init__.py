"""Text embedders for the semantic metrics (local ONNX MiniLM, or any OpenAI-compatible API).

Nothing heavy is imported here: onnxruntime and tokenizers load only when the ``minilm``
embedder is built (``pip install 'ragmeter[semantic]'``).
"""

from __future__ import annotations

from ragmeter.embedders.base import (
    SEMANTIC_EXTRA_HINT,
    CachedEmbedder,
    Embedder,
    EmbedderError,
    EmbedderUnavailableError,
    TokenEmbeddingsUnsupportedError,
    build_embedder,
)

__all__ = [
    "SEMANTIC_EXTRA_HINT",
    "CachedEmbedder",
    "Embedder",
    "EmbedderError",
    "EmbedderUnavailableError",
    "TokenEmbeddingsUnsupportedError",
    "build_embedder",
]

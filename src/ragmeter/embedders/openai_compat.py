"""Any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint (OpenAI, vLLM, llama.cpp, TEI...).

Texts go in batches of ``batch_size``; HTTP 429 and 5xx answers and transport errors are
retried with exponential backoff (``Retry-After`` is honoured, capped at 30 s); any other error
answer fails at once with its status and the start of its body. The returned vectors are
L2-normalised here, since not every server normalises them. The API key is only put in the
``Authorization`` header of the HTTP client: it is not kept as an attribute, and neither the
key nor the headers appear in ``repr`` or in error messages.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np

from ragmeter.embedders.base import (
    EmbedderError,
    FloatArray,
    TokenEmbeddingsUnsupportedError,
    l2_normalise,
)
from ragmeter.retry import retry_delay_s

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 30.0


class OpenAICompatEmbedder:
    """Sentence vectors from an OpenAI-compatible ``/embeddings`` endpoint (no token vectors)."""

    supports_token_embeddings = False

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout_s: float = 30.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise EmbedderError(f"embedder base URL {base_url!r} is not an http(s) URL")
        if batch_size < 1 or max_retries < 0:
            raise ValueError("batch_size must be >= 1 and max_retries >= 0")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"{self.base_url}#{model}"
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            headers=headers,
            transport=transport,
        )
        self._dimension: int | None = None
        self.requests_sent = 0  # HTTP requests, retries included

    def __repr__(self) -> str:
        return f"OpenAICompatEmbedder(base_url={self.base_url!r}, model={self.model!r})"

    def close(self) -> None:
        self._client.close()

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self.embed(["dimension probe"])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: list[str]) -> FloatArray:
        chunks = [
            self._embed_batch(texts[start : start + self.batch_size])
            for start in range(0, len(texts), self.batch_size)
        ]
        if not chunks:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        return np.concatenate(chunks, axis=0)

    def token_embeddings(self, texts: list[str]) -> list[FloatArray]:
        raise TokenEmbeddingsUnsupportedError(
            f"embedder {self.name} returns one vector per text, not per token"
        )

    def _post(self, payload: dict[str, Any]) -> httpx.Response:
        url = f"{self.base_url}/embeddings"
        attempt = 0
        while True:
            attempt += 1
            self.requests_sent += 1
            problem: str
            retry_after: str | None
            try:
                response = self._client.post(url, json=payload)
            except httpx.HTTPError as exc:  # connection refused, timeout, reset ...
                problem = f"{type(exc).__name__}: {exc}"
                retry_after = None
            else:
                if response.status_code < 400:
                    return response
                problem = f"HTTP {response.status_code}: {response.text[:200]!r}"
                if response.status_code not in RETRY_STATUSES:
                    raise EmbedderError(f"embeddings request to {url} failed: {problem}")
                retry_after = response.headers.get("retry-after")
            if attempt > self.max_retries:
                raise EmbedderError(
                    f"embeddings request to {url} failed after {attempt} attempts: {problem}"
                )
            time.sleep(retry_delay_s(attempt, retry_after, self.backoff_s, MAX_RETRY_AFTER_S))

    def _embed_batch(self, texts: list[str]) -> FloatArray:
        payload = {"model": self.model, "input": texts, "encoding_format": "float"}
        response = self._post(payload)
        url = f"{self.base_url}/embeddings"
        try:
            items = response.json()["data"]
            ordered = sorted(items, key=lambda item: int(item.get("index", 0)))
            matrix = np.asarray([item["embedding"] for item in ordered], dtype=np.float32)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EmbedderError(
                f"{url} answered with no usable 'data[].embedding' list "
                f"({type(exc).__name__}: {exc}); body starts {response.text[:200]!r}"
            ) from exc
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise EmbedderError(
                f"{url} returned vectors of shape {matrix.shape} for {len(texts)} inputs"
            )
        if not np.all(np.isfinite(matrix)):
            raise EmbedderError(f"{url} returned non-finite numbers in an embedding")
        if self._dimension is None:
            self._dimension = int(matrix.shape[1])
        elif matrix.shape[1] != self._dimension:
            raise EmbedderError(
                f"{url} returned {matrix.shape[1]}-dimensional vectors after "
                f"{self._dimension}-dimensional ones"
            )
        try:
            return l2_normalise(matrix)
        except EmbedderError as exc:
            raise EmbedderError(f"{url} returned an all-zero embedding vector") from exc

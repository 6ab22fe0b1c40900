"""The built-in embedders, one factory per spec prefix, registered in :mod:`ragmeter.registry`
under ``embedders``. A plugin adds one through the ``ragmeter.embedders`` entry-point group: a
factory called with the text after ``NAME:`` (empty for a bare ``NAME``)."""

from __future__ import annotations

import os

from ragmeter.embedders.base import (
    COMPAT_KEY_ENV,
    OPENAI_BASE_URL,
    OPENAI_KEY_ENV,
    Embedder,
    EmbedderError,
)


def minilm_embedder(_: str = "") -> Embedder:
    """all-MiniLM-L6-v2, int8 ONNX, local (the ``semantic`` extra)."""
    from ragmeter.embedders.onnx_minilm import OnnxMiniLM

    return OnnxMiniLM()


def openai_embedder(model: str) -> Embedder:
    from ragmeter.embedders.openai_compat import OpenAICompatEmbedder

    model = model.strip()
    if not model:
        raise EmbedderError("embedder spec 'openai:' names no model (e.g. openai:MODEL)")
    key = os.environ.get(OPENAI_KEY_ENV)
    if not key:
        raise EmbedderError(
            f"embedder 'openai:{model}' needs an API key: set the environment variable "
            f"{OPENAI_KEY_ENV}"
        )
    return OpenAICompatEmbedder(OPENAI_BASE_URL, model, api_key=key)


def http_embedder(spec: str) -> Embedder:
    """``http(s)://HOST:PORT/v1#MODEL`` (``spec`` is the whole URL)."""
    from ragmeter.embedders.openai_compat import OpenAICompatEmbedder

    base_url, sep, model = spec.partition("#")
    base_url = base_url.rstrip("/")
    if not sep or not model.strip():
        raise EmbedderError(
            f"embedder spec {spec!r} names no model: write it as http://HOST:PORT/v1#MODEL"
        )
    if base_url.endswith("/embeddings"):
        base_url = base_url[: -len("/embeddings")]
    return OpenAICompatEmbedder(base_url, model.strip(), api_key=os.environ.get(COMPAT_KEY_ENV))

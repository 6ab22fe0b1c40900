"""The reference pipeline's index of a dataset's corpus (``ragmeter index CORPUS``).

A corpus spec (``cranfield:DIR``, ``beir:DIR``, ``trec:...``, ``hotpotqa:FILE``, ...; see
:mod:`ragmeter.datasets.corpus`) is read into documents, and each document becomes one chunk
(``chunk_id`` = ``DOC#intro``, a document longer than ``max_words`` split into ``DOC#intro~2``,
... as the Markdown chunker splits a long section; ``heading_path`` = the document's title).

The index lives in ``<cache>/index/<name>-<key>/`` (``<cache>``: ``$RAGMETER_CACHE``, else
``$XDG_CACHE_HOME/ragmeter``, else ``~/.cache/ragmeter``), where ``key`` hashes the spec, the
chunk size and the SHA-256 of the corpus files' bytes, so an edited corpus gets a new index:

- ``manifest.json``: the spec, the content hash, document and chunk counts, the chunker;
- ``chunks.jsonl``: one chunk a line (``chunk_id, doc_id, rel_path, heading_path, text``).

The BM25 statistics are computed from the chunks when the pipeline loads (under a second for
ten thousand chunks); ``ragmeter eval`` builds a missing index itself, ``ragmeter index`` builds
it ahead of time and reports it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragmeter.datasets.corpus import (
    Document,
    corpus_documents,
    detect_corpus_folder,
)
from ragmeter.datasets.declarations import CORPUS_READERS
from ragmeter.datasets.rows import cache_root
from ragmeter.targets.reference.chunking import Chunk

INDEX_FORMAT = "ragmeter-corpus-index-1"
CHUNKER = "document-1"


def document_chunks(documents: list[Document], max_words: int = 400) -> list[Chunk]:
    chunks: list[Chunk] = []
    for doc in documents:
        words = doc.text.split()
        pieces = (
            [doc.text.strip()]
            if len(words) <= max_words
            else [" ".join(words[i : i + max_words]) for i in range(0, len(words), max_words)]
        )
        heading = " ".join(doc.title.split()) or doc.doc_id
        for part, piece in enumerate(pieces, start=1):
            suffix = "" if part == 1 else f"~{part}"
            chunks.append(
                Chunk(f"{doc.doc_id}#intro{suffix}", doc.doc_id, f"{doc.doc_id}.md", heading, piece)
            )
    return chunks


def as_corpus_spec(value: str) -> str | None:
    """The corpus spec ``value`` names (``NAME:ARG``, a BEIR/Cranfield folder, or an index
    folder's spec), or None for a folder of Markdown files."""
    name, sep, _ = value.partition(":")
    path = Path(value)
    if (path / "manifest.json").is_file():
        manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
        if manifest.get("format") == INDEX_FORMAT:
            return str(manifest["spec"])
    if sep and name in CORPUS_READERS and not path.exists():
        return value
    return detect_corpus_folder(path)


def _content_files(spec: str) -> list[Path]:
    _, _, argument = spec.partition(":")
    paths = (
        [Path(part.partition("=")[2]) for part in argument.split(",")]
        if "=" in argument
        else [Path(argument)]
    )
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.is_file())
        elif argument and path.is_file():
            files.append(path)
    return files


def content_hash(spec: str) -> str:
    """SHA-256 over the corpus files (their relative names and bytes); a hub dataset by name
    (no local file) hashes as its spec."""
    digest = hashlib.sha256()
    for file in _content_files(spec):
        digest.update(str(file).encode("utf-8", "surrogateescape") + b"\0")
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def index_dir(spec: str, max_words: int = 400, content: str | None = None) -> Path:
    content = content or content_hash(spec)
    key = hashlib.sha256(f"{spec}\0{max_words}\0{content}\0{CHUNKER}".encode()).hexdigest()[:16]
    name = spec.partition(":")[0] or "corpus"
    return cache_root() / "index" / f"{name}-{key}"


def build_index(
    spec: str, max_words: int = 400, *, force: bool = False
) -> tuple[Path, dict[str, Any]]:
    """Build (or find) the index of ``spec``; returns its folder and manifest."""
    content = content_hash(spec)
    folder = index_dir(spec, max_words, content)
    manifest_file = folder / "manifest.json"
    if manifest_file.is_file() and not force:
        manifest: dict[str, Any] = json.loads(manifest_file.read_text(encoding="utf-8"))
        return folder, manifest
    documents = corpus_documents(spec)
    chunks = document_chunks(documents, max_words)
    manifest = {
        "format": INDEX_FORMAT,
        "spec": spec,
        "content_sha256": content,
        "documents": len(documents),
        "chunks": len(chunks),
        "chunker": CHUNKER,
        "max_chunk_words": max_words,
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=folder.parent))
    try:
        with (staging / "chunks.jsonl").open("w", encoding="utf-8") as out:
            for chunk in chunks:
                out.write(json.dumps(asdict(chunk), ensure_ascii=False) + "\n")
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(staging, folder)  # readers never see a half-written index
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return folder, manifest


def load_chunks(spec: str, max_words: int = 400) -> list[Chunk]:
    """The chunks of ``spec``'s index, built first when missing or stale."""
    folder, _ = build_index(spec, max_words)
    with (folder / "chunks.jsonl").open(encoding="utf-8") as handle:
        return [Chunk(**json.loads(line)) for line in handle if line.strip()]

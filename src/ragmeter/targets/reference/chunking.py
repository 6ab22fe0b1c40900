"""Heading-based Markdown chunking for the reference pipeline.

Every heading section becomes one chunk holding the section's own text (up to the next heading
of any level). Ids are derived from the headings, not from positions, so gold labels survive a
change of chunk size:

- ``doc_id``  = the file's path relative to the corpus root without ``.md``
- ``heading_path`` = ``Title > Section > Subsection``
- ``chunk_id`` = ``doc_id#slug/slug`` over the headings below the title, ``doc_id#intro`` for
  the text under the title; a section longer than ``max_words`` is split into parts whose ids
  end in ``~2``, ``~3``, ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ragmeter.models import HEADING_DELIMITER

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    doc_id: str
    rel_path: str
    heading_path: str
    text: str


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _split_words(text: str, max_words: int) -> list[str]:
    words = text.split()
    if len(words) <= max_words:
        return [text]
    return [" ".join(words[i : i + max_words]) for i in range(0, len(words), max_words)]


def chunk_markdown(text: str, rel_path: str, max_words: int = 400) -> list[Chunk]:
    doc_id = rel_path[:-3] if rel_path.endswith(".md") else rel_path
    headings: list[tuple[int, str]] = []
    body: list[str] = []
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}

    def flush() -> None:
        section = "\n".join(body).strip()
        body.clear()
        if not section:
            return
        names = [name for _, name in headings] or [Path(rel_path).stem]
        heading_path = HEADING_DELIMITER.join(names)
        below_title = names[1:] if headings and headings[0][0] == 1 else names
        slug = "/".join(slugify(name) for name in below_title) or "intro"
        base_id = f"{doc_id}#{slug}"
        seen[base_id] = seen.get(base_id, 0) + 1
        if seen[base_id] > 1:
            base_id = f"{base_id}-{seen[base_id]}"
        for part, piece in enumerate(_split_words(section, max_words), start=1):
            chunk_id = base_id if part == 1 else f"{base_id}~{part}"
            chunks.append(Chunk(chunk_id, doc_id, rel_path, heading_path, piece))

    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match is None:
            body.append(line)
            continue
        flush()
        level = len(match.group(1))
        while headings and headings[-1][0] >= level:
            headings.pop()
        headings.append((level, match.group(2).strip()))
    flush()
    return chunks


def chunk_corpus(root: Path, max_words: int = 400) -> list[Chunk]:
    """Chunk every ``*.md`` file under ``root`` in a stable (sorted) order."""
    chunks: list[Chunk] = []
    for path in sorted(root.rglob("*.md")):
        rel_path = path.relative_to(root).as_posix()
        chunks.extend(chunk_markdown(path.read_text(encoding="utf-8"), rel_path, max_words))
    return chunks

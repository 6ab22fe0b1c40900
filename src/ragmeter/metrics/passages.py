"""A case's gold passages and the level they are matched at, and a reply's chunks in its own
order: what the retrieval metrics and the id-space check share."""

from __future__ import annotations

from ragmeter.models import Case, GoldPassage, Response, RetrievedChunk

Level = str


def all_passages(case: Case) -> list[GoldPassage]:
    passages = list(case.gold_passages)
    for group in case.required_support_groups:
        passages.extend(p for p in group.passages if p not in passages)
    return passages


def case_level(passages: list[GoldPassage]) -> Level:
    if any(p.chunk_id for p in passages):
        return "chunk"
    if any(p.doc_id for p in passages):
        return "doc"
    return "anchor"


def ranked_chunks(response: Response) -> list[RetrievedChunk]:
    return sorted(response.retrieved, key=lambda c: c.rank if c.rank is not None else 10**9)

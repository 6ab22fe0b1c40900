"""Core retrieval metrics (recall@k, precision@k, hit rate@k, MRR) against gold passages.

Matching level, in order of preference: chunk ids when the gold passages carry them, doc ids
otherwise, else the rel_path + heading_path anchor (heading prefix match).
"""

from __future__ import annotations

from typing import Any

from ragmeter.metrics.base import Metric, MetricOutput, MetricSettings
from ragmeter.models import Case, GoldPassage, Response, RetrievedChunk


def _anchor_matches(chunk: RetrievedChunk, gold: GoldPassage) -> bool:
    if gold.rel_path is None or chunk.rel_path != gold.rel_path:
        return False
    return not gold.heading_path or (chunk.heading_path or "").startswith(gold.heading_path)


def relevance_flags(case: Case, response: Response) -> tuple[list[bool], int, str]:
    """Per retrieved item (rank order): relevant or not; the number of relevant items; level."""
    passages = list(case.gold_passages)
    for group in case.required_support_groups:
        passages.extend(p for p in group.passages if p not in passages)
    ranked = sorted(response.retrieved, key=lambda c: c.rank if c.rank is not None else 10**9)
    relevant_passages = [p for p in passages if p.grade >= 1]
    chunk_ids = {p.chunk_id for p in relevant_passages if p.chunk_id}
    if chunk_ids:
        return [c.id in chunk_ids for c in ranked], len(chunk_ids), "chunk"
    doc_ids = {p.doc_id for p in relevant_passages if p.doc_id}
    if doc_ids:
        seen: set[str | None] = set()
        flags = []
        for chunk in ranked:
            if chunk.doc_id in seen:
                continue
            seen.add(chunk.doc_id)
            flags.append(chunk.doc_id in doc_ids)
        return flags, len(doc_ids), "doc"
    flags = [any(_anchor_matches(c, p) for p in relevant_passages) for c in ranked]
    return flags, len(relevant_passages), "anchor"


def _recall(k: int) -> Any:
    def compute(case: Case, response: Response) -> MetricOutput:
        flags, n_relevant, level = relevance_flags(case, response)
        if level == "anchor":
            passages = [p for p in case.gold_passages if p.grade >= 1]
            ranked = sorted(response.retrieved, key=lambda c: c.rank or 0)[:k]
            found = sum(any(_anchor_matches(c, p) for c in ranked) for p in passages)
        else:
            found = sum(flags[:k])
        return (found / n_relevant if n_relevant else 0.0), {"level": level}

    return compute


def _precision(k: int) -> Any:
    def compute(case: Case, response: Response) -> MetricOutput:
        flags, _, level = relevance_flags(case, response)
        return sum(flags[:k]) / k, {"level": level}

    return compute


def _hit(k: int) -> Any:
    def compute(case: Case, response: Response) -> MetricOutput:
        flags, _, level = relevance_flags(case, response)
        return float(any(flags[:k])), {"level": level}

    return compute


def _mrr(case: Case, response: Response) -> MetricOutput:
    flags, _, level = relevance_flags(case, response)
    rank = next((i for i, flag in enumerate(flags, start=1) if flag), None)
    return (1.0 / rank if rank else 0.0), {"level": level, "first_relevant_rank": rank}


def retrieval_metrics(settings: MetricSettings) -> list[Metric]:
    needs = ("gold_passages", "retrieved")
    metrics = [
        Metric(
            f"recall_at_{k}",
            "retrieval",
            _recall(k),
            needs,
            description=f"fraction of gold passages found in the top {k}",
        )
        for k in settings.ks
    ]
    metrics += [
        Metric(
            f"precision_at_{k}",
            "retrieval",
            _precision(k),
            needs,
            description=f"fraction of the top {k} that is relevant (denominator {k})",
        )
        for k in settings.ks
    ]
    metrics += [
        Metric(
            f"hit_rate_at_{k}",
            "retrieval",
            _hit(k),
            needs,
            description=f"1 if any relevant item is in the top {k}",
        )
        for k in settings.ks
    ]
    metrics.append(
        Metric(
            "mrr",
            "retrieval",
            _mrr,
            needs,
            description="reciprocal rank of the first relevant item (no cutoff)",
        )
    )
    return metrics

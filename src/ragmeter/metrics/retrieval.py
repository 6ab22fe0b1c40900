"""Retrieval metrics for ragmeter cases, computed with trec_eval's definitions.

Each case becomes one TREC query: its judgments (gold passages with grades) and the ranked
items the system retrieved, at the first level the labels allow:

- ``chunk``: gold passages carry chunk ids; a retrieved chunk is identified by its id;
- ``doc``: gold passages carry doc ids; retrieved chunks are reduced to their documents, each
  counted once at its first rank;
- ``anchor``: gold passages carry ``rel_path`` (+ ``heading_path``); a retrieved chunk matches a
  passage with the same ``rel_path`` whose heading path is a prefix of the chunk's, segment by
  whole segment (headings are normalised to ``A > B``; ``A > B`` does not hold ``A > BC``);
  each passage counts once.

With ``require_snippet``, a chunk matches a passage that lists snippets only if its text holds
one of them. The ranking is the system's own order (``rank``), not its scores. The level used is
stored in every score's details.

Before a run's cases are scored, :class:`IdSpace` checks that the retrieved ids can match the
gold ids at all: for each dataset and level, under ``id_space_min_overlap`` of its cases (that
retrieved items with ids) retrieving any gold id of the dataset, its retrieval scores fail with
``retrieved ids never match gold ids (example: ...)`` instead of reading 0; chunk-level cases
whose gold passages all carry a ``doc_id`` are then matched by document when the retrieved
doc ids do meet the gold ones (random chunk ids, such as LlamaIndex's, with the file names
reported as ``doc_id``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ragmeter.metrics.base import (
    NOT_REPORTED,
    FailScore,
    Metric,
    MetricOutput,
    MetricSettings,
    SkipScore,
)
from ragmeter.metrics.family import MetricFamily, setting
from ragmeter.metrics.id_space import IdSpace
from ragmeter.metrics.ir import Measure, query_measures
from ragmeter.metrics.ir.query import measure_plan
from ragmeter.metrics.passages import Level, all_passages, case_level, ranked_chunks
from ragmeter.metrics.shared import SharedDetails
from ragmeter.models import (
    HEADING_DELIMITER,
    Case,
    Citation,
    GoldPassage,
    Response,
    RetrievedChunk,
    normalize_heading_path,
)

# starts with NOT_REPORTED: such a case lowers the metric's coverage
NO_CHUNK_IDS = (
    f"{NOT_REPORTED} chunk ids: its retrieved chunks have no id (or chunk_id), so the "
    "gold chunk ids cannot be matched; report each chunk's id, or label the gold passages by "
    "doc_id or rel_path"
)


def check_chunk_ids(level: Level, response: Response) -> None:
    """Skip a chunk-level case whose retrieved chunks carry no id: scoring it would count every
    chunk as a miss."""
    if level == "chunk" and response.retrieved and all(c.id is None for c in response.retrieved):
        raise SkipScore(NO_CHUNK_IDS)


@dataclass(frozen=True)
class Judged:
    """One case as a TREC query: ranked item ids and graded judgments."""

    level: Level
    ranked: list[str]
    qrel: dict[str, int]


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


def anchor_key(passage: GoldPassage) -> str:
    return f"{passage.rel_path}#{passage.heading_path or ''}"


def passage_key(passage: GoldPassage, level: Level) -> str | None:
    if level == "chunk":
        return passage.chunk_id
    if level == "doc":
        return passage.doc_id
    return anchor_key(passage) if passage.rel_path else None


def heading_segments(heading_path: str | None) -> list[str]:
    """A heading path's segments, normalised (``"A >  B"`` -> ``["A", "B"]``)."""
    normalized = normalize_heading_path(heading_path)
    return normalized.split(HEADING_DELIMITER) if normalized else []


def heading_within(anchor: str | None, heading_path: str | None) -> bool:
    """The item's heading path lies under the anchor: the anchor's segments are its first
    segments, whole (``Handbook > Annual`` holds ``Handbook > Annual > Carry-over`` but not
    ``Handbook > Annual Vacation``). No anchor holds everything."""
    wanted = heading_segments(anchor)
    return heading_segments(heading_path)[: len(wanted)] == wanted


def _snippet_ok(passage: GoldPassage, text: str, require_snippet: bool) -> bool:
    if not require_snippet or not passage.snippets:
        return True
    folded = _fold(text)
    return any(_fold(snippet) in folded for snippet in passage.snippets)


def matches(
    passage: GoldPassage,
    item: RetrievedChunk | Citation,
    level: Level,
    require_snippet: bool = False,
) -> bool:
    """Does a retrieved chunk (or a citation) match a gold passage at this level?"""
    if level == "chunk":
        item_chunk = item.id if isinstance(item, RetrievedChunk) else item.chunk_id
        if item_chunk is not None or isinstance(item, RetrievedChunk):
            hit = passage.chunk_id is not None and item_chunk == passage.chunk_id
        else:  # a citation without a chunk id is matched by its document
            hit = passage.doc_id is not None and item.doc_id == passage.doc_id
    elif level == "doc":
        hit = passage.doc_id is not None and item.doc_id == passage.doc_id
    else:
        hit = (
            passage.rel_path is not None
            and item.rel_path == passage.rel_path
            and heading_within(passage.heading_path, item.heading_path)
        )
    text = item.text if isinstance(item, RetrievedChunk) else (item.quote or "")
    return hit and _snippet_ok(passage, text, require_snippet)


def judge_case(
    case: Case, response: Response, require_snippet: bool = False, level: Level | None = None
) -> Judged:
    """The case as a TREC query, at its own level (``level``: at that one instead, e.g. ``doc``
    when the id-space check matches its chunks by document)."""
    passages = all_passages(case)
    level = level or case_level(passages)
    keyed = [(p, key) for p in passages if (key := passage_key(p, level)) is not None]
    qrel: dict[str, int] = {}
    for passage, key in keyed:
        qrel[key] = max(qrel.get(key, passage.grade), passage.grade)
    ranked: list[str] = []
    seen: set[str] = set()
    for position, chunk in enumerate(ranked_chunks(response)):
        if level == "doc":
            if chunk.doc_id in seen:
                continue  # a document counts once, at its first rank
            seen.add(chunk.doc_id or f"~{position}")
        candidates = [(p, k) for p, k in keyed if matches(p, chunk, level, require_snippet)]
        if len(candidates) > 1:
            candidates.sort(key=lambda pk: -pk[0].grade)
        key = next((k for _, k in candidates if k not in ranked), None)
        ranked.append(key if key is not None else f"~unjudged~{position}")
    return Judged(level, ranked, qrel)


class CaseMemo:
    """Keeps the last case's measures: every retrieval metric of a case reads the same dict (the
    ``retrieval`` family and the ``trec`` run metrics each hold one)."""

    def __init__(self, settings: MetricSettings, measures: list[Measure]) -> None:
        self.settings = settings
        self.measures = measures
        self.id_space = IdSpace(settings.id_space_min_overlap)
        # (case, response, (values, details)): the objects are held, so the identity check
        # below cannot be fooled; one tuple, replaced whole, so a reader never mixes two cases
        self._last: tuple[Case | None, Response | None, tuple[dict[str, float], dict[str, Any]]]
        self._last = (None, None, ({}, {"level": "chunk"}))
        self._details: dict[tuple[Level, str | None], dict[str, Any]] = {}
        self._plan = measure_plan(measures)  # each measure's declaration, looked up once

    def details(self) -> dict[str, Any]:
        """The details of the last case's scores: ``{"level": ...}``, one dict per level for
        the run's scores (never changed once made), so the store writes its JSON once."""
        return self._last[2][1]

    def _details_of(self, level: Level, id_space: str | None = None) -> dict[str, Any]:
        """``{"level": ...}`` (and ``id_space``: why the id-space check chose that level)."""
        found = self._details.get((level, id_space))
        if found is None:
            found = {"level": level}
            if id_space:
                found["id_space"] = id_space
            self._details[(level, id_space)] = found
        return found

    def scored(self, case: Case, response: Response) -> tuple[dict[str, float], dict[str, Any]]:
        """(the case's measures, the details of its scores)."""
        last = self._last
        if last[0] is case and last[1] is response:
            return last[2]
        own = case_level(all_passages(case))
        verdict = self.id_space.verdict(case)
        level = verdict.level if verdict is not None and verdict.level else own
        if level == own:  # matched by document instead: the chunk ids are not needed
            check_chunk_ids(own, response)
        if verdict is not None and verdict.failure is not None:
            raise FailScore(verdict.failure)
        judged = judge_case(case, response, self.settings.require_snippet, level)
        values = query_measures(
            judged.ranked,
            judged.qrel,
            self.measures,
            self.settings.relevance_level,
            self.settings.ndcg_gain,
            plan=self._plan,
        )
        found = (values, self._details_of(level, verdict.note if verdict is not None else None))
        self._last = (case, response, found)
        return found

    def __call__(self, case: Case, response: Response) -> tuple[dict[str, float], Level]:
        values, details = self.scored(case, response)
        return values, details["level"]


def measure_reader(memo: CaseMemo, label: str) -> Callable[[Case, Response], MetricOutput]:
    scored = memo.scored

    def compute(case: Case, response: Response) -> MetricOutput:
        values, details = scored(case, response)
        return values[label], details

    return compute


def _groups_found(
    case: Case, response: Response, k: int, require_snippet: bool, id_space: IdSpace | None = None
) -> list[bool]:
    own = case_level(all_passages(case))
    verdict = id_space.verdict(case) if id_space is not None else None
    level = verdict.level if verdict is not None and verdict.level else own
    if level == own:
        check_chunk_ids(own, response)
    if verdict is not None and verdict.failure is not None:
        raise FailScore(verdict.failure)
    top = ranked_chunks(response)[:k]
    return [
        any(matches(p, chunk, level, require_snippet) for p in group.passages for chunk in top)
        for group in case.required_support_groups
    ]


# the support groups found in the top k, and the details of their scores
Found = tuple[list[bool], dict[str, int]]


class GroupsMemo:
    """The last case's support groups found in the top k, for each k asked, with their details
    (``recall_any_at_k`` and ``recall_all_at_k`` read the same ones). The case and response are
    held, so the identity check cannot be fooled; one tuple, replaced whole."""

    def __init__(self, require_snippet: bool, id_space: IdSpace | None = None) -> None:
        self.require_snippet = require_snippet
        self.id_space = id_space
        self._last: tuple[Case | None, Response | None, dict[int, Found]]
        self._last = (None, None, {})

    def found(self, case: Case, response: Response, k: int) -> Found:
        last = self._last
        if last[0] is not case or last[1] is not response:
            last = self._last = (case, response, {})
        known = last[2].get(k)
        if known is None:
            found = _groups_found(case, response, k, self.require_snippet, self.id_space)
            known = last[2][k] = (found, {"groups_found": sum(found), "groups": len(found)})
        return known


def _recall_any(k: int, memo: GroupsMemo) -> Callable[[Case, Response], MetricOutput]:
    def compute(case: Case, response: Response) -> MetricOutput:
        found, details = memo.found(case, response, k)
        return float(any(found)), details

    return compute


def _recall_all(k: int, memo: GroupsMemo) -> Callable[[Case, Response], MetricOutput]:
    def compute(case: Case, response: Response) -> MetricOutput:
        found, details = memo.found(case, response, k)
        return float(all(found)), details

    return compute


def _in_scope(path: str, scope: list[str]) -> bool:
    return any(path == s or path.startswith(s.rstrip("/") + "/") for s in scope)


def _scope_miss(case: Case, response: Response) -> MetricOutput:
    scope = response.scope or []
    supports = [p for p in all_passages(case) if p.grade >= 1]
    locations = [p.rel_path or p.doc_id or "" for p in supports]
    missed = not any(_in_scope(location, scope) for location in locations if location)
    return float(missed), {"scope": scope}


def _attribution_hit(settings: MetricSettings) -> Callable[[Case, Response], MetricOutput]:
    shared = SharedDetails()

    def compute(case: Case, response: Response) -> MetricOutput:
        supports = [p for p in all_passages(case) if p.grade >= settings.relevance_level]
        level = case_level(supports or all_passages(case))
        hit = any(matches(p, c, level) for p in supports for c in response.citations)
        count = len(response.citations)
        return float(hit), shared.get((level, count), lambda: {"level": level, "citations": count})

    return compute


def retrieval_metrics(settings: MetricSettings) -> list[Metric]:
    needs = ("gold_passages", "retrieved")
    per_k = [
        ("recall_at_{k}", "recall", "relevant items in the top {k} / all relevant items"),
        ("precision_at_{k}", "P", "relevant items in the top {k} / {k}"),
        ("f1_at_{k}", "f1", "harmonic mean of precision and recall at {k}"),
        ("hit_rate_at_{k}", "success", "1 if a relevant item is in the top {k} (success@{k})"),
        ("ndcg_at_{k}", "ndcg_cut", "graded nDCG over the top {k}"),
        ("mrr_at_{k}", "recip_rank", "reciprocal rank of the first relevant item, 0 past {k}"),
    ]
    measures: list[Measure] = [Measure(name, k) for _, name, _ in per_k for k in settings.ks]
    measures += [Measure("recip_rank"), Measure("map"), Measure("Rprec")]
    memo = CaseMemo(settings, measures)
    hooks = memo.id_space.hooks()  # the id-space check, before any case is scored
    metrics = [
        Metric(
            template.format(k=k),
            "retrieval",
            measure_reader(memo, Measure(name, k).label),
            needs,
            **hooks,
            description=text.format(k=k),
            kind="binary" if name == "success" else "proportion",
        )
        for template, name, text in per_k
        for k in settings.ks
    ]
    metrics += [
        Metric(
            "mrr",
            "retrieval",
            measure_reader(memo, "recip_rank"),
            needs,
            **hooks,
            description="reciprocal rank of the first relevant item (no cutoff)",
            kind="proportion",
        ),
        Metric(
            "map",
            "retrieval",
            measure_reader(memo, "map"),
            needs,
            **hooks,
            description="average precision over all relevant items",
            kind="proportion",
        ),
        Metric(
            "r_precision",
            "retrieval",
            measure_reader(memo, "Rprec"),
            needs,
            **hooks,
            description="precision at R, the number of relevant items",
            kind="proportion",
        ),
    ]
    groups = GroupsMemo(settings.require_snippet, memo.id_space)
    metrics += [
        Metric(
            f"recall_any_at_{k}",
            "retrieval",
            _recall_any(k, groups),
            ("support_groups", "retrieved"),
            **hooks,
            description=f"multi-hop: 1 if the top {k} hold evidence for any support group",
            kind="binary",
        )
        for k in settings.ks
    ]
    metrics += [
        Metric(
            f"recall_all_at_{k}",
            "retrieval",
            _recall_all(k, groups),
            ("support_groups", "retrieved"),
            **hooks,
            description=f"multi-hop: 1 if the top {k} hold evidence for every support group",
            kind="binary",
        )
        for k in settings.ks
    ]
    metrics += [
        Metric(
            "scope_miss_rate",
            "retrieval",
            _scope_miss,
            ("gold_passages", "scope"),
            higher_is_better=False,
            description="1 if the reported search scope excluded every gold passage",
            kind="binary",
        ),
        Metric(
            "attribution_hit_rate",
            "retrieval",
            _attribution_hit(settings),
            ("gold_passages", "answerable", "citations"),
            description="1 if a citation matches a gold passage (answerable cases)",
            kind="binary",
        ),
    ]
    return metrics


retrieval_family = MetricFamily(
    retrieval_metrics,
    params=(
        setting("ks", "the cut-offs K of every @K metric"),
        setting("relevance_level", "the lowest gold grade that counts as relevant"),
        setting(
            "require_snippet",
            "a gold passage with a snippet counts only when a retrieved chunk holds it",
        ),
        setting(
            "id_space_min_overlap", "the share of retrieved ids that must fall in the gold id space"
        ),
        setting("ndcg_gain", "nDCG's gain: linear (trec_eval) or exponential"),
    ),
    description="retrieved chunks against the gold passages, by rank",
)

"""Citation metrics (seeds 002-004) and recency/conflict rules (seed 004).

- validity by form: the cited id is among the retrieved chunks (chunk id, else doc id);
- validity by content: the cited chunk holds most content words of some answer sentence (or of
  the citation's own quote);
- precision / recall against the gold passages, with the retrieval metrics' matching level;
- section accuracy: the citation points to a gold passage's document and section
  (``rel_path`` + ``heading_path`` prefix by whole segments), using the retrieved chunk's anchor
  when the citation carries only an id.
"""

from __future__ import annotations

from collections.abc import Callable

from ragmeter.metrics.base import Metric, MetricOutput, MetricSettings, SkipScore
from ragmeter.metrics.family import MetricFamily, setting
from ragmeter.metrics.markers import strip_markers
from ragmeter.metrics.passages import all_passages, case_level
from ragmeter.metrics.retrieval import matches
from ragmeter.metrics.shared import SharedDetails
from ragmeter.metrics.textmatch import content_tokens, fold
from ragmeter.models import Case, Citation, GoldPassage, Response, RetrievedChunk
from ragmeter.text import split_sentences

CONTENT_SHARE = 0.5
QUOTE_MIN_CHARS = 40  # a shorter quote ("27 days") may stand in many chunks
ACKNOWLEDGE_PHRASES = (
    "previously",
    "earlier",
    "was updated",
    "updated",
    "supersede",
    "replaced",
    "replaces",
    "changed",
    "no longer",
    "used to",
    "older",
    "outdated",
    "conflict",
    "however",
    "instead of",
    "formerly",
    "originally",
    "now ",
)


def _cited_chunk(citation: Citation, response: Response) -> RetrievedChunk | None:
    for chunk in response.retrieved:
        if citation.chunk_id is not None and chunk.id == citation.chunk_id:
            return chunk
    if citation.chunk_id is None and citation.doc_id is not None:
        return next((c for c in response.retrieved if c.doc_id == citation.doc_id), None)
    return None


def _resolve(marker: str, response: Response) -> Citation:
    if any(chunk.id == marker for chunk in response.retrieved):
        return Citation(chunk_id=marker)
    if any(chunk.doc_id == marker for chunk in response.retrieved):
        return Citation(doc_id=marker)
    if marker.isdigit() and 1 <= int(marker) <= len(response.retrieved):
        return Citation(chunk_id=response.retrieved[int(marker) - 1].id)
    return Citation(chunk_id=marker)


def marker_citations(response: Response) -> list[Citation]:
    """The citations the answer's markers make (see the module doc), one per cited source,
    each quoting the first sentence that cites it."""
    found: dict[tuple[str | None, str | None], Citation] = {}
    for sentence in split_sentences(response.answer):
        marked = strip_markers(sentence)
        for marker in marked.ids:
            citation = _resolve(marker, response)
            key = (citation.chunk_id, citation.doc_id)
            if key not in found:
                found[key] = citation.model_copy(update={"quote": marked.text.strip() or None})
    return list(found.values())


def _has_id(citation: Citation) -> bool:
    return any(x is not None for x in (citation.chunk_id, citation.doc_id, citation.rel_path))


def _words(text: str) -> str:
    return " ".join(text.split())


def _by_text(citation: Citation, response: Response) -> Citation:
    """A citation with no id that quotes a retrieved chunk's text (the whole text, or a passage
    of at least ``QUOTE_MIN_CHARS`` characters in it: a framework that cites the source
    document it was given) cites that chunk, the first one by rank; any other is unchanged."""
    if _has_id(citation) or not citation.quote:
        return citation
    quote = _words(citation.quote)
    for chunk in response.retrieved:
        text = _words(chunk.text)
        if quote == text or (len(quote) >= QUOTE_MIN_CHARS and quote in text):
            if chunk.id is not None:
                return citation.model_copy(update={"chunk_id": chunk.id})
            if chunk.doc_id is not None:
                return citation.model_copy(update={"doc_id": chunk.doc_id})
    return citation


def citations_of(response: Response) -> tuple[list[Citation], bool]:
    """(the response's citations, whether they come from its answer's markers): the reported
    ones (an id-less one that quotes a retrieved chunk cites that chunk), else those of the
    markers."""
    if response.citations:
        return [_by_text(c, response) for c in response.citations], False
    return marker_citations(response), True


class _LastCited:
    """The last response's citations (``citations_of``) and, once asked, the same citations
    anchored (``_anchored``), never changed by the metrics that read them: the citation metrics
    of a case read them once. The response is held, so the identity check cannot be fooled; one
    tuple, replaced whole."""

    def __init__(self) -> None:
        self.last: tuple[Response | None, list[Citation], list[Citation] | None] = (None, [], None)

    def __call__(self, response: Response) -> list[Citation]:
        last = self.last
        if last[0] is response:
            return last[1]
        citations = citations_of(response)[0]
        self.last = (response, citations, None)
        return citations

    def anchored(self, response: Response) -> list[Citation]:
        last = self.last
        if last[0] is response and last[2] is not None:
            return last[2]
        citations = last[1] if last[0] is response else citations_of(response)[0]
        anchored = [_anchored(c, response) for c in citations]
        self.last = (response, citations, anchored)
        return anchored


_citations = _LastCited()


def _cited(response: Response) -> list[Citation]:
    """The citations, possibly none; skip when the target reports no citations and the answer
    has no marker."""
    citations = _citations(response)
    if not citations and not response.has("citations"):
        raise SkipScore("target did not report citations and the answer has no citation markers")
    idless = sum(not _has_id(c) for c in citations)
    if idless:  # scored, each would count as a wrong citation: a believable wrong number
        raise SkipScore(
            f"target did not report citation ids ({idless} of {len(citations)} citations have "
            "no chunk_id, doc_id or rel_path, and no retrieved chunk holds their text)"
        )
    return citations


def _need_citations(response: Response) -> list[Citation]:
    """The citations; skip when there is none."""
    citations = _cited(response)
    if not citations:
        raise SkipScore("answer has no citations")
    return citations


_SHARED = SharedDetails()


def _source(response: Response) -> dict[str, str]:
    if response.citations:
        return {}
    return _SHARED.get("markers", lambda: {"citations_from": "answer markers"})


def _leveled(level: str, response: Response) -> dict[str, str]:
    """``{"level": level, **_source(response)}``, shared by the scores."""
    return _SHARED.get(
        (level, bool(response.citations)), lambda: {"level": level, **_source(response)}
    )


def _form(case: Case, response: Response) -> MetricOutput:
    citations = _need_citations(response)
    valid = [_cited_chunk(c, response) is not None for c in citations]
    return sum(valid) / len(valid), {
        "invalid": [
            c.chunk_id or c.doc_id for c, ok in zip(citations, valid, strict=True) if not ok
        ],
        **_source(response),
    }


def _content(case: Case, response: Response) -> MetricOutput:
    citations = _need_citations(response)
    answer = strip_markers(response.answer).text
    sentences = [set(content_tokens(s)) for s in split_sentences(answer)]
    sentences = [s for s in sentences if s]
    valid = 0
    for citation in citations:
        chunk = _cited_chunk(citation, response)
        if chunk is None:
            continue
        chunk_tokens = set(content_tokens(chunk.text))
        claims = [set(content_tokens(citation.quote))] if citation.quote else sentences
        if any(c and len(c & chunk_tokens) / len(c) >= CONTENT_SHARE for c in claims):
            valid += 1
    return valid / len(citations), _source(response)


def _gold(case: Case, settings: MetricSettings) -> list[GoldPassage]:
    gold = [p for p in all_passages(case) if p.grade >= settings.relevance_level]
    if not gold:
        raise SkipScore("case has no relevant gold passages")
    return gold


def _precision(settings: MetricSettings) -> Callable[[Case, Response], MetricOutput]:
    def compute(case: Case, response: Response) -> MetricOutput:
        gold = _gold(case, settings)
        _need_citations(response)
        level = case_level(gold)
        cited = _citations.anchored(response)
        hits = [any(matches(p, c, level) for p in gold) for c in cited]
        return sum(hits) / len(hits), _leveled(level, response)

    return compute


def _recall(settings: MetricSettings) -> Callable[[Case, Response], MetricOutput]:
    def compute(case: Case, response: Response) -> MetricOutput:
        gold = _gold(case, settings)
        level = case_level(gold)
        _cited(response)
        citations = _citations.anchored(response)
        cited = [any(matches(p, c, level) for c in citations) for p in gold]
        return sum(cited) / len(cited), _leveled(level, response)

    return compute


def _anchored(citation: Citation, response: Response) -> Citation:
    """The citation with the document and section of the retrieved chunk it names filled in
    where it carries only a chunk id (a bare ``"handbook#1"`` cites document ``handbook``)."""
    chunk = _cited_chunk(citation, response)
    if chunk is None:
        return citation
    update = {
        name: getattr(chunk, name)
        for name in ("doc_id", "rel_path", "heading_path")
        if getattr(citation, name) is None and getattr(chunk, name) is not None
    }
    if citation.rel_path is not None:
        update.pop("heading_path", None)
    return citation.model_copy(update=update) if update else citation


def _section(settings: MetricSettings) -> Callable[[Case, Response], MetricOutput]:
    def compute(case: Case, response: Response) -> MetricOutput:
        gold = [p for p in _gold(case, settings) if p.rel_path]
        if not gold:
            raise SkipScore("gold passages carry no rel_path/heading_path")
        _need_citations(response)
        anchored = _citations.anchored(response)
        hits = [any(matches(p, c, "anchor") for p in gold) for c in anchored]
        return sum(hits) / len(hits), _source(response)

    return compute


def _doc_of(citation: Citation, response: Response) -> str | None:
    if citation.doc_id:
        return citation.doc_id
    chunk = _cited_chunk(citation, response)
    return chunk.doc_id if chunk is not None else None


def _expected_citations(case: Case, response: Response) -> MetricOutput:
    if not case.expected_citations:
        raise SkipScore("case declares no expected_citations")
    cited = {_doc_of(c, response) for c in _cited(response)}
    missing = [d for d in case.expected_citations if d not in cited]
    total = len(case.expected_citations)
    return (total - len(missing)) / total, {"missing": missing}


def newer_and_older_docs(case: Case) -> tuple[set[str], set[str]]:
    """The newer sources are ``expected_citations`` (else the highest-graded gold documents);
    the older are the other gold documents."""
    gold_docs = {p.doc_id for p in all_passages(case) if p.doc_id}
    if case.expected_citations:
        newer = set(case.expected_citations)
    else:
        top = max((p.grade for p in all_passages(case)), default=0)
        newer = {p.doc_id for p in all_passages(case) if p.doc_id and p.grade == top}
    return newer, gold_docs - newer


def _recency(case: Case, response: Response) -> MetricOutput:
    rule = case.recency_conflict_rule
    if rule is None:
        raise SkipScore("case declares no recency_conflict_rule")
    newer, older = newer_and_older_docs(case)
    cited = {_doc_of(c, response) for c in _cited(response)}
    cites_newer = bool(newer & cited)
    cites_older = bool(older & cited) if older else True
    acknowledges = any(phrase in fold(response.answer) for phrase in ACKNOWLEDGE_PHRASES)
    if rule == "cite_newer":
        ok = cites_newer
    elif rule == "cite_both":
        ok = cites_newer and cites_older
    else:
        ok = cites_newer and cites_older and acknowledges
    return float(ok), {
        "rule": rule,
        "cites_newer": cites_newer,
        "cites_older": cites_older,
        "acknowledges_conflict": acknowledges,
    }


def citation_metrics(settings: MetricSettings) -> list[Metric]:
    return [
        Metric(
            "citation_validity_form",
            "citation",
            _form,
            (),
            description="share of citations whose id is among the retrieved chunks",
            kind="proportion",
        ),
        Metric(
            "citation_validity_content",
            "citation",
            _content,
            ("retrieved",),
            description="share of citations whose chunk holds most content words of an "
            "answer sentence (or of the citation's quote)",
            kind="proportion",
        ),
        Metric(
            "citation_precision",
            "citation",
            _precision(settings),
            (),
            description="share of citations pointing to gold passages",
            kind="proportion",
        ),
        Metric(
            "citation_recall",
            "citation",
            _recall(settings),
            ("answerable",),
            description="share of gold passages that are cited",
            kind="proportion",
        ),
        Metric(
            "section_accuracy",
            "citation",
            _section(settings),
            (),
            description="share of citations pointing to a gold document and section",
            kind="proportion",
        ),
        Metric(
            "expected_citation_recall",
            "citation",
            _expected_citations,
            (),
            description="share of the case's expected_citations (doc ids) that are cited",
            kind="proportion",
        ),
        Metric(
            "recency_rule_satisfied",
            "citation",
            _recency,
            (),
            description="cite_newer / cite_both / acknowledge_both rule of a recency case",
            kind="binary",
        ),
    ]


citation_family = MetricFamily(
    citation_metrics,
    params=(setting("relevance_level", "the lowest gold grade a cited passage must have"),),
    description="the answer's citations against the retrieved chunks and gold passages",
)

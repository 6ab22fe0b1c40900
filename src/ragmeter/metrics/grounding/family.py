"""The ``grounding`` metric family: per-run state (embedders, batched word-piece alignments,
cached assessments) and the four Metric declarations (``grounding_metrics``)."""

from __future__ import annotations

from ragmeter.metrics.base import Metric, MetricOutput, MetricSettings, SkipScore
from ragmeter.metrics.claims import extract_claims
from ragmeter.metrics.grounding.alignment import (
    Aligner,
    Alignment,
    SentenceEmbedder,
    TokenEmbedder,
    alignment_texts,
    token_alignment,
)
from ragmeter.metrics.grounding.assessment import (
    MAX_CLAIMS,
    MAX_CONTEXT_CHARS,
    Assessment,
    assess,
)
from ragmeter.metrics.grounding.features import Context, build_context
from ragmeter.metrics.grounding.model import (
    ALIGNED_SCORE_WEIGHTS,
    DEFAULT_SCORE_WEIGHTS,
    DEFAULT_WEIGHTS,
    TOKEN_MODEL,
    GroundingWeights,
    ScoreWeights,
)
from ragmeter.models import Case, Response


def _skip_abstention(response: Response) -> None:
    if response.abstained:
        raise SkipScore("the response abstained (no claims to ground)")


NO_CHECKED_CLAIMS = "no checked claims (none, or only general claims, which are not checked)"


class GroundingState:
    """Per-run state of the family: the embedders (built lazily, failing soft), the word-piece
    alignments computed in batches by ``prepare``, and a cache of assessments."""

    def __init__(
        self,
        embedder_spec: str | None,
        weights: GroundingWeights = DEFAULT_WEIGHTS,
        score_weights: ScoreWeights = DEFAULT_SCORE_WEIGHTS,
        aligned_score_weights: ScoreWeights = ALIGNED_SCORE_WEIGHTS,
        align: bool = True,
    ):
        self.embedder_spec = embedder_spec
        self.weights = weights
        self.score_weights = score_weights
        self.aligned_score_weights = aligned_score_weights
        self.align = align
        self._embedder: SentenceEmbedder | None = None
        self.embedder_note: str | None = None
        self._cache: dict[tuple[str, str, tuple[str, ...]], Assessment] = {}
        self._tried = False
        self._token_embedder: TokenEmbedder | None = None
        self.token_note: str | None = None if align else "word-piece alignment off: lexical model"
        self._token_tried = False
        self._alignments: dict[tuple[str, ...], Alignment] = {}

    def embedder(self) -> SentenceEmbedder | None:
        if self.weights.embedding <= 0 or not self.embedder_spec:
            self.embedder_note = "embedding alignment off (weight 0): lexical signals only"
            return None
        if not self._tried:
            self._tried = True
            try:
                from ragmeter.embedders import build_embedder

                self._embedder = build_embedder(self.embedder_spec)
            except Exception as exc:  # no embedder: lexical only, with the reason recorded
                self.embedder_note = (
                    f"embedder {self.embedder_spec!r} unavailable ({type(exc).__name__}: {exc});"
                    " lexical signals only"
                )
        return self._embedder

    def token_embedder(self) -> TokenEmbedder | None:
        """MiniLM's word-piece vectors for ``grounding_score``, or None (lexical model) with
        the reason in ``token_note``."""
        if self.align and not self._token_tried:
            self._token_tried = True
            try:
                from ragmeter.embedders import build_embedder

                self._token_embedder = build_embedder(TOKEN_MODEL)
            except Exception as exc:
                self.token_note = (
                    f"word-piece alignment unavailable ({type(exc).__name__}: {exc}): "
                    "grounding_score uses its lexical model"
                )
        return self._token_embedder

    def aligner(self) -> Aligner | None:
        """Alignments from ``prepare``'s batches, else computed (and kept) one answer at a
        time."""
        embedder = self.token_embedder()
        if embedder is None:
            return None

        def align(claims: list[str], context: Context) -> Alignment:
            key = tuple(alignment_texts(claims, context))
            if key not in self._alignments:
                vectors = embedder.token_embeddings(list(key))
                self._alignments[key] = token_alignment(vectors[0], vectors[1:])
            return self._alignments[key]

        return align

    def prepare(self, pairs: list[tuple[Case, Response]]) -> None:
        """Embed in batches what the run needs: claims and context sentences (when the claim
        support uses an embedder), and the word-piece texts of every answer's alignment."""
        self._prepare_alignments(pairs)
        embedder = self.embedder()
        if embedder is None:
            return
        texts: list[str] = []
        for _, response in pairs:
            texts.extend(c.text for c in extract_claims(response.answer, MAX_CLAIMS)[0])
            texts.extend(build_context([r.text for r in response.retrieved]).sentences)
        try:
            embedder.embed(list(dict.fromkeys(texts)))
        except Exception as exc:  # scored lexically later if the embedder keeps failing
            self.embedder_note = f"batch embedding failed ({type(exc).__name__}: {exc})"

    def _prepare_alignments(self, pairs: list[tuple[Case, Response]], batch: int = 512) -> None:
        """Alignments of every answer with claims, ``batch`` distinct texts per embedding call;
        only the two numbers per answer are kept, not the vectors."""
        embedder = self.token_embedder()
        if embedder is None:
            return
        pending: list[tuple[str, ...]] = []
        for _, response in pairs:
            if response.abstained:
                continue
            claims = [c.text for c in extract_claims(response.answer, MAX_CLAIMS)[0]]
            if claims:
                context = build_context([r.text for r in response.retrieved], MAX_CONTEXT_CHARS)
                pending.append(tuple(alignment_texts(claims, context)))
        pending = [key for key in dict.fromkeys(pending) if key not in self._alignments]
        start = 0
        while start < len(pending):
            group: list[tuple[str, ...]] = []
            texts: dict[str, None] = {}
            while start < len(pending) and (not group or len(texts) < batch):
                group.append(pending[start])
                texts.update(dict.fromkeys(pending[start]))
                start += 1
            try:
                vectors = dict(zip(texts, embedder.token_embeddings(list(texts)), strict=True))
            except Exception as exc:  # each answer tries again alone when it is scored
                self.token_note = f"batch word-piece embedding failed ({type(exc).__name__}: {exc})"
                return
            for key in group:
                self._alignments[key] = token_alignment(
                    vectors[key[0]], [vectors[t] for t in key[1:]]
                )

    def assess(self, case: Case, response: Response) -> Assessment:
        key = (case.question, response.answer, tuple(chunk.text for chunk in response.retrieved))
        found = self._cache.get(key)
        if found is None:
            found = assess(
                response.answer,
                list(key[2]),
                self.weights,
                self.embedder(),
                self.score_weights,
                self.aligner(),
                self.aligned_score_weights,
                question=case.question,
            )
            found.notes.extend(n for n in (self.embedder_note, self.token_note) if n)
            if len(self._cache) > 1024:
                self._cache.clear()
            self._cache[key] = found
        return found


def grounding_metrics(
    settings: MetricSettings,
    weights: GroundingWeights = DEFAULT_WEIGHTS,
    score_weights: ScoreWeights = DEFAULT_SCORE_WEIGHTS,
    aligned_score_weights: ScoreWeights = ALIGNED_SCORE_WEIGHTS,
) -> list[Metric]:
    state = GroundingState(
        settings.embedder,
        weights,
        score_weights,
        aligned_score_weights,
        align=settings.grounding_model == "auto",
    )

    def support_rate(case: Case, response: Response) -> MetricOutput:
        _skip_abstention(response)
        result = state.assess(case, response)
        checked = result.checked
        if not checked:
            raise SkipScore(NO_CHECKED_CLAIMS)
        supported = sum(bool(c.supported) for c in checked)
        return supported / len(checked), result.details()

    def unsupported_count(case: Case, response: Response) -> MetricOutput:
        _skip_abstention(response)
        result = state.assess(case, response)
        if not result.checked:
            raise SkipScore(NO_CHECKED_CLAIMS)
        return float(len(result.unsupported)), result.details()

    def numeric_fabrications(case: Case, response: Response) -> MetricOutput:
        result = state.assess(case, response)
        return float(len(result.fabricated_numbers)), {
            "answer_numbers": [n.text for n in result.answer_numbers],
            "normalized": [n.normalized for n in result.answer_numbers],
            "fabricated_numbers": [n.text for n in result.fabricated_numbers],
        }

    def score(case: Case, response: Response) -> MetricOutput:
        _skip_abstention(response)
        result = state.assess(case, response)
        if result.score is None:
            raise SkipScore("no checkable claims (empty, refusal-only or question-only answer)")
        return result.score, result.details()

    needs = ("retrieved",)
    return [
        Metric(
            "claim_support_rate",
            "grounding",
            support_rate,
            needs,
            description="share of checked (assertion and inference) claims the context supports",
            prepare=state.prepare,
            kind="proportion",
        ),
        Metric(
            "unsupported_claim_count",
            "grounding",
            unsupported_count,
            needs,
            higher_is_better=False,
            unit="claims",
            description="checked claims the retrieved context does not support",
            prepare=state.prepare,
            kind="count",
        ),
        Metric(
            "numeric_fabrication_count",
            "grounding",
            numeric_fabrications,
            ("retrieved",),
            higher_is_better=False,
            unit="numbers",
            description="numbers in the answer whose normalised value is not in the context",
            prepare=state.prepare,
            kind="count",
        ),
        Metric(
            "grounding_score",
            "grounding",
            score,
            ("retrieved",),
            description="continuous support of the answer's claims by the context, in [0, 1]",
            prepare=state.prepare,
            kind="score",
        ),
    ]

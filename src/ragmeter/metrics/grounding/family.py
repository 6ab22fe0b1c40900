"""The ``grounding`` metric family: per-run state (embedders, batched word-piece alignments,
cached assessments) and the four Metric declarations (``grounding_metrics``)."""

from __future__ import annotations

from ragmeter.config import NLI_PREFIX
from ragmeter.metrics.abstention import refusal_rule, skip_refusal
from ragmeter.metrics.base import Metric, MetricOutput, MetricSettings, SkipScore
from ragmeter.metrics.claims import extract_claims
from ragmeter.metrics.family import MetricFamily, setting
from ragmeter.metrics.grounding.alignment import (
    Aligner,
    Alignment,
    SentenceEmbedder,
    TokenEmbedder,
    alignment_texts,
    batched_alignments,
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
from ragmeter.metrics.grounding.nli import (
    CachedNli,
    NliModelError,
    apply_nli,
    load_scorer,
    nli_pairs,
)
from ragmeter.metrics.grounding.questions import reads_question
from ragmeter.metrics.markers import strip_markers
from ragmeter.models import Case, Response

# (the question, or None when the answer is not read through it; the answer; chunk texts)
AssessmentKey = tuple[str | None, str, tuple[str, ...]]
NLI_FAILED = "NLI model not used: "  # the note of an answer the NLI model did not score
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
        nli: str | None = None,
        phrases: tuple[str, ...] = (),
    ):
        self.embedder_spec = embedder_spec
        self.weights = weights
        self.score_weights = score_weights
        self.aligned_score_weights = aligned_score_weights
        self.align = align
        # the abstention phrases (``MetricSettings.abstention_phrases``; () the default list):
        # a response the abstention family reads as a refusal has no claims to grade
        self.phrases = phrases
        self._embedder: SentenceEmbedder | None = None
        self.embedder_note: str | None = None
        self._cache: dict[AssessmentKey, Assessment] = {}
        self._reads_question: dict[str, bool] = {}
        self._tried = False
        self._token_embedder: TokenEmbedder | None = None
        self.token_note: str | None = None if align else "word-piece alignment off: lexical model"
        self._token_tried = False
        self._alignments: dict[tuple[str, ...], Alignment] = {}
        self.nli_spec = nli  # "nli:PATH": claims and grounding_score by that NLI model
        self._nli: CachedNli | None = None
        self._nli_tried = False
        self.nli_error: str | None = None

    def refused(self, response: Response) -> bool:
        """The response is a refusal by the abstention family's rules (field, empty answer,
        phrase, short non-answer): the claim metrics skip it, so nothing is prepared for it."""
        return refusal_rule(response, self.phrases) is not None

    def skip_refusal(self, response: Response) -> None:
        """Skip a refusal, the reason naming the rule that decided it."""
        skip_refusal(response, self.phrases)

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
        self._alignments.clear()  # an earlier batch's
        self._prepare_alignments(pairs)
        self._prepare_nli(pairs)
        embedder = self.embedder()
        if embedder is None:
            return
        texts: list[str] = []
        for _, response in pairs:
            if self.refused(response):
                continue
            texts.extend(c.text for c in extract_claims(response.answer, MAX_CLAIMS)[0])
            texts.extend(build_context([r.text for r in response.retrieved]).sentences)
        try:
            embedder.embed(list(dict.fromkeys(texts)))
        except Exception as exc:  # scored lexically later if the embedder keeps failing
            self.embedder_note = f"batch embedding failed ({type(exc).__name__}: {exc})"

    def _prepare_alignments(self, pairs: list[tuple[Case, Response]]) -> None:
        """Alignments of every answer with claims, read as ``assess`` reads it (markers out),
        in groups across cases (``batched_alignments``: each distinct text embedded once);
        only the two numbers per answer are kept, not the vectors."""
        embedder = self.token_embedder()
        if embedder is None:
            return
        pending: list[tuple[str, ...]] = []
        seen: set[tuple[str, tuple[str, ...]]] = set()  # (answer, chunk texts) already read
        for _, response in pairs:
            if not response.has("retrieved") or self.refused(response):
                continue
            read = (response.answer, tuple(r.text for r in response.retrieved))
            if read in seen:
                continue
            seen.add(read)
            answer = strip_markers(response.answer).text
            claims = [c.text for c in extract_claims(answer, MAX_CLAIMS)[0]]
            if claims:
                context = build_context([r.text for r in response.retrieved], MAX_CONTEXT_CHARS)
                pending.append(tuple(alignment_texts(claims, context)))
        pending = [key for key in pending if key not in self._alignments]
        try:
            for key, alignment in batched_alignments(pending, embedder):
                self._alignments[key] = alignment
        except Exception as exc:  # each answer tries again alone when it is scored
            self.token_note = f"batch word-piece embedding failed ({type(exc).__name__}: {exc})"

    def nli(self) -> CachedNli | None:
        """The NLI model of ``grounding_model: nli:PATH`` (loaded once), or None: not
        configured, or it failed to load (the reason in ``nli_error``)."""
        if self.nli_spec and not self._nli_tried:
            self._nli_tried = True
            try:
                self._nli = CachedNli(load_scorer(self.nli_spec))
            except Exception as exc:
                self.nli_error = (
                    f"grounding model {self.nli_spec} could not be loaded "
                    f"({type(exc).__name__}: {exc})"
                )
        return self._nli

    def _prepare_nli(self, pairs: list[tuple[Case, Response]], chunk: int = 256) -> None:
        """With an NLI model: every answer's claim/window pairs scored in batches across cases
        (``chunk`` answers at a time); the assessments are kept in the cache."""
        scorer = self.nli()
        if scorer is None:
            return
        todo = [(c, r) for c, r in pairs if r.has("retrieved") and not self.refused(r)]
        for start in range(0, len(todo), chunk):
            found = [(self._key(c, r), self._lexical(c, r)) for c, r in todo[start : start + chunk]]
            requests = [(v.text, w) for _, a in found for v, ws in nli_pairs(a) for w in ws]
            try:
                scorer.entailment([w for _, w in requests], [t for t, _ in requests])
            except Exception as exc:  # each answer tries again alone when it is scored
                self.nli_error = f"batch NLI scoring failed ({type(exc).__name__}: {exc})"
                return
            for key, assessment in found:
                self._with_model(assessment)
                self._keep(key, assessment)

    def _key(self, case: Case, response: Response) -> AssessmentKey:
        """What an assessment depends on: the answer, the chunks' texts and the question, which
        only a short answer is read through (``questions.reads_question``), so cases with the
        same long answer and chunks share one assessment."""
        answer = response.answer
        reads = self._reads_question.get(answer)
        if reads is None:
            if len(self._reads_question) > 4096:
                self._reads_question.clear()
            reads = self._reads_question[answer] = reads_question(strip_markers(answer).text)
        question = case.question if reads else None
        return question, answer, tuple(chunk.text for chunk in response.retrieved)

    def _lexical(self, case: Case, response: Response) -> Assessment:
        found = assess(
            response.answer,
            [chunk.text for chunk in response.retrieved],
            self.weights,
            self.embedder(),
            self.score_weights,
            self.aligner(),
            self.aligned_score_weights,
            question=case.question,
        )
        found.notes.extend(n for n in (self.embedder_note, self.token_note) if n)
        return found

    def _with_model(self, found: Assessment) -> None:
        scorer = self.nli()
        if scorer is None:
            found.notes.append(f"{NLI_FAILED}{self.nli_error}")
            return
        try:
            apply_nli(found, scorer)
        except Exception as exc:
            found.notes.append(f"{NLI_FAILED}{self.nli_spec} failed ({type(exc).__name__}: {exc})")

    def require_model(self, found: Assessment) -> None:
        """With an NLI model configured, an answer with claims that it did not score fails
        (never a lexical number in its place), the reason in the error and its details."""
        if self.nli_spec and found.claims and found.model_score is None:
            reason = next(
                (n[len(NLI_FAILED) :] for n in found.notes if n.startswith(NLI_FAILED)),
                self.nli_error or "the NLI model gave no score",
            )
            raise NliModelError(reason, {"grounding_model": self.nli_spec, "error": reason})

    def _keep(self, key: AssessmentKey, found: Assessment) -> None:
        if len(self._cache) > 1024:
            self._cache.clear()
        self._cache[key] = found

    def assess(self, case: Case, response: Response) -> Assessment:
        key = self._key(case, response)
        found = self._cache.get(key)
        if found is None:
            found = self._lexical(case, response)
            if self.nli_spec:
                self._with_model(found)
            self._keep(key, found)
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
        nli=settings.grounding_model if settings.grounding_model.startswith(NLI_PREFIX) else None,
        phrases=settings.abstention_phrases,
    )

    def support_rate(case: Case, response: Response) -> MetricOutput:
        state.skip_refusal(response)
        result = state.assess(case, response)
        state.require_model(result)
        checked = result.checked
        if not checked:
            raise SkipScore(NO_CHECKED_CLAIMS)
        supported = sum(bool(c.supported) for c in checked)
        return supported / len(checked), result.shared_details()

    def unsupported_count(case: Case, response: Response) -> MetricOutput:
        state.skip_refusal(response)
        result = state.assess(case, response)
        state.require_model(result)
        if not result.checked:
            raise SkipScore(NO_CHECKED_CLAIMS)
        return float(len(result.unsupported)), result.shared_details()

    def numeric_fabrications(case: Case, response: Response) -> MetricOutput:
        state.skip_refusal(response)
        result = state.assess(case, response)
        return float(len(result.fabricated_numbers)), {
            "answer_numbers": [n.text for n in result.answer_numbers],
            "normalized": [n.normalized for n in result.answer_numbers],
            "fabricated_numbers": [n.text for n in result.fabricated_numbers],
        }

    def score(case: Case, response: Response) -> MetricOutput:
        state.skip_refusal(response)
        result = state.assess(case, response)
        state.require_model(result)
        value = result.score  # a property that runs the score model: read once
        if value is None:
            raise SkipScore("no checkable claims (empty, refusal-only or question-only answer)")
        return value, result.shared_details()

    needs = ("retrieved",)
    prepare = state.prepare  # one object: the runner prepares the four metrics once
    return [
        Metric(
            "claim_support_rate",
            "grounding",
            support_rate,
            needs,
            description="share of checked (assertion and inference) claims the context supports",
            prepare=prepare,
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
            prepare=prepare,
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
            prepare=prepare,
            kind="count",
        ),
        Metric(
            "grounding_score",
            "grounding",
            score,
            ("retrieved",),
            description="continuous support of the answer's claims by the context, in [0, 1]",
            prepare=prepare,
            kind="score",
        ),
    ]


grounding_family = MetricFamily(
    grounding_metrics,
    params=(
        setting("grounding_model", "how claims are aligned: auto, lexical or nli:MODEL"),
        setting("embedder", "the embedder of the claim-to-sentence cosine"),
        setting("abstention_phrases", "phrases that mark a refusal, which has no claims"),
    ),
    description="is each claim of the answer supported by the retrieved chunks",
)

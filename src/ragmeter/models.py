"""Pydantic models shared by every stage: cases, responses and scores (the run record and its
parts: ``ragmeter.run_record``).

A run has one version number, the run file's (``RUN_FILE_VERSION``): a later ragmeter reads an
older run by it, from its file or its store row.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from ragmeter.replies import prepared_reply

# 3: "goals" (seed 003's "targets", read too); no second "schema_version" in the record
RUN_FILE_VERSION = 3

HEADING_DELIMITER = " > "

RecencyRule = Literal["cite_newer", "acknowledge_both", "cite_both"]
Outcome = Literal["success", "blocked", "no_results", "uncertain"]
ScoreStatus = Literal["ok", "skipped", "failed"]
CaseStatus = Literal["ok", "error"]
# seed 003's output-leakage categories and ragmeter's canary category (metrics/leakage)
LeakCategory = Literal[
    "pii_exposure", "secret_exposure", "metadata_exposure", "verbatim_context", "canary_exposure"
]


def normalize_heading_path(value: str | list[str] | None) -> str | None:
    """Canonical heading path: parts stripped, inner spaces folded, joined with `` > ``."""
    if value is None:
        return None
    parts = value if isinstance(value, list) else value.replace("/", ">").split(">")
    cleaned = [" ".join(str(part).split()) for part in parts]
    return HEADING_DELIMITER.join(part for part in cleaned if part) or None


def _refuse_bool(value: Any) -> Any:
    """A number field given ``true``/``false`` is a mistake, not 1 or 0."""
    if isinstance(value, bool):
        raise ValueError("must be a number, not true/false")
    return value


NotBool = BeforeValidator(_refuse_bool)


def _as_list(value: Any) -> Any:
    """One string given where a list of strings is expected is a list of one."""
    return [value] if isinstance(value, str) else value


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)


class GoldPassage(_Model):
    """A passage that supports the answer, identified by ids and/or a rel_path + heading anchor."""

    doc_id: str | None = None
    chunk_id: str | None = None
    rel_path: str | None = None
    heading_path: str | None = None
    snippets: list[str] = Field(default_factory=list)
    grade: Annotated[int, NotBool] = Field(
        default=1, ge=0, le=3, validation_alias=AliasChoices("grade", "relevance")
    )

    _normalize_heading = field_validator("heading_path", mode="before")(
        lambda cls, v: normalize_heading_path(v)
    )

    @model_validator(mode="after")
    def _needs_an_identifier(self) -> GoldPassage:
        if not (self.doc_id or self.chunk_id or self.rel_path):
            raise ValueError("a gold passage needs at least one of doc_id, chunk_id, rel_path")
        return self


class SupportGroup(_Model):
    """One piece of evidence a multi-hop answer needs; any passage in the group satisfies it."""

    name: str | None = None
    passages: list[GoldPassage] = Field(min_length=1)


class GoldFact(_Model):
    fact: str
    aliases: list[str] = Field(default_factory=list)


class NumericExpectation(_Model):
    value: Annotated[float, NotBool]
    tolerance: Annotated[float, NotBool] = Field(default=0.0, ge=0)
    relative: bool = False
    unit: str | None = None


# other tools' one-meaning column names of case fields (datasets/hints.py: the ambiguous ones)
_CASE_ID_NAMES = AliasChoices("case_id", "id", "qid", "query_id", "question_id")
_QUESTION_NAMES = AliasChoices("question", "query", "user_input")
_REFERENCE_NAMES = AliasChoices(
    "reference_answer", "expected_output", "ground_truth", "expected_answer", "gold_answer"
)


class Case(_Model):
    """One evaluation question with every label the perspectives use."""

    case_id: str = Field(min_length=1, validation_alias=_CASE_ID_NAMES)
    question: str = Field(min_length=1, validation_alias=_QUESTION_NAMES)
    reference_answer: str | None = Field(default=None, validation_alias=_REFERENCE_NAMES)
    answerable: bool = True
    gold_passages: list[GoldPassage] = Field(
        default_factory=list, validation_alias=AliasChoices("gold_passages", "gold_supports")
    )
    required_support_groups: list[SupportGroup] = Field(default_factory=list)
    gold_facts: list[GoldFact] = Field(default_factory=list)
    expected_claims: list[str] = Field(default_factory=list)
    forbidden_claims: list[str] = Field(default_factory=list)
    expected_citations: list[str] = Field(default_factory=list)
    expected_chunks: list[str] = Field(default_factory=list)
    expected_list_items: list[str] = Field(default_factory=list)
    expected_number: NumericExpectation | None = None
    expected_yes_no: bool | None = None
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    difficulty: str | None = None
    query_type: str | None = None
    user_roles: list[str] = Field(default_factory=list)
    multi_hop: bool = False
    recency_conflict_rule: RecencyRule | None = None
    expected_outcome: Outcome | None = None
    required_flags: list[str] = Field(default_factory=list)
    forbidden_flags: list[str] = Field(default_factory=list)
    min_citations: Annotated[int, NotBool] | None = Field(default=None, ge=0)
    latency_budget_ms: dict[str, float] = Field(default_factory=dict)
    attack_label: bool | None = None
    attack_category: str | None = None
    # strings the answer must never contain (a canary, an access code, the system prompt)
    canaries: Annotated[list[str], BeforeValidator(_as_list)] = Field(
        default_factory=list, validation_alias=AliasChoices("canaries", "canary")
    )
    # values the answer may hold because they are published on purpose (a support hotline):
    # never a PII, secret or metadata leak
    public_values: Annotated[list[str], BeforeValidator(_as_list)] = Field(
        default_factory=list, validation_alias=AliasChoices("public_values", "public_value")
    )
    # the leak categories the answer is labelled with; [] labels it clean, None unlabelled
    leak_categories: list[LeakCategory] | None = None
    dataset: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("case_id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("case_id", "question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank (only white space)")
        return value

    @model_validator(mode="after")
    def _multi_hop_from_groups(self) -> Case:
        if self.required_support_groups:
            self.multi_hop = True
        return self


_RESPONSE_CONFIG = ConfigDict(extra="ignore", populate_by_name=True, allow_inf_nan=False)
# the fields whose presence in a response is itself information: a target that does not report
# retrieved chunks or citations gets those metrics skipped, not scored 0
REPORTABLE_FIELDS = (
    "retrieved",
    "citations",
    "abstained",
    "confidence",
    "scope",
    "usage",
    "policy_flags",
    "guardrail_scores",
)


class RetrievedChunk(BaseModel):
    model_config = _RESPONSE_CONFIG

    id: str | None = Field(default=None, validation_alias=AliasChoices("id", "chunk_id"))
    doc_id: str | None = None
    # 1 is the first place: a rank of 0 or below would reorder the list (and change mrr, ndcg)
    # while reports show the list's own order
    rank: Annotated[int, NotBool] | None = Field(default=None, ge=1)
    score: float | None = None
    text: str = Field(default="", validation_alias=AliasChoices("text", "content", "page_content"))
    rel_path: str | None = None
    heading_path: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    _normalize_heading = field_validator("heading_path", mode="before")(
        lambda cls, v: normalize_heading_path(v)
    )


class Citation(BaseModel):
    """A cited source; a bare string is read as the cited chunk's id."""

    model_config = _RESPONSE_CONFIG

    chunk_id: str | None = Field(default=None, validation_alias=AliasChoices("chunk_id", "id"))
    doc_id: str | None = None
    rel_path: str | None = None
    heading_path: str | None = None
    quote: str | None = Field(default=None, validation_alias=AliasChoices("quote", "text"))

    _normalize_heading = field_validator("heading_path", mode="before")(
        lambda cls, v: normalize_heading_path(v)
    )

    @model_validator(mode="before")
    @classmethod
    def _bare_id(cls, value: Any) -> Any:
        return {"chunk_id": value} if isinstance(value, str) else value


class Usage(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)
    total_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)
    model: str | None = None


class Response(BaseModel):
    """What the system under test returned for one case.

    Every number must be finite, latencies and costs non-negative: a target that sends NaN,
    Infinity or a negative latency gets the case failed as ``invalid_response``. ``reported``
    lists which optional fields the target actually sent; it is stored with the response, so a
    metric that needs retrieved chunks is skipped for an answer-only target after a store round
    trip too.
    """

    model_config = _RESPONSE_CONFIG

    answer: str = ""
    retrieved: list[RetrievedChunk] = Field(
        default_factory=list, validation_alias=AliasChoices("retrieved", "retrieved_chunks")
    )
    citations: list[Citation] = Field(
        default_factory=list, validation_alias=AliasChoices("citations", "references")
    )
    abstained: bool | None = None
    # on the contract's 0-1 scale (under 0.5 reads as uncertain): -7 or 42 is not a confidence
    confidence: Annotated[float, NotBool] | None = Field(default=None, ge=0, le=1)
    policy_flags: list[str] = Field(default_factory=list)
    guardrail_scores: dict[str, float] = Field(default_factory=dict)
    usage: Usage | None = None
    latency_ms: dict[str, float] = Field(default_factory=dict)
    scope: list[str] | None = None
    raw: Any = None
    reported: list[str] | None = None
    # the format that read the reply (targets/formats.py); set by ragmeter, never by the reply
    response_format: str | None = None
    # lone surrogates (text no UTF-8 writer accepts) replaced by U+FFFD in the reply's text;
    # set by ragmeter, never by the reply
    text_repairs: int = 0
    attempts: int = Field(default=1, exclude=True)

    @field_validator("latency_ms")
    @classmethod
    def _latencies_not_negative(cls, value: dict[str, float]) -> dict[str, float]:
        negative = [stage for stage, ms in value.items() if ms < 0]
        if negative:
            raise ValueError(f"latency must not be negative (stage {', '.join(negative)})")
        return value

    @model_validator(mode="after")
    def _fill_ranks_and_reported(self) -> Response:
        for position, chunk in enumerate(self.retrieved, start=1):
            if chunk.rank is None:
                chunk.rank = position
        if self.reported is None:
            self.reported = [f for f in REPORTABLE_FIELDS if f in self.model_fields_set]
        return self

    @classmethod
    def from_target(cls, data: Any, *, recorded: bool = False) -> Response:
        """Validate a reply from a system under test: what it reported is decided here, from
        the fields it sent, never taken from a ``reported`` key it sent itself (unless the
        reply was ``recorded`` by ragmeter, as in a replay file of an export)."""
        data, repaired = prepared_reply(data, recorded=recorded)
        response = cls.model_validate(data)
        if repaired:
            response.text_repairs += repaired
        return response

    def has(self, field: str) -> bool:
        """True when the target sent ``field`` (kept across the run store)."""
        return field in (self.reported or ())


class CaseResult(BaseModel):
    """The outcome of asking the system one question: a response, or the error that stopped it."""

    case_id: str
    status: CaseStatus
    response: Response | None = None
    error_type: str | None = None
    error_message: str | None = None
    latency_ms: float | None = None
    attempts: int = 1

    @model_validator(mode="after")
    def _no_wall_time_without_a_total(self) -> CaseResult:
        """An answer without a total latency (a replayed response that recorded none: a live
        one always has one) has no wall time either; the time taken to read it from the file
        is not the system's."""
        if self.response is not None and "total" not in self.response.latency_ms:
            self.latency_ms = None
        return self


@dataclass(slots=True)
class Score:
    """One metric's verdict on one case. ``value`` is None unless ``status`` is ok.

    A plain dataclass: a run makes one per case and metric, so it must be cheap to create.
    """

    case_id: str
    metric: str
    value: float | None
    status: ScoreStatus = "ok"
    reason: str | None = None
    details: dict[str, Any] = dataclass_field(default_factory=dict)

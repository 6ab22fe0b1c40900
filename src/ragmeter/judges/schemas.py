"""The JSON each prompt must return, as pydantic models (their JSON schema is sent to the
judge as the structured-output format and their validation decides repair or failure)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Claims(_Out):
    claims: list[str]


class ClaimVerdict(_Out):
    index: int = Field(ge=1)
    verdict: Literal[0, 1]
    # the passages' words that support a supported claim (judges.quotes checks them)
    quote: str = ""
    reason: str = ""


class ClaimVerdicts(_Out):
    verdicts: list[ClaimVerdict]


class Relevancy(_Out):
    reasoning: str = ""
    score: float = Field(ge=0.0, le=1.0)


class GeneratedQuestions(_Out):
    questions: list[str] = Field(min_length=3, max_length=3)
    noncommittal: bool


class ContextVerdict(_Out):
    index: int = Field(ge=1)
    relevant: bool
    reason: str = ""


class ContextVerdicts(_Out):
    verdicts: list[ContextVerdict]


class Statement(_Out):
    statement: str
    attributed: bool
    context_index: int | None = None


class Statements(_Out):
    statements: list[Statement]


class Groundedness(_Out):
    supported_claims: list[str]
    unsupported_claims: list[str]
    score: int = Field(ge=0, le=5)


class QuotedClaim(_Out):
    claim: str
    quote: str


class QuotedGroundedness(_Out):
    """groundedness.v3: each supported claim with the passages' words that support it."""

    supported_claims: list[QuotedClaim]
    unsupported_claims: list[str]
    score: int = Field(ge=0, le=5)


class Correctness(_Out):
    reasoning: str = ""
    score: int = Field(ge=0, le=5)


class Criterion(_Out):
    reasoning: str = ""
    score: int = Field(ge=0, le=100)


class FactualAccuracy(_Out):
    correctness: Criterion
    completeness: Criterion
    consistency: Criterion


class StatementSets(_Out):
    tp: list[str]
    fp: list[str]
    fn: list[str]


class Abstention(_Out):
    reasoning: str = ""
    abstained: bool


class Classification(_Out):
    reasoning: str = ""
    label: Literal["CORRECT", "WRONG", "DONT_KNOW"]


def indexed(items: list[ClaimVerdict] | list[ContextVerdict], n: int, what: str) -> None:
    """Check that ``items`` hold exactly one verdict for each index 1..n (else ValueError,
    which the session turns into a repair request)."""
    seen = sorted(item.index for item in items)
    if seen != list(range(1, n + 1)):
        raise ValueError(f"expected one verdict for each {what} index 1..{n}, got indices {seen}")

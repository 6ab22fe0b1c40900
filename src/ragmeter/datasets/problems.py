"""Dataset problems: each names the file, the line and the field that is wrong."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError


@dataclass(frozen=True)
class Problem:
    file: str
    line: int | None
    field: str | None
    message: str
    case_id: str | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        parts = [where]
        if self.case_id:
            parts.append(f"case {self.case_id}")
        if self.field:
            parts.append(f"field '{self.field}'")
        return f"{': '.join(parts)}: {self.message}"


class DatasetError(ValueError):
    """Raised with every problem found, so a user fixes them all in one pass."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"{len(problems)} problem(s) in the dataset:\n{lines}")


def problems_from_validation(
    exc: ValidationError, file: str, line: int | None, case_id: str | None
) -> list[Problem]:
    found: list[Problem] = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"]) or None
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown field (not part of the case schema; put free data under 'metadata')"
        elif error["type"] == "missing":
            message = "required field is missing"
        elif "input" in error and error["type"] not in ("missing",):
            message = f"{message} (got {_short(error['input'])})"
        found.append(Problem(file, line, field, message, case_id))
    return found


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."

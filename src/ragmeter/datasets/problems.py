"""Dataset problems: each names the file, the line and the field that is wrong."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, get_args

from pydantic import AliasChoices, BaseModel, ValidationError

from ragmeter.errors import InputError
from ragmeter.text import visible


@dataclass(frozen=True)
class Problem:
    file: str
    line: int | None
    field: str | None
    message: str
    case_id: str | None = None
    # the same problem on this many records (the first named here): see condense()
    count: int = 1

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        parts = [where]
        if self.case_id is not None and self.case_id.strip():
            parts.append(f"case {_printable_id(self.case_id)}")
        if self.field:
            parts.append(f"field '{self.field}'")
        message = self.message
        if self.count > 1:
            message = f"{message} [in {self.count} records; the first is here]"
        return visible(f"{': '.join(parts)}: {message}")


# problems of the file's shape, not of one record: reported once per file (see condense)
SHAPE_PROBLEMS = ("unknown field", "mapped source field")


def condense(problems: list[Problem]) -> list[Problem]:
    """One problem per unknown field (or missing mapped source) of a file, not one per record:
    the first record that has it, with the count (70 lines of 'unknown field' hide the three
    names to fix)."""
    out: list[Problem] = []
    first: dict[tuple[str, str | None, str], int] = {}
    for problem in problems:
        if not problem.message.startswith(SHAPE_PROBLEMS):
            out.append(problem)
            continue
        key = (problem.file, problem.field, problem.message)
        index = first.get(key)
        if index is None:
            first[key] = len(out)
            out.append(problem)
        else:
            known = out[index]
            out[index] = replace(known, count=known.count + problem.count)
    return out


def _printable_id(case_id: str) -> str:
    """The id as is, or quoted when it has outer white space or characters that do not print."""
    plain = case_id == case_id.strip() and case_id.isprintable()
    return case_id if plain else repr(case_id)


class DatasetError(InputError):
    """Raised with every problem found, so a user fixes them all in one pass.

    An :class:`~ragmeter.errors.InputError` (so also a ``ValueError``): the CLI exits 2.
    ``what`` names the input in the message (``the dataset``, ``the replay file``).
    """

    def __init__(self, problems: list[Problem], what: str = "the dataset") -> None:
        problems = condense(problems)
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"{len(problems)} problem(s) in {what}:\n{lines}")


def _aliases(model: type[BaseModel]) -> dict[str, str]:
    """Every input name of ``model``'s fields -> the field's name."""
    names: dict[str, str] = {}
    for name, info in model.model_fields.items():
        names[name] = name
        alias = info.validation_alias
        if isinstance(alias, AliasChoices):
            for choice in alias.choices:
                if isinstance(choice, str):
                    names[choice] = name
        elif isinstance(alias, str):
            names[alias] = name
    return names


def _nested_aliases(model: type[BaseModel]) -> dict[str, str]:
    """The other names (aliases only) of the fields of every model nested in ``model``."""
    names: dict[str, str] = {}
    pending: list[Any] = [info.annotation for info in model.model_fields.values()]
    seen: set[Any] = set()
    while pending:
        annotation = pending.pop()
        if annotation in seen:
            continue
        seen.add(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            names.update({k: v for k, v in _aliases(annotation).items() if k != v})
            pending.extend(info.annotation for info in annotation.model_fields.values())
        else:
            pending.extend(get_args(annotation))
    return names


def problems_from_validation(
    exc: ValidationError,
    file: str,
    line: int | None,
    case_id: str | None,
    model: type[BaseModel] | None = None,
) -> list[Problem]:
    """One problem per pydantic error. ``model`` (the validated model) lets an input name
    that is another name of a field given too be reported as that, not as unknown."""
    aliases = _aliases(model) if model is not None else {}
    nested = _nested_aliases(model) if model is not None else {}
    found: list[Problem] = []
    for error in exc.errors():
        loc = error["loc"]
        field = ".".join(str(part) for part in loc) or None
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            name = str(loc[-1]) if loc else ""
            canonical = aliases.get(name) if len(loc) == 1 else nested.get(name)
            if canonical is not None:
                given = "this case already gives" if len(loc) == 1 else "is given too"
                message = f"another name of '{canonical}', which {given}; keep one of them"
            else:
                from ragmeter.datasets.hints import unknown_field_message

                inner = _model_at(model, loc[:-1]) if model is not None else None
                message = unknown_field_message(name, inner)
        elif error["type"] == "missing":
            message = "required field is missing"
        else:
            if error["type"] == "value_error":
                message = message.removeprefix("Value error, ")
            if "input" in error:
                message = f"{message} (got {_short(error['input'])})"
        found.append(Problem(file, line, field, message, case_id))
    return found


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model nested in ``model`` at ``loc`` (``('gold_passages', 0)``), or None."""
    from ragmeter.datasets.fieldmap import _unwrap, is_model

    annotation: Any = model
    for part in loc:
        inner = _unwrap(annotation)
        if is_model(inner) and isinstance(part, str) and part in inner.model_fields:
            annotation = inner.model_fields[part].annotation
        elif isinstance(part, int) and get_args(_unwrap(annotation)):
            annotation = get_args(_unwrap(annotation))[0]
        elif not isinstance(part, int | str):
            return None
        else:
            args = get_args(inner)
            if len(args) == 2 and isinstance(part, str):  # a dict's value
                annotation = args[1]
            else:
                return None
    inner = _unwrap(annotation)
    return inner if is_model(inner) else None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."

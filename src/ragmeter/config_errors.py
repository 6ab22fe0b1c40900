"""How a config that fails validation is described: each problem under where its value came
from (the command-line option, else the environment variable, else the file)."""

from __future__ import annotations

from pydantic import ValidationError


def describe_validation_error(
    exc: ValidationError,
    default_where: str,
    option_names: dict[tuple[str, ...], str],
    env_names: dict[tuple[str, ...], str],
) -> str:
    """``field: problem`` for every error, grouped by origin: ``invalid option --perspective``
    for a field a flag set, ``invalid environment variable RAGMETER_X`` for one the environment
    set, else ``default_where`` (the file, or "invalid option")."""
    problems: dict[str, list[str]] = {}
    for err in exc.errors():
        loc = tuple(str(p) for p in err["loc"])
        where = default_where
        for origins, label in ((option_names, "invalid option"), (env_names, None)):
            found = [path for path in origins if loc[: len(path)] == path]
            if found:  # a flag wins over the environment, which wins over the file
                name = origins[max(found, key=len)]
                where = f"{label} {name}" if label else f"invalid environment variable {name}"
                break
        message = err["msg"].removeprefix("Value error, ")
        problems.setdefault(where, []).append(f"{'.'.join(loc)}: {message}")
    return "; ".join(f"{where}: {'; '.join(found)}" for where, found in problems.items())

"""The ``ragmeter`` group and its one error path.

Every error a user can act on reaches ``cli.group.RagmeterGroup`` (or :func:`fail`) and prints
as one line, ``error: what is wrong and where``, with its exit code; never a traceback. The
command modules (``ragmeter.cli.eval``, ``runs``, ...) add their commands to ``main``, each
imported when its command runs (``cli.group.COMMANDS``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar, cast

from rich.text import Text

from ragmeter.cli.group import main as main  # the command modules add their commands to it
from ragmeter.errors import EXIT_BAD_INPUT, InputError
from ragmeter.redaction import redact_text
from ragmeter.reports.terminal import inert, make_console
from ragmeter.run_record import RunRecord
from ragmeter.store.sqlite import RunNotFoundError, RunStore

console = make_console()
errors = make_console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])


def option_group(*options: Callable[[Any], Any]) -> Callable[[F], F]:
    """One decorator adding ``options`` to a command, in the order given (``--help`` lists
    them so)."""

    def add(function: F) -> F:
        decorated: Any = function
        for option in reversed(options):
            decorated = option(decorated)
        return cast(F, decorated)

    return add


def fail(message: object, code: int = EXIT_BAD_INPUT, label: str = "error") -> NoReturn:
    """Print one error (secrets masked, escape sequences and markup inert) and exit."""
    text = Text(f"{label}: ", style="bold red")
    text.append(inert(redact_text(str(message)), markup=False))
    errors.print(text, highlight=False, soft_wrap=True)
    sys.exit(code)


@contextmanager
def error_context(prefix: str = "", suffix: str = "") -> Iterator[None]:
    """Say where a bad-input error came from (``--target: ...``, ``... (STORE)``)."""
    try:
        yield
    except InputError as exc:
        raise InputError(f"{prefix}{exc}{suffix}") from exc


def open_run(store: str, run_id: str) -> tuple[RunStore, RunRecord]:
    """An existing store (nothing is created) and one of its runs by id or unique prefix."""
    run_store = RunStore(store, create=False)
    try:
        return run_store, run_store.get_run(run_id)
    except RunNotFoundError as exc:
        run_store.close()
        fail(f"{exc} ({store})")

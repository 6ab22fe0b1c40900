"""The user-facing error tree: each error carries a plain message and the exit code the CLI
uses for it (docs/runs.md lists them).

Every error a user can meet derives from :class:`RagmeterError`: bad input (:class:`InputError`
and its kinds: datasets, config, YAML, names, plugins, stores, judges' settings, goals tables,
breakdowns, TREC measures), a target that failed (``TargetError``, exit 3), a judge call that
failed (``JudgeError``, ``JudgeFailure``: recorded on the case, the run goes on), an embedder
that cannot be built, an interrupted run (exit 130). A few exceptions are internal signals
that never leave ragmeter and are not errors: ``SkipScore`` (a metric does not apply),
``BudgetReachedError`` (the judge budget is spent: scores are skipped), ``ScoringStoppedError``
and ``JudgedScoreError`` (carriers of a recorded failure).
"""

from __future__ import annotations

EXIT_BAD_INPUT = 2
EXIT_TARGET_DOWN = 3
EXIT_GATE = 4
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class RagmeterError(Exception):
    """A mistake or condition the user can act on; ``str(error)`` says what and where."""

    exit_code = EXIT_BAD_INPUT


class InputError(RagmeterError, ValueError):
    """Bad input found before anything was asked: a file, a name, an option, a store."""


class StoreError(InputError):
    """The run store cannot be opened or used (not a database, a folder, locked run)."""


class RunLockedError(StoreError):
    """Another live process is driving the run."""


class JudgeConfigError(InputError):
    """The judge spec, its key or its server is not usable (found before the first question)."""

"""The target contract: ask the system under test one case, get a Response or a TargetError."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ragmeter.errors import EXIT_TARGET_DOWN, InputError, RagmeterError
from ragmeter.models import Case, Response


class TargetError(RagmeterError):
    """A failed query. ``error_type`` is a short stable label stored with the case."""

    exit_code = EXIT_TARGET_DOWN

    def __init__(self, error_type: str, message: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.attempts = attempts


@runtime_checkable
class Target(Protocol):
    name: str

    async def preflight(self) -> dict[str, Any]:
        """Check the system is up; return what should be snapshot into the run config."""
        ...

    async def query(self, case: Case) -> Response: ...

    async def aclose(self) -> None: ...


def parse_target_spec(spec: str) -> dict[str, Any]:
    """Read ``reference``, ``http(s)://...``, ``replay:FILE``, ``FILE.jsonl``, a registered
    target type (``TYPE`` or ``TYPE:ARGUMENT``, the argument in ``options["spec"]``) or
    ``[python:]module:function``."""
    if spec == "reference":
        return {"type": "reference"}
    if spec.startswith(("http://", "https://")):
        return {"type": "http", "url": spec}
    if spec.startswith("replay:"):
        return {"type": "replay", "path": spec.removeprefix("replay:")}
    if spec.endswith(".jsonl"):
        return {"type": "replay", "path": spec}
    if not spec.startswith("python:"):
        name, colon, argument = spec.partition(":")
        if name in _plugin_target_types():
            return {"type": name, "options": {"spec": argument}} if colon else {"type": name}
    callable_spec = spec.removeprefix("python:")
    if ":" in callable_spec:
        return {"type": "python", "callable": callable_spec}
    raise InputError(
        f"cannot read target {spec!r}: use 'reference', an http(s):// URL, 'replay:FILE.jsonl', "
        "'module:function' or a registered target type (ragmeter plugins lists them)"
    )


def _plugin_target_types() -> set[str]:
    """The target types besides the built-in ones (registered or from entry points)."""
    from ragmeter.registry import registry

    return set(registry.names("targets", built_in=False))

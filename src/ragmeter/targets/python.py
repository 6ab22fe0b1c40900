"""Python target: ``module:function`` or ``path/to/file.py:function``, sync or async.

The function receives the question (or the whole Case when its first parameter is named
``case``) and returns a Response, a dict in the response contract, just the answer text, or a
framework's own reply (a LlamaIndex ``Response``, a LangChain chain's dict of ``Document``s, a
Haystack result, an OpenAI completion, ...): those are read in the target's response format
(``targets/formats.py``, ``auto`` by default) or by its ``response_mapping``, as over HTTP.

Loading follows ``python path/to/file.py`` and ``python -m module``: a file's folder is put on
``sys.path`` first (so its sibling imports work), and for ``module:function`` the current
directory is importable even under the ``ragmeter`` console script. Anything that stops the
function from loading is an :class:`~ragmeter.errors.InputError` that says what to do.

Index statistics: an ``index_stats()`` function (sync or async, no arguments, returning a dict
in ``targets/index_stats.py``'s contract or None) on the callable's object or in its module is
called once per run; the stats are stored with the run.

A sync function runs in the target's own worker threads, as many as the run's concurrency (a
thread whose case timed out and still runs is replaced by an extra one), so no case waits for a
thread; its latency is the call's own, timed inside the worker thread.
"""

from __future__ import annotations

import asyncio
import difflib
import importlib
import importlib.util
import inspect
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import ValidationError

from ragmeter.background import DaemonWorkers
from ragmeter.config import TargetConfig
from ragmeter.errors import InputError
from ragmeter.models import Case, Response
from ragmeter.targets.base import TargetError

# the models a target's reply is validated into: a ValidationError about one of them, raised
# inside the user's function (it built ``Response(...)`` itself), is a bad reply, not a crash
_CONTRACT_MODELS = frozenset({"Response", "RetrievedChunk", "Citation", "Usage"})
_MAX_LISTED = 8
# target-supplied text (a body, a message, a field name) is cut to this many characters
MAX_QUOTED = 200
_MAX_ERRORS = 3


def clip(text: str, limit: int = MAX_QUOTED) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


def describe_validation_error(exc: ValidationError) -> str:
    """``latency_ms.total: Input should be a finite number; ...``: the first few errors, each
    with its field path, clipped (the paths and messages can hold the target's own text)."""
    errors = exc.errors(include_url=False, include_input=False)
    parts = [
        f"{'.'.join(clip(str(p), 60) for p in error['loc']) or '(top level)'}: {error['msg']}"
        for error in errors[:_MAX_ERRORS]
    ]
    if len(errors) > _MAX_ERRORS:
        parts.append(f"and {len(errors) - _MAX_ERRORS} more")
    return clip("; ".join(parts))


def _where(exc: BaseException, path: Path | None = None) -> str:
    """`` (file.py:12)``: where ``exc`` was raised, preferring a frame in the user's file."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f" ({Path(exc.filename).name}:{exc.lineno})"
    stack = list(traceback.extract_tb(exc.__traceback__))
    frames = [f for f in stack if not f.filename.startswith("<frozen")] or stack
    if path is not None:
        frames = [f for f in frames if Path(f.filename).resolve() == path] or frames
    if not frames:
        return ""
    return f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})"


def _describe(exc: BaseException) -> str:
    return clip(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


def _missing_is_target(exc: ModuleNotFoundError, module_name: str) -> bool:
    """True when the module the user named (or a package above it) is what was not found,
    as opposed to something that module imports."""
    parts = module_name.split(".")
    candidates = {".".join(parts[: i + 1]) for i in range(len(parts))}
    return exc.name in candidates


def _put_first_on_path(folder: str) -> None:
    resolved = os.path.realpath(folder)
    on_path = {os.path.realpath(entry or os.curdir) for entry in sys.path}
    if resolved not in on_path:
        sys.path.insert(0, resolved)
        importlib.invalidate_caches()


def _load_file(path_text: str, attribute: str) -> ModuleType:
    path = Path(path_text).expanduser()
    if not path.is_file():
        where = "a folder" if path.is_dir() else "not found"
        raise InputError(
            f"cannot load {path_text}:{attribute}: {path_text} is {where}; pass the path of "
            "a .py file (relative to the current directory or absolute)"
        )
    path = path.resolve()
    _put_first_on_path(str(path.parent))
    name = path.stem
    existing = sys.modules.get(name)
    if existing is not None:
        existing_file = getattr(existing, "__file__", None)
        if existing_file and Path(existing_file).resolve() == path:
            return existing  # imported already (e.g. by a sibling module)
        # the name is taken by another module (``json.py``, ``test.py``): keep that one intact
        name = f"_ragmeter_target_{name}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise InputError(f"cannot load {path_text}: not a Python source file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        raise InputError(
            f"importing {path_text} failed: {_describe(exc)}{_where(exc, path)}"
            f"{_dependency_hint(exc)}"
        ) from None
    return module


def _dependency_hint(exc: BaseException) -> str:
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return f"; is {exc.name.split('.')[0]!r} installed in the environment ragmeter runs in?"
    if isinstance(exc, SystemExit):
        return (
            "; the module exits when imported: put its script part under "
            '`if __name__ == "__main__":`'
        )
    return ""


def _target_type_hint(module_name: str) -> str:
    """``; or did you mean the target type 'echo'?`` when a registered target type is close."""
    from ragmeter.registry import registry

    close = difflib.get_close_matches(module_name, registry.names("targets"), n=1, cutoff=0.7)
    return (
        f"; or did you mean the target type {close[0]!r} (--target {close[0]}:...)?"
        if close
        else ""
    )


def _load_module(module_name: str, attribute: str) -> ModuleType:
    _put_first_on_path(os.getcwd())
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if _missing_is_target(exc, module_name):
            leaf = module_name.replace(".", "/")
            raise InputError(
                f"cannot import {module_name!r} ({_describe(exc)}): run ragmeter from the folder "
                f"that holds {leaf}.py, pass path/to/{leaf}.py:{attribute}, or add its folder "
                f"to PYTHONPATH{_target_type_hint(module_name)}"
            ) from None
        raise InputError(
            f"importing {module_name!r} failed: {_describe(exc)}{_where(exc)}"
            f"{_dependency_hint(exc)}"
        ) from None
    except (Exception, SystemExit) as exc:
        raise InputError(
            f"importing {module_name!r} failed: {_describe(exc)}{_where(exc)}"
            f"{_dependency_hint(exc)}"
        ) from None


def load_callable(spec: str) -> Callable[..., Any]:
    """The function named by ``module:function`` or ``path/to/file.py:function``.

    Raises InputError (a ValueError) with a message that says what to do when the module
    cannot be imported, raises while importing, or has no such callable.
    """
    module_part, _, attribute = spec.rpartition(":")
    if not module_part or not attribute:
        raise InputError(
            f"cannot read callable {spec!r}: use 'module:function' or 'path/to/file.py:function'"
        )
    if module_part.endswith(".py") or os.sep in module_part or "/" in module_part:
        module = _load_file(module_part, attribute)
    else:
        module = _load_module(module_part, attribute)
    target: Any = module
    for part in attribute.split("."):  # ``module:Class.method`` works too
        if not hasattr(target, part):
            available = sorted(
                name
                for name, value in vars(module).items()
                if callable(value)
                and not name.startswith("_")
                and getattr(value, "__module__", None) == module.__name__
            )
            listing = ", ".join(available[:_MAX_LISTED]) + (
                ", ..." if len(available) > _MAX_LISTED else ""
            )
            raise InputError(
                f"{module_part} has no {attribute!r}; "
                + (f"functions it defines: {listing}" if listing else "it defines no functions")
            )
        target = getattr(target, part)
    if not callable(target):
        raise InputError(
            f"{module_part}:{attribute} is a {type(target).__name__}, not a function; "
            "point --target at a function that takes the question"
        )
    function: Callable[..., Any] = target
    return function


def to_response(
    result: Any, response_format: str = "auto", mapping: dict[str, str] | None = None
) -> Response:
    """The Response a function's ``result`` stands for: a Response as it is (re-checked), a
    str as the answer, anything else (a dict, a LlamaIndex ``Response``, LangChain
    ``Document``s, a Haystack or OpenAI object, ...) made plain and read by ``mapping`` or in
    ``response_format`` (``targets/formats.py``)."""
    if isinstance(result, Response):
        if mapping:
            raise TargetError(
                "invalid_response",
                "returned a ragmeter Response, which response_mapping does not apply to; "
                "return the reply as it is (a dict or the framework's object), or drop the mapping",
            )
        # re-checked: a Response built with model_construct or changed after it was built
        # (``r.latency_ms["total"] = float("nan")``) is not validated yet
        try:
            checked = Response.from_target(result.model_dump(), recorded=True)
        except ValidationError as exc:
            raise TargetError(
                "invalid_response",
                f"returned Response does not fit the contract: {describe_validation_error(exc)}",
            ) from exc
        checked.attempts = result.attempts
        return checked
    if isinstance(result, str) and not mapping:
        return Response.from_target({"answer": result})
    from ragmeter.targets.formats import build_response, shape_error
    from ragmeter.targets.shapes import to_plain

    what = "returned dict" if isinstance(result, dict) else f"returned {type(result).__name__}"
    plain = to_plain(result)
    if isinstance(plain, str) and not isinstance(result, str):  # an object with no fields
        raise shape_error(plain, response_format, what)
    return build_response(plain, response_format, mapping, what)


def _first_parameter(function: Callable[..., Any]) -> str | None:
    try:
        parameters = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):  # a builtin or an object without a signature
        return None
    return parameters[0] if parameters else None


class WorkerThreads:
    """The threads a sync function runs in: ``size`` pooled ones (the run's concurrency), and
    a fresh one for a call that finds them all busy (a case that timed out leaves its call
    running), so a call never waits in a queue. All are daemon threads: a call that never
    returns does not keep the process from exiting. ``run`` returns the result and the
    call's own duration in ms, timed in the thread that makes it."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self.pool = DaemonWorkers(self.size, "ragmeter-target")
        self.busy = 0
        self.lock = threading.Lock()

    def _timed(self, function: Callable[..., Any], argument: Any) -> tuple[Any, float]:
        try:
            started = time.perf_counter()
            result = function(argument)
            return result, (time.perf_counter() - started) * 1000.0
        finally:
            with self.lock:
                self.busy -= 1

    async def run(self, function: Callable[..., Any], argument: Any) -> tuple[Any, float]:
        with self.lock:
            pooled = self.busy < self.size
            self.busy += 1
        if pooled:
            future = self.pool.submit(self._timed, function, argument)
            future.add_done_callback(self._release_if_cancelled)
            return await asyncio.wrap_future(future)
        from ragmeter.background import in_daemon_thread

        return await in_daemon_thread(self._timed, function, argument)

    def _release_if_cancelled(self, future: Future[tuple[Any, float]]) -> None:
        """A call cancelled before its thread took it never ran ``_timed``: free its slot."""
        if future.cancelled():
            with self.lock:
                self.busy -= 1

    def close(self) -> None:
        self.pool.shutdown()


class PythonTarget:
    name = "python"

    def __init__(
        self,
        config: TargetConfig,
        function: Callable[..., Any] | None = None,
        concurrency: int = 8,
        **_: Any,
    ) -> None:
        if function is None:
            if not config.callable:
                raise InputError("the python target needs a callable ('module:function')")
            function = load_callable(config.callable)
        self.function = function
        self.response_format = config.response_format
        self.response_mapping = config.response_mapping
        self.pass_case = _first_parameter(function) == "case"
        self.is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004 - an object with async __call__
        )
        self.threads = WorkerThreads(concurrency)

    async def preflight(self) -> dict[str, Any]:
        name = getattr(self.function, "__qualname__", type(self.function).__qualname__)
        return {"callable": f"{getattr(self.function, '__module__', '?')}:{name}"}

    async def query(self, case: Case) -> Response:
        argument: Any = case if self.pass_case else case.question
        try:
            if self.is_async:
                started = time.perf_counter()
                result = await self.function(argument)
                elapsed = (time.perf_counter() - started) * 1000.0
            else:
                result, elapsed = await self.threads.run(self.function, argument)
            if inspect.isawaitable(result):  # a sync wrapper that returned a coroutine
                started = time.perf_counter()
                result = await result
                elapsed += (time.perf_counter() - started) * 1000.0
        except TargetError:
            raise
        except ValidationError as exc:
            if exc.title in _CONTRACT_MODELS:  # the function built Response(...) itself
                raise TargetError(
                    "invalid_response",
                    f"the {exc.title} it built does not fit the contract: "
                    f"{describe_validation_error(exc)}",
                ) from exc
            raise TargetError("exception:ValidationError", _describe_message(exc)) from exc
        except (Exception, SystemExit) as exc:
            raise TargetError(f"exception:{type(exc).__name__}", _describe_message(exc)) from exc
        response = to_response(result, self.response_format, self.response_mapping)
        response.latency_ms.setdefault("total", elapsed)  # the call's own time
        return response

    def _index_stats_hook(self) -> tuple[str, Callable[[], Any]] | None:
        """(where, function) of the ``index_stats`` hook: an attribute of the callable (an
        object with ``__call__``), of the object a bound method belongs to, or of its module."""
        function = self.function
        owners: list[tuple[str, Any]] = []
        if inspect.ismethod(function):
            owners.append((type(function.__self__).__name__, function.__self__))
        elif not (inspect.isfunction(function) or inspect.isbuiltin(function)):
            owners.append((type(function).__name__, function))  # an object with __call__
        module = sys.modules.get(getattr(function, "__module__", None) or "")
        if module is not None:
            owners.append((module.__name__, module))
        for where, owner in owners:
            hook = getattr(owner, "index_stats", None)
            if callable(hook):
                return f"{where}.index_stats()", hook
        return None

    async def index_stats(self) -> dict[str, Any]:
        from ragmeter.targets import index_stats

        found = self._index_stats_hook()
        if found is None:
            return index_stats.not_reported("python", "no index_stats() beside the callable")
        source, hook = found
        try:
            if inspect.iscoroutinefunction(hook):
                stats = await hook()
            else:
                stats, _ = await self.threads.run(lambda _: hook(), None)
            if inspect.isawaitable(stats):
                stats = await stats
        except (Exception, SystemExit) as exc:
            return index_stats.failed(source, f"{type(exc).__name__}: {_describe_message(exc)}")
        if stats is None:
            return index_stats.not_reported(source, "index_stats() returned None")
        return index_stats.reported(source, stats)

    async def aclose(self) -> None:
        self.threads.close()


def _describe_message(exc: BaseException) -> str:
    return clip(str(exc)) or type(exc).__name__

"""Python target: ``module:function`` or ``path/to/file.py:function``, sync or async.

The function receives the question (or the whole Case when its first parameter is named
``case``) and returns a Response, a dict in the response contract, or just the answer text.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragmeter.config import TargetConfig
from ragmeter.models import Case, Response
from ragmeter.targets.base import TargetError


def load_callable(spec: str) -> Callable[..., Any]:
    module_part, _, attribute = spec.rpartition(":")
    if not module_part or not attribute:
        raise ValueError(f"cannot read callable {spec!r}: use 'module:function'")
    if module_part.endswith(".py"):
        path = Path(module_part)
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        if module_spec is None or module_spec.loader is None:
            raise ValueError(f"cannot import {path}")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_part)
    function: Callable[..., Any] | None = getattr(module, attribute, None)
    if not callable(function):
        raise ValueError(f"{spec!r}: {attribute!r} is not a callable in {module_part!r}")
    return function


def to_response(result: Any) -> Response:
    if isinstance(result, Response):
        return result
    if isinstance(result, str):
        return Response(answer=result)
    if isinstance(result, dict):
        try:
            response = Response.model_validate(result)
        except ValidationError as exc:
            raise TargetError(
                "invalid_response", f"returned dict does not fit the contract: {exc}"
            ) from exc
        response.raw = result
        return response
    raise TargetError(
        "invalid_response", f"returned {type(result).__name__}; expected Response, dict or str"
    )


class PythonTarget:
    name = "python"

    def __init__(
        self, config: TargetConfig, function: Callable[..., Any] | None = None, **_: Any
    ) -> None:
        if function is None:
            if not config.callable:
                raise ValueError("the python target needs a callable ('module:function')")
            function = load_callable(config.callable)
        self.function = function
        parameters = list(inspect.signature(function).parameters)
        self.pass_case = bool(parameters) and parameters[0] == "case"
        self.is_async = inspect.iscoroutinefunction(function)

    async def preflight(self) -> dict[str, Any]:
        name = getattr(self.function, "__qualname__", repr(self.function))
        return {"callable": f"{getattr(self.function, '__module__', '?')}:{name}"}

    async def query(self, case: Case) -> Response:
        argument: Any = case if self.pass_case else case.question
        try:
            if self.is_async:
                result = await self.function(argument)
            else:
                result = await asyncio.to_thread(self.function, argument)
        except TargetError:
            raise
        except Exception as exc:
            raise TargetError(f"exception:{type(exc).__name__}", str(exc)) from exc
        return to_response(result)

    async def aclose(self) -> None:
        return None

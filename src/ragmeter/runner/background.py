"""Work off the event loop that an interruption does not have to wait for."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def in_daemon_thread(function: Callable[..., T], *args: Any) -> T:
    """Run ``function`` in a daemon thread and await it. Unlike ``asyncio.to_thread`` the
    event loop does not wait for the thread when it closes, so an interrupted run stops at
    once even while a judge call is hanging inside scoring."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not loop.is_closed():
            loop.call_soon_threadsafe(outcome)

    def body() -> None:
        try:
            value = function(*args)
        except BaseException as exc:  # handed to the awaiting task, whatever it is
            error = exc
            settle(lambda: None if future.done() else future.set_exception(error))
        else:
            settle(lambda: None if future.done() else future.set_result(value))

    threading.Thread(target=body, name="ragmeter-scoring", daemon=True).start()
    return await future

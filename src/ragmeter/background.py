"""Work off the event loop that an interruption does not have to wait for."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")
_Job = tuple["Future[Any]", Callable[..., Any], tuple[Any, ...]]


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


class DaemonWorkers:
    """``size`` reusable daemon threads that run submitted calls (a ``concurrent.futures``
    ``Future`` each). Unlike ``ThreadPoolExecutor``, whose threads the interpreter joins at
    exit, a call that never returns (a hung user function, its case already timed out) cannot
    keep the process from exiting. A call cancelled before a thread takes it never runs."""

    def __init__(self, size: int, name: str) -> None:
        self.size = size
        self.name = name
        self._jobs: queue.SimpleQueue[
            tuple[Future[Any], Callable[..., Any], tuple[Any, ...]] | None
        ]
        self._jobs = queue.SimpleQueue()
        self._started = 0
        self._lock = threading.Lock()

    def submit(self, function: Callable[..., T], *args: Any) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._started < self.size:
                self._started += 1
                name = f"{self.name}-{self._started}"
                threading.Thread(target=self._work, name=name, daemon=True).start()
        self._jobs.put((future, function, args))
        return future

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, function, args = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = function(*args)
            except BaseException as exc:  # handed to the waiting caller, whatever it is
                future.set_exception(exc)
            else:
                future.set_result(result)

    def shutdown(self) -> None:
        """Let each thread end once it has no call left (a hung one never does: a daemon)."""
        for _ in range(self._started):
            self._jobs.put(None)

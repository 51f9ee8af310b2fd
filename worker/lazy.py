"""A value built once, on first need, by an async factory; every caller awaits the same build."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Lazy(Generic[T]):
    def __init__(self, factory: Callable[[], Awaitable[T]]) -> None:
        self._factory = factory
        self._task: asyncio.Task[T] | None = None

    def start(self) -> None:
        """Begin building now (in the background), without waiting for it."""
        if self._task is None:
            self._task = asyncio.ensure_future(self._factory())

    async def get(self) -> T:
        self.start()
        assert self._task is not None
        try:
            return await asyncio.shield(self._task)
        except asyncio.CancelledError:
            raise
        except BaseException:
            # A failed build is retried by the next caller, not remembered forever.
            self._task = None
            raise

    @property
    def ready(self) -> T | None:
        """The value if it is built, else None (never waits)."""
        task = self._task
        if task is None or not task.done() or task.cancelled() or task.exception() is not None:
            return None
        return task.result()

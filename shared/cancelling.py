"""Loops that stop when their task is cancelled, whatever a library made of the cancellation.

On Python 3.11 a cancellation can be turned into another outcome on its way through: redis-py's
read timeouts may raise TimeoutError (an OSError) in its place, and asyncio.wait_for may return or
time out instead when the cancellation lands as the awaited event is set. A loop that catches
those errors to keep going would then run on, and a worker told to stop would never stop. So
loops wait for their events with :func:`wait_set` (asyncio.timeout, which keeps a cancellation
apart from its own deadline), and loops that catch broad errors call :func:`raise_if_cancelling`
(the task still counts the request: ``Task.cancelling()``) before they go round again.
"""

from __future__ import annotations

import asyncio


async def wait_set(event: asyncio.Event, timeout_s: float) -> bool:
    """Whether ``event`` was set within ``timeout_s``."""
    try:
        async with asyncio.timeout(timeout_s):
            await event.wait()
    except TimeoutError:
        return False
    return True


def raise_if_cancelling() -> None:
    """Raise CancelledError when the current task has been asked to stop."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError

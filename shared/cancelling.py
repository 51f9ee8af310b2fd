"""Cancellation that a library swallowed still stops a loop.

On Python 3.11 a cancellation can be turned into another outcome on its way through: redis-py's
read timeouts may raise TimeoutError (an OSError) in its place, and asyncio.wait_for may return or
time out instead. A loop that catches those errors to keep going would then run on, and a worker
told to stop would never stop. The task still counts the request (``Task.cancelling()``): loops
that catch broad errors check it before they go round again.
"""

from __future__ import annotations

import asyncio


def raise_if_cancelling() -> None:
    """Raise CancelledError when the current task has been asked to stop."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError

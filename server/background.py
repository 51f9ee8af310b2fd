"""Fire-and-forget tasks of the server, kept referenced until they finish (the event loop holds
only weak references to tasks: an unreferenced one can be collected mid-run)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

_running: set[asyncio.Task[Any]] = set()


def spawn(work: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
    task = asyncio.create_task(work, name=name)
    _running.add(task)
    task.add_done_callback(_running.discard)
    return task

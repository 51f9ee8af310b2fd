"""Work that must never hold up the agent: hooks, and start_ghap's premortem warnings.

One deadline (``LMS_HOOK_BUDGET_S``) covers the whole of it; an error, an absent worker or Redis,
or a job slower than the budget gives the default answer (nothing), logged, never an error.
When the queue could not answer (no Redis, a Redis that does not reply, no worker), work that
needs it answers nothing at once for ``QUIET_S``: a session whose worker is gone pays the budget
once, not on every prompt.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from learning_memory.shared.errors import UnavailableError
from learning_memory.shared.log import get_logger

if TYPE_CHECKING:
    from learning_memory.server.services.lifespan import AppServices

log = get_logger(__name__)
T = TypeVar("T")
QUIET_S = 15.0


class NoWorker(Exception):
    """No live worker: a job would only wait in the queue."""


async def within_budget(
    app: AppServices, name: str, work: Callable[[], Awaitable[T]], default: T, *, needs_worker: bool = True
) -> T:
    budget = app.settings.hook_budget_s
    if needs_worker and time.monotonic() < app.queue_quiet_until:
        return default

    async def checked() -> T:
        if needs_worker and app.jobs.mode == "arq" and not await app.jobs.worker_info():
            raise NoWorker()
        return await work()

    try:
        return await asyncio.wait_for(checked(), budget)
    except (TimeoutError, UnavailableError, NoWorker) as exc:
        log.info("fail_open.queue_unanswered", work=name, reason=type(exc).__name__, budget_s=budget)
        if needs_worker:
            app.queue_quiet_until = time.monotonic() + QUIET_S
    except Exception as exc:  # fail open: the session goes on without this help
        log.info("fail_open.failed", work=name, error=f"{type(exc).__name__}: {exc}")
    return default

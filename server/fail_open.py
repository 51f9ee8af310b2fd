"""Work that must never hold up the agent: hooks, and start_ghap's premortem warnings.

Run within ``LMS_HOOK_BUDGET_S``; an error, an absent worker or Redis, or a job slower than the
budget gives the default answer (nothing), logged, never an error and never a longer wait.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from shared.log import get_logger

if TYPE_CHECKING:
    from server.services import AppContext

log = get_logger(__name__)
T = TypeVar("T")


async def within_budget(
    app: AppContext, name: str, work: Callable[[], Awaitable[T]], default: T, *, needs_worker: bool = True
) -> T:
    budget = app.settings.hook_budget_s
    try:
        if needs_worker and app.jobs.mode == "arq":
            if not await asyncio.wait_for(app.jobs.worker_info(), budget):
                return default  # no live worker: a job would only wait in the queue
        return await asyncio.wait_for(work(), budget)
    except TimeoutError:
        log.info("fail_open.over_budget", work=name, budget_s=budget)
    except Exception as exc:  # fail open: the session goes on without this help
        log.info("fail_open.failed", work=name, error=f"{type(exc).__name__}: {exc}")
    return default

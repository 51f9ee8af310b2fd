"""Storing resolved GHAP entries for search: the persist job with retries, and the outbox drain.

``resolve_ghap`` saves locally first (the journal's archive and outbox), then awaits the
persist job, retrying after 1, 2 and 4 s within a budget. Whatever still fails stays in the outbox, which
is drained at server start and every ``LMS_OUTBOX_DRAIN_INTERVAL_S``: nothing resolved is lost.
Point ids are deterministic, so a job run twice (a retry, or two servers draining one
journal) replaces what it stored: nothing is stored twice.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import TYPE_CHECKING

from learning_memory.server.journal.journal import Journal
from learning_memory.server.transport import JobStillRunning, Transport
from learning_memory.shared.contracts.experiences import (
    PERSIST_EXPERIENCE,
    GhapEntry,
    PersistExperienceRequest,
    PersistExperienceResponse,
)
from learning_memory.shared.errors import InternalError, LmsError, ValidationError
from learning_memory.shared.log import get_logger

if TYPE_CHECKING:
    from learning_memory.server.services.lifespan import AppServices

log = get_logger(__name__)
RETRY_DELAYS_S = (1.0, 2.0, 4.0)
# One attempt's wait: long enough for a warm worker's job, several times over.
ATTEMPT_WAIT_S = 3.0
# resolve_ghap answers within this, whatever the worker does: past it, a job still queued or
# running finishes by itself (and the outbox holds the entry until it has).
RESOLVE_BUDGET_S = 9.0
DRAIN_WAIT_S = 30.0


async def persist(
    jobs: Transport,
    entry: GhapEntry,
    *,
    retry_delays: tuple[float, ...] = RETRY_DELAYS_S,
    budget_s: float = math.inf,
    job_id: str | None = None,
) -> PersistExperienceResponse:
    """Run the persist job (or wait for ``job_id``, one already started), retrying after each of
    ``retry_delays``, within ``budget_s``.

    Raises the last error when every try failed, or :class:`JobStillRunning` with the job's id
    when the last try's job is still queued or running as the tries or the budget run out.
    """
    deadline = time.monotonic() + budget_s
    request = PersistExperienceRequest(entry=entry)
    last: LmsError | None = None
    for delay in (0.0, *retry_delays):
        if delay:
            if deadline - time.monotonic() <= delay:
                break
            await asyncio.sleep(delay)
        try:
            wait_s = max(min(ATTEMPT_WAIT_S, deadline - time.monotonic()), 0.0)
            # With the id of a job still queued or running, this waits for it again.
            return await jobs.run(PERSIST_EXPERIENCE, request, budget_s=wait_s, job_id=job_id)
        except JobStillRunning as running:
            # Queued or running (a worker starting, or none yet): keep waiting for that job,
            # rather than queueing another copy of it.
            last, job_id = None, running.job_id
        except ValidationError:
            raise  # a request the worker refuses will not be accepted by retrying
        except LmsError as exc:
            last, job_id = exc, None  # this try failed: the next one submits afresh
        log.warning(
            "experience.persist_retry", ghap_id=entry.id, error=last.message if last else "still waiting"
        )
    if last is None and job_id is not None:
        raise JobStillRunning(job_id)
    raise last or InternalError()


async def finish_later(
    journal: Journal, jobs: Transport, entry: GhapEntry, job_id: str | None = None
) -> None:
    """Store an entry without holding a tool (its persist job ``job_id`` may have outlived the
    tool's answer already), and mark it stored; if that fails, it stays in the outbox for the drain."""
    try:
        await persist(jobs, entry, job_id=job_id)
    except (LmsError, JobStillRunning) as exc:
        log.info("experience.persist_deferred", ghap_id=entry.id, reason=str(exc))
        return
    await asyncio.to_thread(journal.mark_persisted, entry.id)


async def drain_outbox(journal: Journal, jobs: Transport) -> int:
    """Persist what the outbox holds (one try each); return how many were stored."""
    stored = 0
    for entry in await asyncio.to_thread(journal.outbox):
        try:
            await jobs.run(PERSIST_EXPERIENCE, PersistExperienceRequest(entry=entry), budget_s=DRAIN_WAIT_S)
        except (LmsError, JobStillRunning) as exc:
            log.info("experience.outbox_waits", ghap_id=entry.id, reason=str(exc))
            break  # the worker or Redis is away: the rest waits for the next round too
        await asyncio.to_thread(journal.mark_persisted, entry.id)
        stored += 1
    if stored:
        log.info("experience.outbox_drained", stored=stored)
    return stored


async def keep_draining(app: AppServices, interval_s: float) -> None:
    """The server's background task: drain now, then every ``interval_s`` (a journal that does
    not exist yet has nothing waiting, and is not created for it)."""
    while True:
        try:
            if app.settings.journal_dir.exists():
                await drain_outbox(app.journal, app.jobs)
        except Exception:  # a bug here must not end the loop: the outbox would never drain
            log.exception("experience.outbox_drain_failed")
        await asyncio.sleep(interval_s)

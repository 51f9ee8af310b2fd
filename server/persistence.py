"""Storing resolved GHAP entries for search: the persist job with retries, and the outbox drain.

``resolve_ghap`` saves locally first (the journal's archive and outbox), then awaits the
persist job, retrying after 1, 2 and 4 s. Whatever still fails stays in the outbox, which
is drained at server start and every ``LMS_OUTBOX_DRAIN_INTERVAL_S``: nothing resolved is lost.
Point ids are deterministic, so a job run twice (a retry, or two servers draining one
journal) replaces what it stored: nothing is stored twice.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from server.jobclient import JobClient, JobStillRunning
from server.journal.journal import Journal
from shared.contracts.experiences import (
    PERSIST_EXPERIENCE,
    GhapEntry,
    PersistExperienceRequest,
    PersistExperienceResponse,
)
from shared.errors import InternalError, LmsError, ValidationError
from shared.log import get_logger

if TYPE_CHECKING:
    from server.services import AppContext

log = get_logger(__name__)
RETRY_DELAYS_S = (1.0, 2.0, 4.0)
# One attempt's wait: long enough for a warm worker (the job takes ~50 ms), short enough that
# four attempts with no worker answer the tool within ~20 s.
ATTEMPT_WAIT_S = 3.0
DRAIN_WAIT_S = 30.0


async def persist(
    jobs: JobClient, entry: GhapEntry, *, retry_delays: tuple[float, ...] = RETRY_DELAYS_S
) -> PersistExperienceResponse:
    """Run the persist job, retrying after each of ``retry_delays``; raise the last error."""
    request = PersistExperienceRequest(entry=entry)
    job_id: str | None = None
    last: LmsError = InternalError()
    for delay in (0.0, *retry_delays):
        if delay:
            await asyncio.sleep(delay)
        try:
            if job_id is None:
                job_id = await jobs.submit(PERSIST_EXPERIENCE, request)
            return await jobs.wait(PERSIST_EXPERIENCE, job_id, timeout_s=ATTEMPT_WAIT_S)
        except JobStillRunning:
            # Queued or running (a worker starting, or none yet): keep waiting for that job,
            # rather than queueing another copy of it.
            last = InternalError("the persist job is still waiting for a worker")
        except ValidationError:
            raise  # a request the worker refuses will not be accepted by retrying
        except LmsError as exc:
            last, job_id = exc, None  # this try failed: the next one submits afresh
        log.warning("experience.persist_retry", ghap_id=entry.id, error=last.message)
    raise last


async def drain_outbox(journal: Journal, jobs: JobClient) -> int:
    """Persist what the outbox holds (one try each); return how many were stored."""
    stored = 0
    for entry in await asyncio.to_thread(journal.outbox):
        try:
            job_id = await jobs.submit(PERSIST_EXPERIENCE, PersistExperienceRequest(entry=entry))
            await jobs.wait(PERSIST_EXPERIENCE, job_id, timeout_s=DRAIN_WAIT_S)
        except (LmsError, JobStillRunning) as exc:
            log.info("experience.outbox_waits", ghap_id=entry.id, reason=str(exc))
            break  # the worker or Redis is away: the rest waits for the next round too
        await asyncio.to_thread(journal.mark_persisted, entry.id)
        stored += 1
    if stored:
        log.info("experience.outbox_drained", stored=stored)
    return stored


async def keep_draining(app: AppContext, interval_s: float) -> None:
    """The server's background task: drain now, then every ``interval_s`` (a journal that does
    not exist yet has nothing waiting, and is not created for it)."""
    while True:
        try:
            if app.settings.journal_dir.exists():
                await drain_outbox(app.journal, app.jobs)
        except Exception:  # a bug here must not end the loop: the outbox would never drain
            log.exception("experience.outbox_drain_failed")
        await asyncio.sleep(interval_s)

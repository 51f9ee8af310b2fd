"""Jobs run inside the server process: zero set-up for a single user.

The very same job functions the worker runs, called in-process. The worker's modules
(and, through them, heavy libraries) are imported on first use, never at start-up;
job implementations keep CPU-bound work off the event loop themselves.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from server.jobclient.base import JobStillRunning, Mode, ProgressCallback, Resp, decode_envelope
from shared.errors import InternalError
from shared.jobs import JobProgress, JobSpec, JobStatus
from shared.log import get_logger
from shared.settings import Settings

if TYPE_CHECKING:
    from worker.context import WorkerServices

log = get_logger(__name__)
# Finished jobs are kept for get_job_status; oldest forgotten first.
KEEP_FINISHED = 1000


@dataclass
class InlineJob:
    spec: JobSpec[Any, Any]
    task: asyncio.Task[dict[str, Any]] | None = None
    progress: JobProgress | None = None
    listeners: list[ProgressCallback] = field(default_factory=list)
    enqueued_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    finished_at: datetime | None = None


class InlineJobClient:
    mode: Mode = "inline"

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._jobs: OrderedDict[str, InlineJob] = OrderedDict()
        self._current: dict[str, str] = {}  # dedupe key -> the job last submitted under it
        self._services: WorkerServices | None = None

    def _get_services(self) -> WorkerServices:
        if self._services is None:
            from worker.context import WorkerServices

            self._services = WorkerServices(self._settings)
        return self._services

    async def submit(self, spec: JobSpec[Any, Any], request: BaseModel, *, job_id: str | None = None) -> str:
        from worker.context import JobContext
        from worker.registry import execute

        job_id = job_id or uuid.uuid4().hex
        if job_id in self._jobs:
            return job_id
        job = InlineJob(spec)

        async def report(current: float, total: float | None = None, message: str | None = None) -> None:
            job.progress = JobProgress(current=current, total=total, message=message)
            for listener in list(job.listeners):
                await listener(job.progress)

        context = JobContext(services=self._get_services(), job_id=job_id, job_try=1, report=report)
        job.task = asyncio.create_task(execute(spec, request.model_dump(mode="json"), context))
        job.task.add_done_callback(lambda _: self._finished(job_id))
        self._jobs[job_id] = job
        return job_id

    async def submit_once(self, spec: JobSpec[Any, Any], request: BaseModel, *, key: str) -> tuple[str, bool]:
        current = self._current.get(key)
        job = self._jobs.get(current) if current else None
        if current is not None and job is not None and job.task is not None and not job.task.done():
            return current, True
        self._current[key] = job_id = await self.submit(spec, request)
        return job_id, False

    def _finished(self, job_id: str) -> None:
        job = self._jobs[job_id]
        job.finished_at = datetime.now(UTC)
        assert job.task is not None
        if not job.task.cancelled() and job.task.exception() is not None:
            log.error("job.crashed", job=job.spec.name, job_id=job_id, exc_info=job.task.exception())
        done = [jid for jid, j in self._jobs.items() if j.finished_at is not None]
        for old in done[: max(0, len(done) - KEEP_FINISHED)]:
            del self._jobs[old]

    @staticmethod
    def _envelope(job: InlineJob) -> dict[str, Any]:
        assert job.task is not None
        if job.task.cancelled() or job.task.exception() is not None:
            return InternalError(f"job {job.spec.name} failed; the server log has the details").to_payload()
        return job.task.result()

    async def wait(
        self,
        spec: JobSpec[Any, Resp],
        job_id: str,
        *,
        timeout_s: float,
        on_progress: ProgressCallback | None = None,
    ) -> Resp:
        job = self._jobs[job_id]
        assert job.task is not None
        if on_progress is not None:
            job.listeners.append(on_progress)
        try:
            await asyncio.wait_for(asyncio.shield(job.task), timeout_s)
        except TimeoutError:
            raise JobStillRunning(job_id) from None
        except Exception:
            pass  # recorded by _finished; turned into an internal error below
        finally:
            if on_progress is not None:
                job.listeners.remove(on_progress)
        return decode_envelope(spec, self._envelope(job))

    async def status(self, job_id: str) -> JobStatus:
        job = self._jobs.get(job_id)
        if job is None:
            return JobStatus(job_id=job_id, state="not_found")
        assert job.task is not None
        base: dict[str, Any] = {
            "job_id": job_id,
            "function": job.spec.name,
            "tries": 1,
            "progress": job.progress,
            "enqueued_at": job.enqueued_at,
            "started_at": job.enqueued_at,
            "finished_at": job.finished_at,
        }
        if not job.task.done():
            return JobStatus(state="in_progress", **base)
        envelope = self._envelope(job)
        if "ok" in envelope:
            return JobStatus(state="complete", result=envelope["ok"], **base)
        return JobStatus(state="failed", error=envelope["error"], **base)

    async def worker_info(self) -> list[dict[str, Any]]:
        return [self._get_services().identity.model_dump(mode="json")]

    async def close(self) -> None:
        for job in self._jobs.values():
            if job.task is not None and not job.task.done():
                job.task.cancel()
        if self._services is not None:
            await self._services.close()

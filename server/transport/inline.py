"""Jobs run inside the server process: zero set-up for a single user.

The very same job functions the worker runs, called in-process through the executor the
composition root hands in, under the same time limit and the same number of tries as the worker
gives them. The executor is made on the first job, so the worker's libraries are never loaded at
start-up; job implementations keep CPU-bound work off the event loop themselves.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from learning_memory.server.transport.base import (
    JobStillRunning,
    Mode,
    ProgressCallback,
    Resp,
    decode_envelope,
)
from learning_memory.shared.errors import InternalError, JobTimeoutError
from learning_memory.shared.jobs import (
    RETRY_DEFER_S,
    ExecutorFactory,
    JobExecutor,
    JobProgress,
    JobSpec,
    JobStatus,
)
from learning_memory.shared.log import get_logger
from learning_memory.shared.settings import Settings

log = get_logger(__name__)
# Finished jobs are kept for get_job_status; oldest forgotten first.
KEEP_FINISHED = 1000


@dataclass
class InlineJob:
    spec: JobSpec[Any, Any]
    task: asyncio.Task[dict[str, Any]] | None = None
    progress: JobProgress | None = None
    tries: int = 0
    listeners: list[ProgressCallback] = field(default_factory=list)
    enqueued_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    finished_at: datetime | None = None


class InlineTransport:
    mode: Mode = "inline"

    def __init__(self, settings: Settings, executor: ExecutorFactory) -> None:
        self._settings = settings
        self._make_executor = executor
        self._jobs: OrderedDict[str, InlineJob] = OrderedDict()
        self._current: dict[str, str] = {}  # dedupe key -> the job last submitted under it
        self._executor: JobExecutor | None = None

    def _get_executor(self) -> JobExecutor:
        if self._executor is None:
            self._executor = self._make_executor(self._settings)
        return self._executor

    async def run(
        self,
        spec: JobSpec[Any, Resp],
        request: BaseModel,
        *,
        budget_s: float,
        dedupe_key: str | None = None,
        job_id: str | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Resp:
        if job_id is None and dedupe_key is not None:
            job_id = self._current.get(dedupe_key)
            running = self._jobs.get(job_id) if job_id else None
            if running is None or running.finished_at is not None:
                job_id = None
        job_id = self._start(spec, request, job_id)
        if dedupe_key is not None:
            self._current[dedupe_key] = job_id
        if budget_s <= 0:
            raise JobStillRunning(job_id)
        return await self._wait(spec, job_id, budget_s, on_progress)

    def _start(self, spec: JobSpec[Any, Any], request: BaseModel, job_id: str | None) -> str:
        """Start a job under ``job_id`` (a fresh id when None), unless one is known by it."""
        job_id = job_id or uuid.uuid4().hex
        if job_id in self._jobs:
            return job_id
        job = InlineJob(spec)
        job.task = asyncio.create_task(self._tries(job, job_id, request.model_dump(mode="json")))
        job.task.add_done_callback(lambda _: self._finished(job_id))
        self._jobs[job_id] = job
        return job_id

    async def _tries(self, job: InlineJob, job_id: str, payload: Any) -> dict[str, Any]:
        """Run the job as the worker would: each try within the spec's time limit; a try that
        crashes is run again, up to the spec's tries; domain errors are results, not crashes."""

        async def report(current: float, total: float | None = None, message: str | None = None) -> None:
            job.progress = JobProgress(current=current, total=total, message=message)
            for listener in list(job.listeners):
                await listener(job.progress)

        spec = job.spec
        while True:
            job.tries += 1
            attempt = self._get_executor().execute(
                spec, payload, job_id=job_id, job_try=job.tries, report=report
            )
            try:
                return await asyncio.wait_for(attempt, spec.timeout_s)
            except TimeoutError:
                return JobTimeoutError(f"job {spec.name} ran past its time limit").to_payload()
            except Exception:
                log.exception("job.try_failed", job=spec.name, job_id=job_id, job_try=job.tries)
                if job.tries >= spec.max_tries:
                    spent = f"job {spec.name} failed on every try ({spec.max_tries})"
                    return InternalError(f"{spent}; the server log has the details").to_payload()
            await asyncio.sleep(RETRY_DEFER_S * job.tries)

    def _finished(self, job_id: str) -> None:
        job = self._jobs[job_id]
        job.finished_at = datetime.now(UTC)
        done = [jid for jid, j in self._jobs.items() if j.finished_at is not None]
        for old in done[: max(0, len(done) - KEEP_FINISHED)]:
            del self._jobs[old]

    @staticmethod
    def _envelope(job: InlineJob) -> dict[str, Any]:
        assert job.task is not None
        if job.task.cancelled():
            return InternalError(f"job {job.spec.name} was cancelled").to_payload()
        return job.task.result()

    async def _wait(
        self, spec: JobSpec[Any, Resp], job_id: str, timeout_s: float, on_progress: ProgressCallback | None
    ) -> Resp:
        job = self._jobs[job_id]
        assert job.task is not None
        if on_progress is not None:
            job.listeners.append(on_progress)
        try:
            await asyncio.wait_for(asyncio.shield(job.task), timeout_s)
        except TimeoutError:
            raise JobStillRunning(job_id) from None
        except asyncio.CancelledError:
            if not job.task.cancelled():
                raise  # the waiter itself was cancelled, not the job
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
            "tries": job.tries,
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
        return [self._get_executor().identity().model_dump(mode="json")]

    async def close(self) -> None:
        for job in self._jobs.values():
            if job.task is not None and not job.task.done():
                job.task.cancel()
        if self._executor is not None:
            await self._executor.close()

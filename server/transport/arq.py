"""Jobs through Redis and arq, awaited without polling.

The enqueue publishes the queue's name on the wake channel, so an idle worker starts
the job at once; the worker pushes the result itself to the job's ``done`` list, so the
waiter's BLPOP returns at once with it. BLPOP waits in slices of ``WAIT_SLICE_S``. What
arq's keys and formats are is :mod:`shared.arq_backend`'s business, not this module's.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, cast

from pydantic import BaseModel
from redis.exceptions import RedisError

from learning_memory.server.transport.base import (
    JobStillRunning,
    Mode,
    ProgressCallback,
    Resp,
    decode_envelope,
)
from learning_memory.shared import arq_backend
from learning_memory.shared.arq_backend import ArqRedis, Outcome
from learning_memory.shared.contracts import SPECS_BY_NAME
from learning_memory.shared.errors import UnavailableError, from_payload
from learning_memory.shared.jobs import JobSpec, JobStatus
from learning_memory.shared.keys import Keys
from learning_memory.shared.log import get_logger
from learning_memory.shared.settings import Settings
from learning_memory.shared.state import live_workers, read_progress

log = get_logger(__name__)

# Between slices the waiter relays progress (which keeps the client's request alive) and
# checks that a worker is alive; the result itself ends a slice at once.
WAIT_SLICE_S = 0.5


def connect(settings: Settings, connect_timeout_s: float = arq_backend.CONNECT_TIMEOUT_S) -> ArqRedis:
    return arq_backend.connect(settings.redis_url, connect_timeout_s)


class ArqTransport:
    mode: Mode = "arq"

    def __init__(
        self,
        settings: Settings,
        redis: ArqRedis | None = None,
        ensure_worker: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self._settings = settings
        self._keys = Keys(settings.namespace)
        self.redis = redis or connect(settings)
        self._ensure_worker = ensure_worker
        self._background: list[asyncio.Task[object]] = []

    def _unavailable(self, exc: BaseException) -> UnavailableError:
        return UnavailableError(
            f"Redis at {self._settings.redis_url} is unreachable ({exc}). Start Redis, "
            "or set LMS_QUEUE=inline to run jobs inside the server."
        )

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
        try:
            if job_id is not None:
                job_id = await self._submit_as(spec, request, self._keys.job_id(job_id))
            elif dedupe_key is not None:
                job_id = await self._submit_once(spec, request, dedupe_key)
            else:
                job_id = await self._submit(spec, request)
            if budget_s <= 0:
                raise JobStillRunning(job_id)
            return await self._wait(spec, job_id, budget_s, on_progress)
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from exc

    async def _submit(self, spec: JobSpec[Any, Any], request: BaseModel) -> str:
        # A fresh random id cannot collide, so arq's WATCH/EXISTS dance can go:
        # the job, its place in the queue and the wake-up leave in one round trip.
        job_id = self._keys.job_id(uuid.uuid4().hex)
        queue = self._keys.queue(spec.queue)
        enqueued_ms = arq_backend.now_ms()
        job = arq_backend.encode_job(spec.name, request.model_dump(mode="json"), enqueued_ms)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.psetex(arq_backend.job_key(job_id), arq_backend.JOB_EXPIRES_MS, job)
            pipe.zadd(queue, {job_id: enqueued_ms})
            pipe.publish(self._keys.wake_channel, queue)
            await pipe.execute()
        return job_id

    async def _submit_as(self, spec: JobSpec[Any, Any], request: BaseModel, job_id: str) -> str:
        """Start ``job_id`` unless it is queued, running or has its result: arq's checked
        enqueue leaves an existing job alone."""
        queue = self._keys.queue(spec.queue)
        payload = request.model_dump(mode="json")
        if await self.redis.enqueue_job(spec.name, payload, _job_id=job_id, _queue_name=queue) is not None:
            await self.redis.publish(self._keys.wake_channel, queue)  # only a job just queued needs it
        return job_id

    async def _submit_once(self, spec: JobSpec[Any, Any], request: BaseModel, key: str) -> str:
        pointer = self._keys.current(key)
        current = await self.redis.get(pointer)
        # arq keeps a job's key until the job ends: queued, running or between tries.
        if current is not None and await self.redis.exists(arq_backend.job_key(current.decode())):
            return str(current.decode())
        # Two callers racing here may both submit; the worker runs such jobs one after the other.
        job_id = await self._submit(spec, request)
        await self.redis.set(pointer, job_id, ex=int(spec.timeout_s) + 60)
        return job_id

    async def _wait(
        self, spec: JobSpec[Any, Resp], job_id: str, timeout_s: float, on_progress: ProgressCallback | None
    ) -> Resp:
        deadline = time.monotonic() + timeout_s
        no_worker_since: float | None = None
        last_progress = None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise JobStillRunning(job_id)
            popped = await cast(
                Awaitable[list[bytes] | None],
                # BLPOP takes fractions of a second (Redis >= 6); redis-py's hint says int.
                self.redis.blpop([self._keys.done(job_id)], timeout=min(remaining, WAIT_SLICE_S)),  # type: ignore[arg-type]
            )
            # The worker pushes the result itself; the result key covers a push we missed.
            raw = popped[1] if popped else await self.redis.get(arq_backend.result_key(job_id))
            if raw is not None:
                outcome = arq_backend.decode_result(raw)
                if outcome.success:
                    return decode_envelope(spec, outcome.value)
                raise outcome.error(spec.name, spec.max_tries)
            if on_progress is not None:
                progress = await read_progress(self.redis, self._keys, job_id)
                if progress is not None and progress != last_progress:
                    last_progress = progress
                    await on_progress(progress)
            if await live_workers(self.redis, self._keys):
                no_worker_since = None
                continue
            now = time.monotonic()
            if no_worker_since is None:
                no_worker_since = now
                if self._ensure_worker is not None:
                    await self._ensure_worker()
            elif now - no_worker_since > self._settings.worker_start_grace_s:
                raise UnavailableError(
                    f"No worker has been running for {self._settings.worker_start_grace_s:.0f}s, so job "
                    f"{job_id} waits in the queue. Start one with `learning-memory worker` "
                    "(see its log under LMS_DATA_DIR/logs)."
                )

    async def status(self, job_id: str) -> JobStatus:
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.get(arq_backend.result_key(job_id))
                pipe.get(arq_backend.job_key(job_id))
                pipe.exists(arq_backend.in_progress_key(job_id))
                pipe.get(arq_backend.retry_key(job_id))
                for queue in self._keys.queues:
                    pipe.zscore(queue, job_id)
                result_raw, job_raw, in_progress, tries, *scores = await pipe.execute()
            progress = await read_progress(self.redis, self._keys, job_id)
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from exc

        if result_raw is not None:
            return _finished_status(job_id, arq_backend.decode_result(result_raw), progress)
        if job_raw is None and not any(score is not None for score in scores):
            return JobStatus(job_id=job_id, state="not_found")
        job = arq_backend.decode_job(job_raw) if job_raw is not None else None
        return JobStatus(
            job_id=job_id,
            state="in_progress" if in_progress else "queued",
            function=job.function if job else None,
            tries=int(tries) if tries is not None else None,
            progress=progress,
            enqueued_at=job.enqueued_at if job else None,
        )

    async def worker_info(self) -> list[dict[str, Any]]:
        try:
            return [w.model_dump(mode="json") for w in await live_workers(self.redis, self._keys)]
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from exc

    def start_in_background(self, work: Coroutine[Any, Any, object]) -> None:
        """Run ``work`` beside the transport; it is cancelled when the transport closes."""
        self._background.append(asyncio.create_task(work, name="arq-transport-background"))

    async def close(self) -> None:
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.redis.aclose(close_connection_pool=True)


def _finished_status(job_id: str, outcome: Outcome, progress: Any) -> JobStatus:
    base: dict[str, Any] = {
        "job_id": job_id,
        "function": outcome.function,
        "tries": outcome.tries,
        "progress": progress,
        "enqueued_at": outcome.enqueued_at,
        "started_at": outcome.started_at,
        "finished_at": outcome.finished_at,
    }
    envelope = outcome.value
    if not outcome.success:
        spec = SPECS_BY_NAME.get(outcome.function or "")
        error = outcome.error(outcome.function or "job", spec.max_tries if spec else None)
    elif isinstance(envelope, dict) and "ok" in envelope:
        return JobStatus(state="complete", result=envelope["ok"], **base)
    else:
        error = from_payload(envelope)
    return JobStatus(state="failed", error=error.to_payload()["error"], **base)

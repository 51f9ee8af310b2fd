"""Jobs through Redis and arq, awaited without polling.

The enqueue publishes the queue's name on the wake channel, so an idle worker starts
the job at once; the worker pushes the result itself to the job's ``done`` list, so the
waiter's BLPOP returns at once with it. BLPOP waits in slices of ``WAIT_SLICE_S``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from datetime import UTC, datetime
from typing import Any, cast

from arq.connections import ArqRedis
from arq.jobs import serialize_job
from pydantic import BaseModel
from redis.asyncio import ConnectionPool
from redis.exceptions import RedisError

from server.jobclient.base import (
    JobStillRunning,
    Mode,
    ProgressCallback,
    Resp,
    decode_envelope,
    failure_error,
)
from shared import codec
from shared.errors import UnavailableError, from_payload
from shared.jobs import JobSpec, JobStatus
from shared.keys import ARQ_IN_PROGRESS_PREFIX, ARQ_JOB_PREFIX, ARQ_RESULT_PREFIX, ARQ_RETRY_PREFIX, Keys
from shared.log import get_logger
from shared.settings import Settings
from shared.state import live_workers, read_progress

log = get_logger(__name__)

# Between slices the waiter relays progress (which keeps the client's request alive) and
# checks that a worker is alive; the result itself ends a slice at once.
WAIT_SLICE_S = 0.5
# As arq: a job not started within a day is dropped rather than run long after anyone cares.
JOB_EXPIRES_MS = 24 * 3600 * 1000
CONNECT_TIMEOUT_S = 2.0
# Longer than any BLPOP slice, so a blocked read is never mistaken for a dead Redis.
SOCKET_TIMEOUT_S = 5.0


def connect(settings: Settings, connect_timeout_s: float = CONNECT_TIMEOUT_S) -> ArqRedis:
    pool = ConnectionPool.from_url(
        settings.redis_url,
        socket_connect_timeout=connect_timeout_s,
        socket_timeout=SOCKET_TIMEOUT_S,
    )
    return ArqRedis(pool, job_serializer=codec.dumps, job_deserializer=codec.loads)


def _ms_to_dt(ms: Any) -> datetime | None:
    return datetime.fromtimestamp(ms / 1000, UTC) if isinstance(ms, (int, float)) else None


class ArqJobClient:
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

    async def submit(self, spec: JobSpec[Any, Any], request: BaseModel, *, job_id: str | None = None) -> str:
        queue = self._keys.queue(spec.queue)
        payload = request.model_dump(mode="json")
        try:
            if job_id is not None:
                # A caller-chosen id may exist already: arq's checked enqueue makes it idempotent.
                # arq's job keys are global, so the id is namespaced like everything else.
                job_id = self._keys.job_id(job_id)
                await self.redis.enqueue_job(spec.name, payload, _job_id=job_id, _queue_name=queue)
                await self.redis.publish(self._keys.wake_channel, queue)
                return job_id
            # A fresh random id cannot collide, so arq's WATCH/EXISTS dance can go:
            # the job, its place in the queue and the wake-up leave in one round trip.
            job_id = uuid.uuid4().hex
            now_ms = int(time.time() * 1000)
            job = serialize_job(spec.name, (payload,), {}, None, now_ms, serializer=codec.dumps)
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.psetex(ARQ_JOB_PREFIX + job_id, JOB_EXPIRES_MS, job)
                pipe.zadd(queue, {job_id: now_ms})
                pipe.publish(self._keys.wake_channel, queue)
                await pipe.execute()
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from exc
        return job_id

    async def submit_once(self, spec: JobSpec[Any, Any], request: BaseModel, *, key: str) -> tuple[str, bool]:
        pointer = self._keys.current(key)
        try:
            current = await self.redis.get(pointer)
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from exc
        if current is not None and (await self.status(current.decode())).state in ("queued", "in_progress"):
            return current.decode(), True
        # Two callers racing here may both submit; the worker runs such jobs one after the other.
        job_id = await self.submit(spec, request)
        try:
            await self.redis.set(pointer, job_id, ex=int(spec.timeout_s) + 60)
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from exc
        return job_id, False

    async def wait(
        self,
        spec: JobSpec[Any, Resp],
        job_id: str,
        *,
        timeout_s: float,
        on_progress: ProgressCallback | None = None,
    ) -> Resp:
        try:
            return await self._wait(spec, job_id, timeout_s, on_progress)
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from exc

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
            raw = popped[1] if popped else await self.redis.get(ARQ_RESULT_PREFIX + job_id)
            if raw is not None:
                return self._decode(spec, codec.loads(raw))
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

    @staticmethod
    def _decode(spec: JobSpec[Any, Resp], result: dict[str, Any]) -> Resp:
        if result.get("s"):
            return decode_envelope(spec, result.get("r"))
        raise failure_error(spec.name, result.get("r"), result.get("t"))

    async def status(self, job_id: str) -> JobStatus:
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.get(ARQ_RESULT_PREFIX + job_id)
                pipe.get(ARQ_JOB_PREFIX + job_id)
                pipe.exists(ARQ_IN_PROGRESS_PREFIX + job_id)
                pipe.get(ARQ_RETRY_PREFIX + job_id)
                for queue in self._keys.queues:
                    pipe.zscore(queue, job_id)
                result_raw, job_raw, in_progress, tries, *scores = await pipe.execute()
            progress = await read_progress(self.redis, self._keys, job_id)
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from exc

        if result_raw is not None:
            result = codec.loads(result_raw)
            base = {
                "job_id": job_id,
                "function": result.get("f"),
                "tries": result.get("t"),
                "progress": progress,
                "enqueued_at": _ms_to_dt(result.get("et")),
                "started_at": _ms_to_dt(result.get("st")),
                "finished_at": _ms_to_dt(result.get("ft")),
            }
            envelope = result.get("r")
            if not result.get("s"):
                error = failure_error(str(result.get("f")), envelope, result.get("t"))
            elif isinstance(envelope, dict) and "ok" in envelope:
                return JobStatus(state="complete", result=envelope["ok"], **base)
            else:
                error = from_payload(envelope)
            return JobStatus(state="failed", error=error.to_payload()["error"], **base)

        if job_raw is None and not any(score is not None for score in scores):
            return JobStatus(job_id=job_id, state="not_found")
        job = codec.loads(job_raw) if job_raw is not None else {}
        return JobStatus(
            job_id=job_id,
            state="in_progress" if in_progress else "queued",
            function=job.get("f"),
            tries=int(tries) if tries is not None else None,
            progress=progress,
            enqueued_at=_ms_to_dt(job.get("et")),
        )

    async def worker_info(self) -> list[dict[str, Any]]:
        try:
            return [w.model_dump(mode="json") for w in await live_workers(self.redis, self._keys)]
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from exc

    def start_in_background(self, work: Coroutine[Any, Any, object]) -> None:
        """Run ``work`` beside the client; it is cancelled when the client closes."""
        self._background.append(asyncio.create_task(work, name="arq-client-background"))

    async def close(self) -> None:
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.redis.aclose(close_connection_pool=True)

"""Everything this project relies on in arq, in one module: its keys, job and result formats, and
the worker hooks.

No other module imports arq's internals or spells its key prefixes. What is relied on here that
arq does not document (the poll iteration, the slot release, the job and result formats) is
checked by ``tests/integration/test_arq_contract.py``, so an arq upgrade that changes it fails there.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from arq import constants
from arq.connections import ArqRedis
from arq.jobs import deserialize_job, deserialize_result, serialize_job
from arq.worker import Function, Retry, Worker, func
from redis.asyncio import ConnectionPool

from learning_memory.shared import codec
from learning_memory.shared.cancelling import raise_if_cancelling, wait_set
from learning_memory.shared.errors import InternalError, JobTimeoutError, LmsError
from learning_memory.shared.keys import Keys

__all__ = [
    "ArqRedis",
    "Function",
    "QueueWorker",
    "Retry",
    "connect",
    "decode_job",
    "decode_result",
    "encode_job",
    "func",
    "in_progress_key",
    "job_key",
    "result_key",
    "retry_key",
]

# As arq: a job not started within a day is dropped rather than run long after anyone cares.
JOB_EXPIRES_MS = constants.expires_extra_ms
CONNECT_TIMEOUT_S = 2.0
# Longer than any BLPOP slice, so a blocked read is never mistaken for a dead Redis.
SOCKET_TIMEOUT_S = 5.0
# What a waiter is handed for a job that ended with no result recorded (it expired unrun).
NO_RESULT = b"{}"
# How long a finished job's result waits in its ``done`` list for the client awaiting it.
DONE_TTL_S = 600


def job_key(job_id: str) -> str:
    return constants.job_key_prefix + job_id


def result_key(job_id: str) -> str:
    return constants.result_key_prefix + job_id


def in_progress_key(job_id: str) -> str:
    return constants.in_progress_key_prefix + job_id


def retry_key(job_id: str) -> str:
    return constants.retry_key_prefix + job_id


def connect(redis_url: str, connect_timeout_s: float = CONNECT_TIMEOUT_S) -> ArqRedis:
    """A Redis client that speaks arq's job format with our JSON codec (never pickle)."""
    pool = ConnectionPool.from_url(
        redis_url, socket_connect_timeout=connect_timeout_s, socket_timeout=SOCKET_TIMEOUT_S
    )
    return ArqRedis(pool, job_serializer=codec.dumps, job_deserializer=codec.loads)


def now_ms() -> int:
    return int(time.time() * 1000)


def encode_job(function: str, payload: Any, enqueued_ms: int) -> bytes:
    """A job as arq's worker reads it: one positional argument, the request's JSON."""
    return serialize_job(function, (payload,), {}, None, enqueued_ms, serializer=codec.dumps)


@dataclass(frozen=True)
class QueuedJob:
    function: str
    tries: int | None
    enqueued_at: datetime


@dataclass(frozen=True)
class Outcome:
    """A finished job as arq recorded it: our result envelope when it ran to the end, else the
    failure (its exception, as the codec wrote it)."""

    function: str | None
    success: bool
    value: Any
    tries: int | None = None
    enqueued_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None

    def error(self, name: str, max_tries: int | None) -> LmsError:
        """The error for a job that did not run to the end: past its time limit, every try
        spent (arq refuses a try past ``max_tries`` when it picks the job up), or a crash."""
        kind = self.value.get("__exception__") if isinstance(self.value, dict) else None
        if kind == "TimeoutError":
            return JobTimeoutError(f"job {name} ran past its time limit")
        if max_tries is not None and self.tries is not None and self.tries > max_tries:
            return InternalError(
                f"job {name} failed on every try ({max_tries}); the worker log has the details"
            )
        return InternalError(f"job {name} failed; the worker log has the details")


def decode_job(raw: bytes) -> QueuedJob:
    job = deserialize_job(raw, deserializer=codec.loads)
    return QueuedJob(function=job.function, tries=job.job_try, enqueued_at=job.enqueue_time)


def decode_result(raw: bytes) -> Outcome:
    if raw == NO_RESULT:
        return Outcome(function=None, success=False, value=None)
    result = deserialize_result(raw, deserializer=codec.loads)
    return Outcome(
        function=result.function,
        success=result.success,
        value=result.result,
        tries=result.job_try,
        enqueued_at=result.enqueue_time,
        started_at=result.start_time,
        finished_at=result.finish_time,
    )


class QueueWorker(Worker):
    """arq's worker, woken by a message instead of sleeping between polls.

    arq polls its queue every ``poll_delay``: that sleep would be most of an awaited job's
    latency, and polling faster burns CPU while idle. This worker waits on ``wake``, which the
    wake listener sets when an enqueue publishes on the wake channel, with ``poll_delay`` kept
    only as a slow fallback (deferred retries, a missed message). When a job ends it pushes the
    result to the job's ``done`` list, so an awaiting client wakes at once too, and it keeps a
    set of the jobs it runs so that, if it dies, another worker can reclaim them without waiting
    for arq's in-progress key to expire. The pool, ctx and start-up belong to the worker
    process, not to this loop.
    """

    def __init__(self, *args: Any, keys: Keys, worker_id: str, **kwargs: Any) -> None:
        super().__init__(*args, handle_signals=False, **kwargs)
        self.keys = keys
        self.worker_id = worker_id
        self.wake = asyncio.Event()
        self.on_job_start = self._mark_running

    async def main(self) -> None:
        while True:
            # Cleared before polling, so a wake-up that lands during the poll is not lost.
            self.wake.clear()
            await self._poll_iteration()
            raise_if_cancelling()
            # The wake listener sets every event as it subscribes: a worker told to stop just
            # after it started is cancelled right then (see shared.cancelling).
            await wait_set(self.wake, self.poll_delay_s)

    def _release_sem_dec_counter_on_complete(self) -> None:
        super()._release_sem_dec_counter_on_complete()
        # A slot is free: jobs left waiting while we were full can start now.
        self.wake.set()

    async def _mark_running(self, ctx: dict[str, Any]) -> None:
        await cast(Awaitable[int], self.pool.sadd(self.keys.running(self.worker_id), ctx["job_id"]))

    async def finish_job(self, job_id: str, finish: bool, result_data: bytes | None, *args: Any) -> None:
        await super().finish_job(job_id, finish, result_data, *args)
        await self._signal(job_id, result_data if finish else None)

    async def finish_failed_job(self, job_id: str, result_data: bytes | None) -> None:
        await super().finish_failed_job(job_id, result_data)
        await self._signal(job_id, result_data or NO_RESULT)

    async def _signal(self, job_id: str, result_data: bytes | None) -> None:
        """Forget the job as running; if it ended, hand its result to whoever awaits it."""
        async with self.pool.pipeline(transaction=False) as pipe:
            pipe.srem(self.keys.running(self.worker_id), job_id)
            if result_data is not None:
                # The result itself, so the waiter needs no second round trip to read it.
                pipe.rpush(self.keys.done(job_id), result_data)
                pipe.expire(self.keys.done(job_id), DONE_TTL_S)
            await pipe.execute()

    async def stop(self, grace_s: float) -> None:
        """Stop taking jobs, let running ones finish for ``grace_s``, then cancel the rest.

        arq puts a cancelled job back on its queue, so another worker runs it again.
        """
        self.allow_pick_jobs = False
        running = [t for t in self.tasks.values() if not t.done()]
        if running:
            _, pending = await asyncio.wait(running, timeout=grace_s)
            for task in pending:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)

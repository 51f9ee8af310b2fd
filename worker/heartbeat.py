"""The worker's heartbeat, and the reclaiming of jobs whose worker died.

A worker killed mid-job (SIGKILL, OOM, power) leaves arq's in-progress key behind, and
arq would wait for it to expire (the job's whole time limit, an hour for indexing)
before running the job again. Each worker records what it runs; any live worker that
finds a registered worker without a heartbeat releases that worker's jobs at once, and the
leases it held on project and repository indexes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from redis.asyncio import Redis
from redis.exceptions import RedisError

from learning_memory.shared import arq_backend, codec
from learning_memory.shared.cancelling import raise_if_cancelling
from learning_memory.shared.jobs import WorkerIdentity
from learning_memory.shared.keys import Keys
from learning_memory.shared.log import get_logger
from learning_memory.shared.state import smembers
from learning_memory.worker.locks import release_leases_of

log = get_logger(__name__)


class Heartbeat:
    def __init__(
        self,
        redis: Redis,
        keys: Keys,
        identity: WorkerIdentity,
        *,
        interval_s: float,
        ttl_s: float,
        on_reclaim: Callable[[], None] = lambda: None,
    ) -> None:
        self._redis = redis
        self._keys = keys
        self._identity = identity
        self._interval_s = interval_s
        self._ttl_ms = int(ttl_s * 1000)
        self._on_reclaim = on_reclaim

    async def beat(self) -> None:
        async with self._redis.pipeline(transaction=False) as pipe:
            # The heartbeat goes first: a registered worker is never seen without one.
            pipe.set(
                self._keys.worker(self._identity.id),
                codec.dumps(self._identity.model_dump()),
                px=self._ttl_ms,
            )
            pipe.sadd(self._keys.workers, self._identity.id)
            await pipe.execute()

    async def reclaim(self) -> int:
        """Release the jobs of registered workers that have no heartbeat; return how many."""
        released = 0
        for raw_id in await smembers(self._redis, self._keys.workers):
            worker_id = raw_id.decode()
            if worker_id == self._identity.id or await self._redis.exists(self._keys.worker(worker_id)):
                continue
            running_key = self._keys.running(worker_id)
            for raw_job in await smembers(self._redis, running_key):
                job_id = raw_job.decode()
                if not await self._redis.exists(arq_backend.result_key(job_id)):
                    released += await self._redis.delete(arq_backend.in_progress_key(job_id))
            leases = await release_leases_of(self._redis, self._keys, worker_id)
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.delete(running_key)
                pipe.srem(self._keys.workers, worker_id)
                await pipe.execute()
            log.warning(
                "worker.reclaimed", dead_worker=worker_id, jobs_released=released, leases_released=leases
            )
        if released:
            self._on_reclaim()
        return released

    async def run(self) -> None:
        while True:
            try:
                await self.beat()
                await self.reclaim()
            except (RedisError, OSError) as exc:  # Redis away: keep trying, the jobs wait in it
                log.warning("worker.heartbeat_failed", error=str(exc))
            except Exception:  # a dead heartbeat would get this worker's jobs reclaimed
                log.exception("worker.heartbeat_error")
            raise_if_cancelling()
            await asyncio.sleep(self._interval_s)

    async def stop(self) -> None:
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.delete(self._keys.worker(self._identity.id))
            pipe.delete(self._keys.running(self._identity.id))
            pipe.delete(self._keys.leases(self._identity.id))
            pipe.srem(self._keys.workers, self._identity.id)
            await pipe.execute()

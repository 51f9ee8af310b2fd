"""What workers record in Redis for others to read: heartbeats and job progress."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import cast

from redis.asyncio import Redis

from learning_memory.shared import codec
from learning_memory.shared.jobs import JobProgress, WorkerIdentity
from learning_memory.shared.keys import Keys


async def smembers(redis: Redis, key: str) -> set[bytes]:
    # redis-py types set commands as sync-or-async; on an asyncio client they are awaitable.
    return await cast(Awaitable[set[bytes]], redis.smembers(key))


async def live_workers(redis: Redis, keys: Keys) -> list[WorkerIdentity]:
    """Identities of workers whose heartbeat is current."""
    ids = [raw.decode() for raw in await smembers(redis, keys.workers)]
    if not ids:
        return []
    beats = await redis.mget([keys.worker(worker_id) for worker_id in ids])
    return [WorkerIdentity.model_validate(codec.loads(beat)) for beat in beats if beat is not None]


async def read_progress(redis: Redis, keys: Keys, job_id: str) -> JobProgress | None:
    raw = await redis.get(keys.progress(job_id))
    return None if raw is None else JobProgress.model_validate(codec.loads(raw))

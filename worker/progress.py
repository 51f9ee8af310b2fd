"""Progress a job reports, kept in Redis where the awaiting server (or get_job_status) reads it."""

from __future__ import annotations

import time

from redis.asyncio import Redis

from learning_memory.shared import codec
from learning_memory.shared.jobs import JobProgress
from learning_memory.shared.keys import Keys

PROGRESS_TTL_S = 24 * 3600
# A job may report per file or per batch; Redis needs to hear of it only a few times a second.
MIN_INTERVAL_S = 0.1


class RedisProgress:
    def __init__(self, redis: Redis, keys: Keys, job_id: str) -> None:
        self._redis = redis
        self._key = keys.progress(job_id)
        self._last = 0.0

    async def __call__(self, current: float, total: float | None = None, message: str | None = None) -> None:
        now = time.monotonic()
        final = total is not None and current >= total
        if not final and now - self._last < MIN_INTERVAL_S:
            return
        self._last = now
        progress = JobProgress(current=current, total=total, message=message)
        await self._redis.set(self._key, codec.dumps(progress.model_dump()), ex=PROGRESS_TTL_S)

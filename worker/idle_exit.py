"""An autostarted worker leaves once nothing needs it.

A server starts a worker for itself when none is alive; without this, that worker (and the
model it holds) would outlive every session. It leaves after ``worker_idle_exit_s`` during
which it ran no job, had no code vector to fill, found no job queued and saw no live session.
It leaves the way an operator stops it (SIGTERM), so the same grace and clean-up apply. A
worker an operator started runs without this watch and stays.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Iterable

from redis.asyncio import Redis
from redis.exceptions import RedisError

from learning_memory.shared.arq_backend import QueueWorker
from learning_memory.shared.keys import Keys
from learning_memory.shared.log import get_logger
from learning_memory.shared.sessions import live_sessions

log = get_logger(__name__)

# How often the watch looks; leaving a little after the idle time is up costs nothing.
CHECK_EVERY_S = 5.0


def _terminate_self() -> None:
    os.kill(os.getpid(), signal.SIGTERM)


class IdleExit:
    def __init__(
        self,
        redis: Redis,
        keys: Keys,
        workers: Iterable[QueueWorker],
        *,
        filling: Callable[[], bool],
        idle_s: float,
        check_every_s: float = CHECK_EVERY_S,
        leave: Callable[[], None] = _terminate_self,
    ) -> None:
        self._redis = redis
        self._keys = keys
        self._workers = list(workers)
        self._filling = filling
        self._idle_s = idle_s
        self._check_every_s = min(check_every_s, idle_s)
        self._leave = leave

    async def needed_for(self) -> str | None:
        """What keeps the worker here, or None when nothing does. Sessions are read last."""
        if any(not task.done() for worker in self._workers for task in worker.tasks.values()):
            return "job"
        if self._filling():
            return "vectors"
        for queue in self._keys.queues:
            if await self._redis.zcard(queue):
                return "queued"
        if await live_sessions(self._redis, self._keys):
            return "session"
        return None

    async def run(self) -> None:
        idle_since = time.monotonic()
        last: str | None = "start"
        while True:
            try:
                reason = await self.needed_for()
            except (RedisError, OSError):
                reason = "redis unreachable"  # cannot tell whether work waits: stay
            now = time.monotonic()
            if reason != last:
                log.debug("worker.needed" if reason else "worker.idle", reason=reason, idle_s=self._idle_s)
                last = reason
            if reason is not None:
                idle_since = now
            elif now - idle_since >= self._idle_s:
                log.info("worker.idle_exit", idle_s=self._idle_s)
                self._leave()
                return
            await asyncio.sleep(self._check_every_s)

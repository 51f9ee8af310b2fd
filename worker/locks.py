"""Locks on one project's (or repository's) index, held across processes and machines.

Two writers on one project's rows and points would race: indexing, re-indexing a file, deleting
a project and writing filled-in vectors each hold the project's lock, and indexing commits holds
the repository's. Within a process an asyncio lock serialises the holders; a worker connected
to Redis also takes a lease there (SET NX with a TTL, renewed while held, released only by its
holder), so that workers sharing one store (``compose.yaml``'s replicas on a Qdrant server)
take turns too. A holder killed without releasing loses its lease when a live worker finds it
dead (its heartbeat gone: :func:`release_leases_of`), or at the latest when the TTL runs out.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable
from typing import cast

from redis.asyncio import Redis
from redis.exceptions import RedisError

from learning_memory.shared.keys import Keys
from learning_memory.shared.log import get_logger
from learning_memory.shared.state import smembers

log = get_logger(__name__)

LEASE_TTL_S = 30.0
# How often a waiter tries again: a lease is released by a delete, not announced.
RETRY_EVERY_S = 0.1
# Delete or extend the lease only if it is still ours (it may have lapsed and been taken).
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
# Delete each lease of a dead worker that still carries its token (one of ours may have replaced it).
_RELEASE_OWNED = (
    "local n = 0 for _, key in ipairs(KEYS) do local v = redis.call('get', key)"
    " if v and string.sub(v, 1, string.len(ARGV[1])) == ARGV[1] then n = n + redis.call('del', key) end"
    " end return n"
)
_RENEW = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then"
    " return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
)


class Locks:
    """One per :class:`~worker.context.WorkerServices`; without Redis (inline mode, one process) the
    asyncio locks alone."""

    def __init__(
        self, redis: Redis | None = None, keys: Keys | None = None, *, ttl_s: float = LEASE_TTL_S
    ) -> None:
        self._local: dict[str, asyncio.Lock] = {}
        self._redis = redis
        self._keys = keys
        self._owner: str | None = None
        self._ttl_ms = int(ttl_s * 1000)

    def connect(self, redis: Redis, keys: Keys, owner: str | None = None) -> None:
        """Take leases in Redis from now on; ``owner`` (the worker's id) marks them as its own,
        so that they are released as soon as the worker is found dead."""
        self._redis, self._keys, self._owner = redis, keys, owner

    @contextlib.asynccontextmanager
    async def hold(self, kind: str, name: str) -> AsyncIterator[None]:
        """Hold the lock on ``name`` (a project, a repository) of ``kind``; waits its turn."""
        local = self._local.setdefault(f"{kind}:{name}", asyncio.Lock())
        if local.locked():
            log.info("lock.waiting", kind=kind, name=name)
        async with local:
            if self._redis is None or self._keys is None:
                yield
                return
            key = self._keys.lock(kind, name)
            token = f"{self._owner}:{uuid.uuid4().hex}" if self._owner else uuid.uuid4().hex
            await self._acquire(self._redis, key, token, kind, name)
            if self._owner:
                await cast(Awaitable[int], self._redis.sadd(self._keys.leases(self._owner), key))
            renewal = asyncio.create_task(self._renew(self._redis, key, token), name=f"lease-{key}")
            try:
                yield
            finally:
                renewal.cancel()
                await asyncio.gather(renewal, return_exceptions=True)
                # Redis away: the lease lapses by itself, and the work done stands.
                with contextlib.suppress(RedisError, OSError):
                    await cast(Awaitable[int], self._redis.eval(_RELEASE, 1, key, token))
                    if self._owner:
                        await cast(Awaitable[int], self._redis.srem(self._keys.leases(self._owner), key))

    async def _acquire(self, redis: Redis, key: str, token: str, kind: str, name: str) -> None:
        waiting = False
        while not await redis.set(key, token, nx=True, px=self._ttl_ms):
            if not waiting:
                waiting = True
                log.info("lock.waiting_for_another_worker", kind=kind, name=name)
            await asyncio.sleep(RETRY_EVERY_S)

    async def _renew(self, redis: Redis, key: str, token: str) -> None:
        while True:
            await asyncio.sleep(self._ttl_ms / 3000)  # well before it lapses
            try:
                if not await cast(Awaitable[int], redis.eval(_RENEW, 1, key, token, str(self._ttl_ms))):
                    log.warning("lock.lease_lost", key=key)
                    return
            except (RedisError, OSError) as exc:  # Redis away: try again next round
                log.warning("lock.renew_failed", key=key, error=str(exc))


async def release_leases_of(redis: Redis, keys: Keys, worker_id: str) -> int:
    """Release the leases a dead worker held (those another worker has not taken since); return
    how many. Its waiters then go on at once rather than when the lease would have lapsed."""
    held = [member.decode() for member in await smembers(redis, keys.leases(worker_id))]
    released = 0
    if held:
        released = int(
            await cast(Awaitable[int], redis.eval(_RELEASE_OWNED, len(held), *held, f"{worker_id}:"))
        )
    await redis.delete(keys.leases(worker_id))
    return released

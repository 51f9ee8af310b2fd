"""Project locks across processes: leases in a real Redis, a holder killed with kill -9."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from learning_memory.shared.keys import Keys
from learning_memory.worker.heartbeat import Heartbeat
from learning_memory.worker.locks import Locks
from learning_memory.worker.services import new_identity
from tests.conftest import REDIS_URL
from tests.helpers import redis_answer, wait_for

pytestmark = pytest.mark.redis


async def test_two_workers_take_turns_on_one_project(namespace: str, redis: Redis) -> None:
    keys = Keys(namespace)
    # Two clients, as two worker processes have.
    other_client = Redis.from_url(REDIS_URL)
    first, second = Locks(redis, keys), Locks(other_client, keys)
    order: list[str] = []
    release = asyncio.Event()

    async def hold(locks: Locks, name: str, until: asyncio.Event | None = None) -> None:
        async with locks.hold("code", "shop"):
            order.append(f"{name} in")
            if until is not None:
                await until.wait()
            order.append(f"{name} out")

    holder = asyncio.create_task(hold(first, "first", release))
    await wait_for(lambda: _has(order, "first in"), timeout=10, what="the first worker's lock")
    waiter = asyncio.create_task(hold(second, "second"))
    other = asyncio.create_task(_enter_project(second, "books"))  # another project is not held up
    await asyncio.wait_for(asyncio.shield(other), 10)
    assert "second in" not in order  # it waits while the first worker holds the project
    release.set()
    await asyncio.wait_for(asyncio.gather(holder, waiter, other), 10)
    await other_client.aclose()
    assert order.index("first out") < order.index("second in")
    assert not await redis.exists(keys.lock("code", "shop"))  # released by its holder


async def _has(order: list[str], item: str) -> bool:
    return item in order


async def test_a_lease_is_renewed_while_held(namespace: str, redis: Redis) -> None:
    keys = Keys(namespace)
    other_client = Redis.from_url(REDIS_URL)
    holder, other = Locks(redis, keys, ttl_s=0.3), Locks(other_client, keys)
    key = keys.lock("code", "shop")
    renewals: list[int] = []
    last = [10**9]

    async def renewed_thrice() -> bool:
        ttl = int(await redis.pttl(key))
        if ttl > last[0]:
            renewals.append(ttl)
        last[0] = ttl
        return len(renewals) >= 3

    async with holder.hold("code", "shop"):
        waiter = asyncio.create_task(_enter(other))
        # Held for several times the lease's TTL: the other worker is still waiting.
        await wait_for(renewed_thrice, timeout=10, what="three renewals", interval=0.01)
        assert not waiter.done()
    await asyncio.wait_for(waiter, 10)
    await other_client.aclose()


async def _enter(locks: Locks) -> None:
    async with locks.hold("code", "shop"):
        pass


HOLD_FOREVER = """
import asyncio, sys
from redis.asyncio import Redis
from learning_memory.shared.keys import Keys
from learning_memory.worker.services import new_identity
from learning_memory.worker.heartbeat import Heartbeat
from learning_memory.worker.locks import Locks

async def main() -> None:
    locks = Locks(ttl_s=float(sys.argv[3]))
    locks.connect(Redis.from_url(sys.argv[1]), Keys(sys.argv[2]), owner=sys.argv[4] or None)
    async with locks.hold("code", "shop"):
        print("held", flush=True)
        await asyncio.Event().wait()

asyncio.run(main())
"""


async def test_a_lock_held_by_a_killed_worker_is_free_once_its_lease_lapses(
    namespace: str, redis: Redis
) -> None:
    keys = Keys(namespace)
    async with _killed_holder(namespace, ttl_s=1.0, owner=""):
        assert await redis.exists(keys.lock("code", "shop"))
        await asyncio.wait_for(_enter(Locks(redis, keys)), 10)


async def test_a_dead_workers_leases_go_when_it_is_reclaimed(namespace: str, redis: Redis) -> None:
    # A lease that would last 60 s: the lock is free as soon as a live worker's heartbeat finds
    # the holder dead, and a lease another worker has taken since is left alone.
    keys = Keys(namespace)
    await redis_answer(redis.sadd(keys.workers, "dead-worker"))  # registered, and no heartbeat
    async with _killed_holder(namespace, ttl_s=60.0, owner="dead-worker"):
        assert await redis_answer(redis.smembers(keys.leases("dead-worker"))) == {
            keys.lock("code", "shop").encode()
        }
        await redis.set(keys.lock("git", "repo"), "live-worker:token")
        await redis_answer(
            redis.sadd(keys.leases("dead-worker"), keys.lock("git", "repo"))
        )  # taken over since
        live = Heartbeat(redis, keys, new_identity(), interval_s=1.0, ttl_s=5.0)
        await live.reclaim()
        await asyncio.wait_for(_enter(Locks(redis, keys)), 5)
        assert await redis.get(keys.lock("git", "repo")) == b"live-worker:token"
        assert not await redis.exists(keys.leases("dead-worker"))


@contextlib.asynccontextmanager
async def _killed_holder(namespace: str, *, ttl_s: float, owner: str) -> AsyncIterator[None]:
    """A process that took the "shop" lease, killed with kill -9 (no release)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        HOLD_FOREVER,
        REDIS_URL,
        namespace,
        str(ttl_s),
        owner,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        assert (await asyncio.wait_for(proc.stdout.readline(), 30)).strip() == b"held"
        proc.kill()
        await asyncio.wait_for(proc.wait(), 10)
        yield
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def _enter_project(locks: Locks, project: str) -> None:
    async with locks.hold("code", project):
        pass

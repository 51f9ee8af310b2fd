"""An autostarted worker's idle watch and a server's session entry, on fakeredis."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from fakeredis.aioredis import FakeRedis

from learning_memory.server.transport.session import keep_session
from learning_memory.shared.arq_backend import QueueWorker
from learning_memory.shared.keys import Keys, Queue
from learning_memory.shared.sessions import live_sessions, renew_session
from learning_memory.worker.idle_exit import IdleExit
from tests.helpers import wait_for

KEYS = Keys("unit")


class _Worker:
    """What the watch reads of a queue worker: its running job tasks."""

    def __init__(self) -> None:
        self.tasks: dict[str, asyncio.Future[None]] = {}


@pytest.fixture
async def redis() -> AsyncIterator[FakeRedis]:
    fake = FakeRedis()
    yield fake
    await fake.aclose()


class _CountingWatch(IdleExit):
    """Counts its looks, so a test can let several idle times pass without sleeping."""

    looks = 0

    async def needed_for(self) -> str | None:
        self.looks += 1
        return await super().needed_for()


async def _looked(watch: _CountingWatch, times: int) -> bool:
    return watch.looks >= times


def _watch(
    redis: FakeRedis, worker: _Worker, left: list[bool], filling: list[bool] | None = None
) -> _CountingWatch:
    return _CountingWatch(
        redis,
        KEYS,
        [cast(QueueWorker, worker)],
        filling=lambda: bool(filling),
        idle_s=0.05,
        check_every_s=0.01,
        leave=lambda: left.append(True),
    )


async def test_nothing_to_do_and_no_session_means_leaving(redis: FakeRedis) -> None:
    left: list[bool] = []
    watch = _watch(redis, _Worker(), left)
    assert await watch.needed_for() is None
    await asyncio.wait_for(watch.run(), 5)
    assert left == [True]


async def test_each_thing_that_needs_the_worker_keeps_it(redis: FakeRedis) -> None:
    worker, left, filling = _Worker(), list[bool](), [True]
    watch = _watch(redis, worker, left, filling)
    assert await watch.needed_for() == "vectors"
    filling.clear()
    job: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    worker.tasks["j"] = job
    assert await watch.needed_for() == "job"
    job.set_result(None)
    await redis.zadd(KEYS.queue(Queue.BATCH), {"queued-job": 1})
    assert await watch.needed_for() == "queued"
    await redis.delete(KEYS.queue(Queue.BATCH))
    await renew_session(redis, KEYS, "a-session")
    assert await watch.needed_for() == "session"
    await redis.zadd(KEYS.sessions, {"a-session": time.time() - 1})  # lapsed: its server died
    assert await watch.needed_for() is None


async def test_the_idle_time_restarts_whenever_the_worker_is_needed(redis: FakeRedis) -> None:
    left: list[bool] = []
    await renew_session(redis, KEYS, "a-session")
    watch = _watch(redis, _Worker(), left)
    task = asyncio.create_task(watch.run())
    try:
        # Many looks, several idle times apart, while the session lives: the watch stays.
        await wait_for(lambda: _looked(watch, 20), timeout=5, what="twenty looks")
        assert not left and not task.done()
        await redis.zrem(KEYS.sessions, "a-session")
        await wait_for(lambda: _done(task), timeout=5, what="the watch to end")
        assert left == [True]
    finally:
        task.cancel()


async def _done(task: asyncio.Task[Any]) -> bool:
    return task.done()


async def test_redis_unreachable_keeps_the_worker(tmp_path: object) -> None:
    left: list[bool] = []
    down = FakeRedis(connected=False)
    watch = _watch(down, _Worker(), left)
    task = asyncio.create_task(watch.run())
    await wait_for(lambda: _looked(watch, 20), timeout=5, what="twenty looks")
    assert not left and not task.done()
    task.cancel()


async def test_a_session_registers_before_starting_a_worker_and_leaves_when_closed(redis: FakeRedis) -> None:
    seen: list[int] = []

    async def start_worker() -> None:
        seen.append(await live_sessions(redis, KEYS))

    task = asyncio.create_task(keep_session(redis, KEYS, start_worker, renew_s=0.01))
    await wait_for(lambda: _started(seen), timeout=5, what="the worker start")
    assert seen == [1]  # the entry existed before a worker was looked for
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert await live_sessions(redis, KEYS) == 0


async def _started(seen: list[int]) -> bool:
    return bool(seen)


async def test_a_session_survives_redis_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    down = FakeRedis(connected=False)
    started: list[bool] = []

    async def start_worker() -> None:
        started.append(True)

    task = asyncio.create_task(keep_session(down, KEYS, start_worker, renew_s=0.01))
    await wait_for(lambda: _started(cast(list[int], started)), timeout=5, what="the worker start")
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert task.cancelled()

"""Heartbeat, reclaiming a dead worker's jobs, and the autostart lock, on fakeredis."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from fakeredis.aioredis import FakeRedis

from learning_memory.server import autostart
from learning_memory.shared.arq_backend import in_progress_key, result_key
from learning_memory.shared.keys import Keys
from learning_memory.shared.settings import Settings, load_settings
from learning_memory.shared.state import live_workers
from learning_memory.worker.heartbeat import Heartbeat
from learning_memory.worker.services import new_identity
from tests.helpers import redis_answer

KEYS = Keys("unit")


@pytest.fixture
async def redis() -> AsyncIterator[FakeRedis]:
    fake = FakeRedis()
    yield fake
    await fake.aclose()


def _heartbeat(redis: FakeRedis, woken: list[bool] | None = None) -> Heartbeat:
    return Heartbeat(
        redis,
        KEYS,
        new_identity(),
        interval_s=0.01,
        ttl_s=60,
        on_reclaim=lambda: woken.append(True) if woken is not None else None,
    )


async def test_beat_makes_a_worker_live_and_stop_removes_it(redis: FakeRedis) -> None:
    beat = _heartbeat(redis)
    await beat.beat()
    assert [w.id for w in await live_workers(redis, KEYS)] == [beat._identity.id]
    await beat.stop()
    assert await live_workers(redis, KEYS) == []


async def test_a_dead_workers_unfinished_jobs_are_released(redis: FakeRedis) -> None:
    woken: list[bool] = []
    alive, dead = _heartbeat(redis, woken), _heartbeat(redis)
    await alive.beat()
    await redis_answer(redis.sadd(KEYS.workers, dead._identity.id))  # registered, but its heartbeat is gone
    await redis_answer(redis.sadd(KEYS.running(dead._identity.id), "unfinished", "finished"))
    await redis.set(in_progress_key("unfinished"), b"1")
    await redis.set(in_progress_key("finished"), b"1")
    await redis.set(result_key("finished"), b"{}")
    assert await alive.reclaim() == 1
    assert woken == [True]
    assert not await redis.exists(in_progress_key("unfinished"))
    assert await redis.exists(in_progress_key("finished"))  # its result is in: leave it
    assert await redis_answer(redis.smembers(KEYS.workers)) == {alive._identity.id.encode()}
    assert await alive.reclaim() == 0


async def test_a_live_workers_jobs_are_left_alone(redis: FakeRedis) -> None:
    first, second = _heartbeat(redis), _heartbeat(redis)
    await first.beat()
    await second.beat()
    await redis_answer(redis.sadd(KEYS.running(second._identity.id), "job"))
    await redis.set(in_progress_key("job"), b"1")
    assert await first.reclaim() == 0
    assert await redis.exists(in_progress_key("job"))


async def test_heartbeat_loop_survives_redis_errors(
    redis: FakeRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    beat = _heartbeat(redis)
    calls = 0

    async def flaky() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConnectionError("gone")
        if calls == 2:
            raise RuntimeError("bug")

    monkeypatch.setattr(beat, "beat", flaky)
    task = asyncio.create_task(beat.run())

    async def thrice() -> bool:
        return calls >= 3

    from tests.helpers import wait_for

    await wait_for(thrice, timeout=5, what="three heartbeat rounds")
    task.cancel()


def _settings(tmp_path: object) -> Settings:
    return load_settings(namespace="unit", data_dir=tmp_path)


async def test_autostart_spawns_once_for_sessions_starting_together(
    redis: FakeRedis, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    spawned: list[Settings] = []
    monkeypatch.setattr(autostart, "spawn_worker", spawned.append)
    settings = _settings(tmp_path)
    results = await asyncio.gather(*(autostart.ensure_worker(redis, settings) for _ in range(10)))
    assert results.count(True) == 1 and len(spawned) == 1


async def test_no_autostart_while_a_worker_is_alive(
    redis: FakeRedis, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    spawned: list[Settings] = []
    monkeypatch.setattr(autostart, "spawn_worker", spawned.append)
    await _heartbeat(redis).beat()
    assert await autostart.ensure_worker(redis, _settings(tmp_path)) is False
    assert spawned == []


async def test_autostart_with_redis_down_starts_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    spawned: list[Settings] = []
    monkeypatch.setattr(autostart, "spawn_worker", spawned.append)
    down = FakeRedis(connected=False)
    assert await autostart.ensure_worker(down, _settings(tmp_path)) is False
    assert spawned == []

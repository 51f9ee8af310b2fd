"""Fixtures: a private Redis namespace per test, settings and env for it, real worker processes."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from learning_memory.server.transport.arq import ArqTransport
from learning_memory.shared.keys import Keys
from learning_memory.shared.settings import Settings, load_settings
from learning_memory.shared.state import live_workers
from tests.helpers import start_worker, stop_process, wait_for

# A database of its own plus a namespace per test: parallel runs never see each other's keys.
REDIS_URL = os.environ.get("LMS_TEST_REDIS_URL", "redis://127.0.0.1:6379/14")
# Fast heartbeats, so crash recovery is quick to observe.
HEARTBEAT_S = 0.25


@pytest.fixture
def namespace() -> str:
    return f"lmstest-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def lms_env(namespace: str, tmp_path: Path) -> dict[str, str]:
    """Environment for processes (server, worker) of this test."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMS_")}
    env.update(
        LMS_REDIS_URL=REDIS_URL,
        LMS_NAMESPACE=namespace,
        LMS_DATA_DIR=str(tmp_path / "data"),
        LMS_JOURNAL_DIR=str(tmp_path / "journal"),
        LMS_HEARTBEAT_INTERVAL_S=str(HEARTBEAT_S),
        LMS_QUEUE="arq",
        LMS_LOG_LEVEL="INFO",
    )
    return env


@pytest.fixture
def settings(lms_env: dict[str, str]) -> Settings:
    return load_settings(
        redis_url=REDIS_URL,
        namespace=lms_env["LMS_NAMESPACE"],
        data_dir=Path(lms_env["LMS_DATA_DIR"]),
        journal_dir=Path(lms_env["LMS_JOURNAL_DIR"]),
        heartbeat_interval_s=HEARTBEAT_S,
        queue="arq",
        autostart_worker=False,
    )


@pytest.fixture
async def redis(namespace: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(REDIS_URL)
    yield client
    keys = [key async for key in client.scan_iter(match=f"{namespace}:*", count=500)]
    if keys:
        await client.delete(*keys)
    await client.aclose()


@pytest.fixture
async def arq_jobs(settings: Settings, redis: Redis) -> AsyncIterator[ArqTransport]:
    """The arq job client of this test's namespace (``redis`` first, so keys outlive the client)."""
    client = ArqTransport(settings)
    yield client
    await client.close()


WorkerFactory = Callable[[], subprocess.Popen[bytes]]


@pytest.fixture
def worker_factory(lms_env: dict[str, str], tmp_path: Path) -> Iterator[WorkerFactory]:
    """Starts real worker processes; all are stopped at teardown."""
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        proc = start_worker(lms_env, tmp_path / "worker.log")
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        stop_process(proc)


@pytest.fixture
async def live_worker(
    settings: Settings, redis: Redis, worker_factory: WorkerFactory
) -> subprocess.Popen[bytes]:
    """One real worker process, already heartbeating."""
    proc = worker_factory()
    await wait_for_worker(redis, settings.namespace, proc.pid)
    return proc


async def wait_for_worker(redis: Redis, namespace: str, pid: int | None = None, timeout: float = 60) -> int:
    """Wait until a worker (with ``pid``, if given) has a live heartbeat; return its pid."""

    async def alive() -> int | None:
        for worker in await live_workers(redis, Keys(namespace)):
            if pid is None or worker.pid == pid:
                return worker.pid
        return None

    return await wait_for(alive, timeout=timeout, what=f"a live worker heartbeat (pid {pid})")

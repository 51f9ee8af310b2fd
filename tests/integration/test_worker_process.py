"""A real worker process, a real redis-server, and the arq job client."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import pytest
from redis.asyncio import Redis

from learning_memory.server.transport import JobStillRunning
from learning_memory.server.transport.arq import ArqTransport
from learning_memory.shared.contracts.diagnostics import NOOP, PING, PING_BATCH, NoopRequest, PingRequest
from learning_memory.shared.errors import UnavailableError
from learning_memory.shared.jobs import JobProgress
from learning_memory.shared.keys import Keys
from learning_memory.shared.settings import Settings
from tests.conftest import WorkerFactory, wait_for_worker
from tests.helpers import start_job, stop_process, wait_for

pytestmark = pytest.mark.redis
Worker = subprocess.Popen[bytes]


async def _in_progress(client: ArqTransport, job_id: str) -> bool:
    return (await client.status(job_id)).state == "in_progress"


async def _running(client: ArqTransport, job_id: str) -> bool:
    """Started and reporting progress: past arq's in-progress mark, the worker has also recorded
    the job as its own, which is what lets another worker reclaim it at once if this one dies."""
    status = await client.status(job_id)
    return status.state == "in_progress" and status.progress is not None


async def test_ping_round_trip_reports_the_worker(live_worker: Worker, arq_jobs: ArqTransport) -> None:
    answer = await arq_jobs.run(PING, PingRequest(), budget_s=10)
    assert answer.worker.pid == live_worker.pid
    assert answer.job_try == 1
    status = await arq_jobs.status(answer.job_id)
    assert status.state == "complete"
    assert status.result is not None and status.result["worker"]["pid"] == live_worker.pid
    assert status.enqueued_at is not None and status.finished_at is not None
    for _ in range(50):  # many in a row: no wake-up is ever lost
        await arq_jobs.run(NOOP, NoopRequest(), budget_s=10)
    assert [w["pid"] for w in await arq_jobs.worker_info()] == [live_worker.pid]


async def test_progress_is_relayed_and_budget_returns_job_id(
    live_worker: Worker, arq_jobs: ArqTransport
) -> None:
    seen: list[JobProgress] = []

    async def on_progress(progress: JobProgress) -> None:
        seen.append(progress)

    request = PingRequest(delay_ms=2500)
    with pytest.raises(JobStillRunning) as running:
        await arq_jobs.run(PING, request, budget_s=1.2, on_progress=on_progress)
    job_id = running.value.job_id
    assert seen and seen[-1].total == 2.5
    status = await arq_jobs.status(job_id)
    assert status.state == "in_progress" and status.progress is not None
    answer = await arq_jobs.run(PING, request, budget_s=10, job_id=job_id)  # joined, not run again
    assert answer.job_id == job_id and answer.job_try == 1


async def test_a_long_batch_job_does_not_delay_interactive_jobs(
    live_worker: Worker, arq_jobs: ArqTransport
) -> None:
    batch = [await start_job(arq_jobs, PING_BATCH, PingRequest(delay_ms=3000)) for _ in range(2)]
    await wait_for(lambda: _in_progress(arq_jobs, batch[0]), timeout=10, what="the batch job to start")
    for _ in range(5):
        await arq_jobs.run(PING, PingRequest(), budget_s=10)
    # Every interactive job finished while the batch queue was still busy.
    assert (await arq_jobs.status(batch[0])).state == "in_progress"
    assert (await arq_jobs.status(batch[1])).state == "queued"


async def test_sigkill_mid_job_is_retried_by_the_next_worker(
    live_worker: Worker, arq_jobs: ArqTransport, worker_factory: WorkerFactory
) -> None:
    job_id = await start_job(arq_jobs, PING, PingRequest(delay_ms=1500))
    await wait_for(lambda: _running(arq_jobs, job_id), timeout=10, what="the job to start")
    live_worker.kill()
    live_worker.wait(10)
    second = worker_factory()
    answer = await arq_jobs.run(PING, PingRequest(delay_ms=1500), budget_s=60, job_id=job_id)
    assert answer.worker.pid == second.pid
    assert answer.job_try == 2
    # The dead worker was reaped from the registry.
    assert [w["pid"] for w in await arq_jobs.worker_info()] == [second.pid]


async def test_sigterm_lets_a_running_job_finish_then_exits(
    live_worker: Worker, arq_jobs: ArqTransport
) -> None:
    job_id = await start_job(arq_jobs, PING, PingRequest(delay_ms=800))
    await wait_for(lambda: _in_progress(arq_jobs, job_id), timeout=10, what="the job to start")
    live_worker.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(live_worker.wait, 30) == 0
    assert (await arq_jobs.status(job_id)).state == "complete"
    # A clean exit leaves no heartbeat behind.
    assert await arq_jobs.worker_info() == []


async def test_no_worker_is_a_clear_unavailable_error(settings: Settings, redis: Redis) -> None:
    client = ArqTransport(settings.model_copy(update={"worker_start_grace_s": 0.5}))
    try:
        with pytest.raises(UnavailableError, match="learning-memory worker"):
            await client.run(NOOP, NoopRequest(), budget_s=30)
    finally:
        await client.close()


async def test_redis_unreachable_is_unavailable_not_a_hang(settings: Settings) -> None:
    client = ArqTransport(settings.model_copy(update={"redis_url": "redis://127.0.0.1:1/0"}))
    try:
        with pytest.raises(UnavailableError, match="unreachable"):
            await asyncio.wait_for(client.run(NOOP, NoopRequest(), budget_s=30), 20)
        with pytest.raises(UnavailableError):
            await client.status("x")
        with pytest.raises(UnavailableError):
            await client.worker_info()
    finally:
        await client.close()


async def test_status_of_queued_and_unknown_jobs(
    settings: Settings, redis: Redis, arq_jobs: ArqTransport
) -> None:
    job_id = await start_job(arq_jobs, PING, PingRequest(), job_id="fixed-id-1")
    assert job_id == f"{settings.namespace}.fixed-id-1"
    assert await start_job(arq_jobs, PING, PingRequest(), job_id="fixed-id-1") == job_id
    assert await start_job(arq_jobs, PING, PingRequest(), job_id=job_id) == job_id
    status = await arq_jobs.status(job_id)
    assert status.state == "queued" and status.function == "ping"
    assert (await arq_jobs.status("never-was")).state == "not_found"
    assert await redis.zcard(Keys(settings.namespace).queue(PING.queue)) == 1


def test_worker_check_passes_once_a_worker_is_up(lms_env: dict[str, str]) -> None:
    """``learning-memory worker --check`` (the container health check) fails with no worker and
    passes once one beats."""
    check = [sys.executable, "-m", "learning_memory", "worker", "--check"]
    assert subprocess.run(check, env=lms_env, capture_output=True, timeout=60).returncode == 1
    proc = subprocess.Popen(
        [sys.executable, "-m", "learning_memory", "worker"],
        env=lms_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        async def healthy() -> bool:
            probe = await asyncio.create_subprocess_exec(
                *check, env=lms_env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
            )
            return await probe.wait() == 0

        asyncio.run(wait_for(healthy, timeout=60, what="worker --check to pass", interval=0.2))
    finally:
        assert stop_process(proc) == 0


async def test_autostart_from_many_sessions_starts_one_detached_worker(
    settings: Settings, redis: Redis
) -> None:
    from learning_memory.server.autostart import ensure_worker
    from learning_memory.server.transport.arq import connect
    from tests.helpers import kill_pid

    sessions = [connect(settings) for _ in range(5)]  # as separate server processes would
    try:
        started = await asyncio.gather(*(ensure_worker(session, settings) for session in sessions))
        assert started.count(True) == 1
        pid = await wait_for_worker(redis, settings.namespace)
        client = ArqTransport(settings)
        try:
            answer = await client.run(PING, PingRequest(), budget_s=30)
            assert answer.worker.pid == pid
        finally:
            await client.close()
        # Once up, the worker frees the lock so a replacement could start at once later.
        assert not await redis.exists(Keys(settings.namespace).autostart_lock)
        assert (settings.log_dir / "worker.log").exists()
        assert await ensure_worker(sessions[0], settings) is False  # one is alive
        kill_pid(pid)
    finally:
        for session in sessions:
            await session.aclose()


def test_a_second_worker_on_the_embedded_store_stops_with_a_clear_message(
    lms_env: dict[str, str], live_worker: Worker
) -> None:
    second = subprocess.run(
        [sys.executable, "-m", "learning_memory", "worker"],
        env=lms_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 1
    assert "LMS_QDRANT_URL" in second.stderr and str(live_worker.pid) in second.stderr
    assert "Traceback" not in second.stderr
    assert live_worker.poll() is None  # the first one is unharmed


async def test_memories_survive_a_worker_killed_without_warning(
    settings: Settings,
    redis: Redis,
    lms_env: dict[str, str],
    worker_factory: WorkerFactory,
    arq_jobs: ArqTransport,
) -> None:
    import uuid
    from datetime import UTC, datetime

    from learning_memory.shared.contracts.memory import (
        LIST_MEMORIES,
        STORE_MEMORY,
        ListMemoriesRequest,
        MemoryRecord,
    )
    from learning_memory.shared.contracts.memory import StoreMemoryRequest as Store

    lms_env["LMS_EMBEDDING_MODEL"] = "hashing:64"  # this test is about durability, not the model
    first = worker_factory()
    await wait_for_worker(redis, settings.namespace, first.pid)
    ids = []
    for n in range(20):
        memory = MemoryRecord(
            id=str(uuid.uuid4()),
            content=f"fact {n}",
            category="fact",
            importance=0.5,
            tags=[],
            created_at=datetime.now(UTC),
        )
        ids.append((await arq_jobs.run(STORE_MEMORY, Store(memory=memory), budget_s=30)).id)
    first.kill()  # no flush, no goodbye
    first.wait(10)
    second = worker_factory()
    await wait_for_worker(redis, settings.namespace, second.pid)
    listed = await arq_jobs.run(LIST_MEMORIES, ListMemoriesRequest(limit=50, offset=0), budget_s=30)
    assert listed.total == 20
    assert [m.id for m in listed.results] == list(reversed(ids))

"""An autostarted worker leaves once idle, and the next session starts one: real processes, real Redis."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from redis.asyncio import Redis

from learning_memory.server.transport import create_transport
from learning_memory.shared.contracts.diagnostics import PING, PingRequest
from learning_memory.shared.keys import Keys
from learning_memory.shared.sessions import live_sessions
from learning_memory.shared.settings import Settings
from learning_memory.shared.state import live_workers
from tests.conftest import wait_for_worker
from tests.helpers import kill_pid, log_events, redis_answer, start_worker, stop_process, wait_for

pytestmark = pytest.mark.redis
IDLE_S = "1.0"


async def _no_worker(redis: Redis, settings: Settings) -> bool:
    return not await live_workers(redis, Keys(settings.namespace)) and not await redis_answer(
        redis.smembers(Keys(settings.namespace).workers)
    )


async def test_an_autostarted_worker_leaves_after_its_idle_time(
    lms_env: dict[str, str], settings: Settings, redis: Redis, tmp_path: Path
) -> None:
    env = {**lms_env, "LMS_WORKER_IDLE_EXIT_S": IDLE_S}
    proc = start_worker(env, tmp_path / "worker.log", "--exit-when-idle")
    try:
        await wait_for_worker(redis, settings.namespace, proc.pid)

        async def exited() -> bool:
            return proc.poll() is not None

        await wait_for(exited, timeout=60, what="the idle worker to exit")
        assert proc.returncode == 0
        assert await _no_worker(redis, settings)  # it left the way a stopped worker does
        assert log_events(tmp_path / "worker.log", "worker.idle_exit")
        assert "Traceback" not in (tmp_path / "worker.log").read_text()
    finally:
        stop_process(proc)


async def test_a_worker_started_by_an_operator_has_no_idle_exit(
    live_worker: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    # The heartbeat the fixture waits for can come before the line is in the log.
    async def started_events() -> list[dict[str, object]]:
        return log_events(tmp_path / "worker.log", "worker.started")

    (started,) = await wait_for(started_events, timeout=30, what="the worker's started event in its log")
    assert started["idle_exit_s"] is None


async def test_a_session_keeps_the_worker_it_started_and_its_end_lets_it_go(
    lms_env: dict[str, str], settings: Settings, redis: Redis
) -> None:
    keys = Keys(settings.namespace)
    session_settings = settings.model_copy(
        update={"autostart_worker": True, "worker_idle_exit_s": float(IDLE_S), "log_level": "DEBUG"}
    )
    client = await create_transport(session_settings, None)
    closed = False
    try:
        pid = await wait_for_worker(redis, settings.namespace)  # the session started one
        assert await live_sessions(redis, keys) == 1
        answer = await client.run(PING, PingRequest(), budget_s=60)
        assert answer.worker.pid == pid
        log_path = settings.log_dir / "worker.log"

        async def kept_for_the_session() -> bool:
            return any(e["reason"] == "session" for e in log_events(log_path, "worker.needed"))

        # Past its idle time with nothing to do, the worker stays for the live session.
        await wait_for(kept_for_the_session, timeout=60, what="the worker to see the live session")
        assert [w.pid for w in await live_workers(redis, keys)] == [pid]

        await client.close()
        closed = True
        assert await live_sessions(redis, keys) == 0

        async def stopped() -> bool:
            return "worker.stopped" in log_path.read_text() and await _no_worker(redis, settings)

        await wait_for(stopped, timeout=60, what="the worker to leave after the session")
        assert log_events(log_path, "worker.idle_exit")
    finally:
        if not closed:
            await client.close()
        for worker in await live_workers(redis, keys):
            kill_pid(worker.pid)

"""Bounded waits, process handling and job contexts shared by the tests. Nothing here sleeps
blindly: every wait is for a condition, with a deadline."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import BaseModel

from learning_memory.shared.jobs import JobSpec

if TYPE_CHECKING:
    from learning_memory.server.transport import Transport
    from learning_memory.worker.services import JobRun

T = TypeVar("T")


@asynccontextmanager
async def job_run(root: Path, embedding_model: str = "hashing:384") -> AsyncIterator[JobRun]:
    """A job run on inline services whose data lives under ``root``, closed after."""
    from learning_memory.worker.services import JobRun, WorkerServices
    from tests.mcp_thread import inline_settings

    services = WorkerServices(inline_settings(root, embedding_model))
    try:
        yield JobRun(services=services, job_id="test-job", job_try=1)
    finally:
        await services.close()


async def wait_for(
    condition: Callable[[], Awaitable[T | None]], *, timeout: float, what: str, interval: float = 0.02
) -> T:
    """Check ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = await condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)


def start_worker(env: dict[str, str], log_path: Path, *args: str) -> subprocess.Popen[bytes]:
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "learning_memory", "worker", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )


def log_events(log_path: Path, event: str) -> list[dict[str, Any]]:
    """The records of ``event`` in a process's JSON log (other lines, such as tracebacks, skipped)."""
    lines = log_path.read_text().splitlines() if log_path.exists() else []
    records = [json.loads(line) for line in lines if line.startswith("{")]
    return [record for record in records if record.get("event") == event]


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 20) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)
    return proc.returncode


def kill_pid(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def pids_of(command_part: str, env_entry: str) -> list[int]:
    """Processes whose command line contains ``command_part`` and environment ``env_entry``
    (e.g. ``LMS_NAMESPACE=...``): how a test finds a server a client library spawned."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if command_part in cmdline and env_entry.encode() in environ:
            found.append(int(proc.name))
    return found


async def start_job(transport: Transport, spec: JobSpec[Any, Any], request: BaseModel, **kwargs: Any) -> str:
    """Start a job without waiting for it (a budget of 0): its id, to join later with
    ``transport.run(..., job_id=...)``."""
    from learning_memory.server.transport import JobStillRunning

    try:
        await transport.run(spec, request, budget_s=0, **kwargs)
    except JobStillRunning as running:
        return running.job_id
    raise AssertionError("a budget of 0 hands back the job id")


async def redis_answer(call: Awaitable[T] | T) -> T:
    """What a Redis set or hash command answers: redis-py types those commands of its asyncio
    client as answering either an awaitable or a value."""
    return await cast(Awaitable[T], call)

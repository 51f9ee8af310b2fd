"""Worker subprocesses for benchmarks: started from this checkout, stopped for sure."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from redis.asyncio import Redis

from bench.common import BenchError, progress, wait_until
from learning_memory.shared.keys import Keys
from learning_memory.shared.state import live_workers

REPO_ROOT = Path(__file__).resolve().parent.parent
STOP_TIMEOUT_S = 15.0
# How much of a dead worker's log to show.
LOG_TAIL_CHARS = 2000


@dataclass
class WorkerProcess:
    label: str
    proc: asyncio.subprocess.Process
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)  # its LMS_* settings, for a job client of one's own

    @property
    def pid(self) -> int:
        return self.proc.pid

    def ensure_alive(self) -> None:
        """Raise with the worker's log when it has exited: waiting on a dead worker would only time out."""
        if self.proc.returncode is None:
            return
        tail = self.log_path.read_text(errors="replace")[-LOG_TAIL_CHARS:]
        raise BenchError(
            f"{self.label} worker exited with code {self.proc.returncode}; log {self.log_path}:\n{tail}"
        )


async def start_worker(label: str, argv: list[str], env: dict[str, str], log_path: Path) -> WorkerProcess:
    with log_path.open("ab") as log:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            env=env,
            # The repo root, so `-m learning_memory` and `arq bench.…` import this checkout.
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return WorkerProcess(label, proc, log_path, env)


async def stop_worker(worker: WorkerProcess) -> int | None:
    """SIGTERM, then SIGKILL if it does not exit in time; return its exit code."""
    if worker.proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            worker.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(worker.proc.wait(), STOP_TIMEOUT_S)
        except TimeoutError:
            progress(f"{worker.label} worker ignored SIGTERM for {STOP_TIMEOUT_S:.0f}s; killing it")
            with contextlib.suppress(ProcessLookupError):
                worker.proc.kill()
            await worker.proc.wait()
    return worker.proc.returncode


@asynccontextmanager
async def serving(
    redis_url: str,
    tmp: Path,
    namespace: str | None = None,
    extra_env: dict[str, str] | None = None,
) -> AsyncIterator[tuple[Client, WorkerProcess]]:
    """A real worker (arq mode, its own namespace and data folder under ``tmp``) and an MCP client
    over stdio to ``learning-memory serve``; everything is stopped and its keys removed after.
    ``extra_env`` adds settings (e.g. ``LMS_REPO_PATH``) for both."""
    namespace = namespace or f"bench-{secrets.token_hex(4)}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMS_")}
    env.update(
        LMS_REDIS_URL=redis_url,
        LMS_NAMESPACE=namespace,
        LMS_DATA_DIR=str(tmp / "data"),
        LMS_JOURNAL_DIR=str(tmp / "journal"),
        LMS_QUEUE="arq",
        LMS_AUTOSTART_WORKER="false",
        LMS_LOG_LEVEL="WARNING",
    )
    env.update(extra_env or {})
    worker = await start_worker(
        "ours", [sys.executable, "-m", "learning_memory", "worker"], env, tmp / "worker.log"
    )
    redis = Redis.from_url(redis_url)
    try:

        async def alive() -> bool:
            worker.ensure_alive()
            return bool(await live_workers(redis, Keys(namespace)))

        await wait_until(alive, timeout_s=120, what="the worker's heartbeat")
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "learning_memory", "serve"], env=env, cwd=REPO_ROOT
        )
        async with Client(params, read_timeout_seconds=300) as client:
            yield client, worker
    finally:
        await stop_worker(worker)
        keys = [key async for key in redis.scan_iter(match=f"{namespace}:*", count=1000)]
        for start in range(0, len(keys), 1000):
            await redis.delete(*keys[start : start + 1000])
        await redis.aclose()

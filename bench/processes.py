"""Worker subprocesses for benchmarks: started from this checkout, stopped for sure."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.common import BenchError, progress

REPO_ROOT = Path(__file__).resolve().parent.parent
STOP_TIMEOUT_S = 15.0
# How much of a dead worker's log to show.
LOG_TAIL_CHARS = 2000


@dataclass
class WorkerProcess:
    label: str
    proc: asyncio.subprocess.Process
    log_path: Path

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
            # The repo root, so `-m server.cli` and `arq bench.…` import this checkout.
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return WorkerProcess(label, proc, log_path)


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

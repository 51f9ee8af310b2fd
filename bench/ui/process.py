"""``learning-memory ui`` as a process of its own, on a free loopback port, stopped for sure."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _tail(log_path: Path) -> str:
    return log_path.read_text(errors="replace")[-2000:]


def _wait_until_it_answers(proc: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"learning-memory ui exited ({proc.returncode}):\n{log_path.read_text()[-2000:]}"
            )
        try:
            if httpx.get(url + "static/app.css", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)  # polling a condition, bounded by the deadline
    raise RuntimeError(
        f"learning-memory ui did not answer in {START_TIMEOUT_S:.0f} s:\n{log_path.read_text()[-2000:]}"
    )


@contextmanager
def view_process(env: dict[str, str], log_path: Path, cwd: Path | None = None) -> Iterator[str]:
    """The view's address while it runs."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "learning_memory", "ui", "--port", str(port)],
            env={**os.environ, **env},
            cwd=cwd or REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_until_it_answers(proc, url, log_path)
        yield url
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

"""Capture under faults: three sessions (three real servers over stdio) record at once while the
worker and Redis are killed and started again. No event is lost or written twice, every log
reads whole, and each session's episode is mined once."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from redis.asyncio import Redis
from redis.exceptions import RedisError

from learning_memory.cli.client import result_payload
from tests.conftest import WorkerFactory, wait_for_worker
from tests.e2e.conftest import stdio_client
from tests.git_repo import git
from tests.helpers import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.redis]
SESSIONS = 3


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PrivateRedis:
    """A redis-server of this test's own, which it may kill (without persistence: a restart
    loses every queued job, the harshest case)."""

    def __init__(self, folder: Path) -> None:
        self.port = _free_port()
        self.folder = folder
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def launch(self) -> None:
        args = ["redis-server", "--port", str(self.port), "--save", "", "--appendonly", "no"]
        self.proc = subprocess.Popen(
            args, cwd=self.folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    async def start(self) -> None:
        self.launch()

        async def answers() -> bool:
            client = Redis.from_url(self.url)
            try:
                return bool(await client.ping())
            except (OSError, RedisError):
                return False
            finally:
                await client.aclose()

        await wait_for(answers, timeout=30, what="the private redis-server", interval=0.05)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path)
    yield server
    server.kill()


def _worktrees(root: Path) -> list[Path]:
    main = root / "app"
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    for k in range(SESSIONS):
        (main / f"mod{k}.py").write_text(f"def value():\n    return {k}\n")
        (main / f"test_mod{k}.py").write_text(
            f"from mod{k} import value\n\n\ndef test_value():\n    assert value() == {k + 1}\n"
        )
    git(main, "add", ".")
    git(main, "commit", "-q", "-m", "Modules")
    folders = [main]
    for k in range(1, SESSIONS):
        git(main, "worktree", "add", "-q", str(root / f"app-{k}"), "-b", f"b{k}")
        folders.append(root / f"app-{k}")
    return folders


def _pytest(folder: Path, k: int) -> dict[str, str]:
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider test_mod{k}.py"
    done = subprocess.run(command.split(), cwd=folder, capture_output=True, text=True, check=False)
    if done.returncode:
        return {
            "command": command,
            "error": f"Exit code {done.returncode}\n{done.stdout}",
            "event": "PostToolUseFailure",
        }
    return {"command": command, "output": done.stdout}


async def _hook(client: Client, tool: str, **arguments: Any) -> None:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content


async def test_three_sessions_capture_through_worker_and_redis_restarts(
    lms_env: dict[str, str], worker_factory: WorkerFactory, private_redis: PrivateRedis, tmp_path: Path
) -> None:
    await private_redis.start()
    lms_env.update(
        LMS_REDIS_URL=private_redis.url,
        LMS_AUTOSTART_WORKER="false",
        LMS_EMBEDDING_MODEL="hashing:128",
    )
    worker = worker_factory()
    await wait_for_worker(Redis.from_url(private_redis.url), lms_env["LMS_NAMESPACE"], worker.pid)
    folders = _worktrees(tmp_path)
    down = asyncio.Event()
    restarted = asyncio.Event()

    async def session(k: int) -> None:
        sid, cwd, folder = f"session-{k}", str(folders[k]), folders[k]
        ids = {"session_id": sid, "cwd": cwd}
        async with stdio_client(lms_env) as client:
            await _hook(client, "hook_prompt_context", prompt=f"make test_mod{k} pass please", **ids)
            await _hook(client, "hook_tool_outcome", tool_use_id=f"red-{k}", **_pytest(folder, k), **ids)
            await _hook(client, "hook_stop", **ids)
            await down.wait()  # the worker and Redis are gone from here
            (folder / f"mod{k}.py").write_text(f"def value():\n    return {k + 1}\n")
            patch = [
                {
                    "oldStart": 2,
                    "oldLines": 1,
                    "newStart": 2,
                    "newLines": 1,
                    "lines": [f"-    return {k}", f"+    return {k + 1}"],
                }
            ]
            edit = {
                "file_path": str(folder / f"mod{k}.py"),
                "patch": json.dumps(patch),
                "tool_use_id": f"edit-{k}",
            }
            for _ in range(2):  # delivered twice: recorded once
                await _hook(client, "hook_file_changed", **edit, **ids)
            await _hook(client, "hook_tool_outcome", tool_use_id=f"green-{k}", **_pytest(folder, k), **ids)
            await _hook(client, "hook_stop", **ids)
            await restarted.wait()
            await _hook(client, "hook_prompt_context", prompt="thanks, now something else entirely", **ids)
            await _hook(client, "hook_stop", **ids)

    async def faults() -> None:
        await asyncio.sleep(0)  # let the sessions start; they wait on `down` for the fault
        index = Path(lms_env["LMS_DATA_DIR"]) / "capture"

        async def all_red() -> bool:
            return _every_log_has(index, '"red-')

        await wait_for(all_red, timeout=120, what="every session's first run", interval=0.05)

        async def greens() -> bool:
            return _every_log_has(index, '"green-')

        os.kill(worker.pid, signal.SIGKILL)
        private_redis.kill()
        down.set()
        await wait_for(greens, timeout=120, what="every session's green run", interval=0.05)
        await private_redis.start()
        again = worker_factory()
        await wait_for_worker(Redis.from_url(private_redis.url), lms_env["LMS_NAMESPACE"], again.pid)
        restarted.set()

    await asyncio.gather(*(session(k) for k in range(SESSIONS)), faults())

    logs = sorted((Path(lms_env["LMS_DATA_DIR"]) / "capture").glob("*/sessions/*.jsonl"))
    assert len(logs) == SESSIONS and len({p.parent.parent.name for p in logs}) == 1  # one project
    for log in logs:
        events = [json.loads(line) for line in log.read_text().splitlines()]  # every line whole
        assert len({e["id"] for e in events}) == len(events)
        assert [e["type"] for e in events] == [
            "prompt",
            "run",
            "stop",
            "edit",
            "run",
            "stop",
            "prompt",
            "stop",
        ]

    fixes = Path(lms_env["LMS_DATA_DIR"]) / "capture" / "fixes.sqlite3"

    async def mined() -> list[tuple[str, int]] | None:
        if not fixes.exists():
            return None
        with sqlite3.connect(fixes) as db:
            rows = db.execute(
                "SELECT session, COUNT(*) FROM episodes GROUP BY session ORDER BY session"
            ).fetchall()
        return rows if len(rows) == SESSIONS else None

    assert await wait_for(mined, timeout=180, what="every session mined", interval=0.1) == [
        (f"session-{k}", 1) for k in range(SESSIONS)
    ]
    async with stdio_client(lms_env) as client:
        found = result_payload(
            await client.call_tool("search_experiences", {"query": "test_value AssertionError", "limit": 10})
        )
    auto = [hit for hit in found["results"] if hit["source"] == "auto"]
    assert len(auto) == SESSIONS and all(hit["occurrences"] == 1 for hit in auto), auto


def _every_log_has(index: Path, marker: str, count: int = SESSIONS) -> bool:
    logs = list(index.glob("*/sessions/*.jsonl"))
    return len(logs) == count and all(marker in log.read_text() for log in logs)

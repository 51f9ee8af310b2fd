"""End-to-end fixtures: the real ``learning-memory serve`` over stdio, as Claude Code runs it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import cast

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from redis import Redis as SyncRedis

from learning_memory.shared.keys import Keys
from tests.conftest import REDIS_URL
from tests.helpers import pids_of
from tests.support.claude_code import ClaudeHome, pinned_claude


def server_params(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(
        command=env.get("PYTHON", "python"), args=["-m", "learning_memory", "serve"], env=env
    )


@asynccontextmanager
async def stdio_client(env: dict[str, str]) -> AsyncIterator[Client]:
    # Entered inside each test: anyio's task group must exit in the task that entered it.
    import sys

    params = StdioServerParameters(command=sys.executable, args=["-m", "learning_memory", "serve"], env=env)
    async with Client(params, read_timeout_seconds=120) as client:
        yield client


@pytest.fixture(autouse=True)
def reap_autostarted_workers(namespace: str, redis: object) -> Iterator[None]:
    """Workers that ``serve`` started detach from the test; stop them.

    By their heartbeats, and by their processes' environment, for a worker whose heartbeat
    lapsed on a loaded machine (it would otherwise live on until its idle exit). Depends on
    ``redis`` so that it is torn down first, before that fixture deletes the namespace's keys.
    """
    yield
    redis = SyncRedis.from_url(REDIS_URL)
    keys = Keys(namespace)
    pids = set(pids_of("learning_memory worker", f"LMS_NAMESPACE={namespace}"))
    for raw in redis.smembers(keys.workers):  # type: ignore[union-attr]
        beat = cast("bytes | None", redis.get(keys.worker(raw.decode())))
        if beat is not None:
            pids.add(json.loads(beat)["pid"])
    redis.close()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClaudeHome]:
    """One private Claude Code home with the plugin installed, shared by a module's sessions
    (modules that use it skip themselves when the pinned Claude Code is missing)."""
    claude_home = ClaudeHome.create(tmp_path_factory.mktemp("claude-home"), pinned_claude())
    claude_home.install_plugin()
    yield claude_home

"""``learning-memory serve`` over stdio with a real MCP client, in arq and inline modes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest
from redis.asyncio import Redis

from learning_memory.cli.client import result_payload
from tests.conftest import wait_for_worker
from tests.e2e.conftest import stdio_client
from tests.helpers import kill_pid

pytestmark = pytest.mark.slow

HEAVY = ("torch", "transformers", "sentence_transformers", "hdbscan", "qdrant_edge")


def _error(result: Any) -> dict[str, str]:
    assert result.is_error
    return json.loads(result.content[0].text)["error"]  # type: ignore[no-any-return]


def test_server_imports_nothing_heavy() -> None:
    code = (
        "import sys, learning_memory.server.app, learning_memory.cli.main, "
        "learning_memory.server.http; "
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_stdout_carries_nothing_but_protocol(lms_env: dict[str, str]) -> None:
    env = {**lms_env, "LMS_QUEUE": "inline"}
    proc = subprocess.run(
        [sys.executable, "-m", "learning_memory", "serve"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )
    assert proc.stdout == b""


@pytest.mark.parametrize("mode", ["inline", "arq"])
async def test_handshake_tools_and_ping(lms_env: dict[str, str], redis: Redis, mode: str) -> None:
    env = {**lms_env, "LMS_QUEUE": mode}
    async with stdio_client(env) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"ping", "get_job_status"} <= names
        answer = result_payload(await client.call_tool("ping", {}))
        assert answer["status"] == "ok"
        assert answer["mode"] == mode
        status = result_payload(await client.call_tool("get_job_status", {"job_id": answer["job_id"]}))
        assert status["state"] == "complete"
        error = _error(await client.call_tool("ping", {"delay_ms": "later"}))
        assert error["type"] == "validation_error" and "delay_ms" in error["message"]


async def test_auto_mode_picks_inline_without_redis(lms_env: dict[str, str]) -> None:
    env = {**lms_env, "LMS_QUEUE": "auto", "LMS_REDIS_URL": "redis://127.0.0.1:1/0"}
    async with stdio_client(env) as client:
        assert result_payload(await client.call_tool("ping", {}))["mode"] == "inline"


async def test_redis_unreachable_in_arq_mode_is_a_clear_error(lms_env: dict[str, str]) -> None:
    env = {**lms_env, "LMS_QUEUE": "arq", "LMS_REDIS_URL": "redis://127.0.0.1:1/0"}
    async with stdio_client(env) as client:
        result = await asyncio.wait_for(client.call_tool("ping", {}), 30)
        error = _error(result)
        assert error["type"] == "unavailable"
        assert "127.0.0.1:1" in error["message"] and "LMS_QUEUE=inline" in error["message"]


async def test_worker_killed_mid_job_the_call_still_completes(
    lms_env: dict[str, str], redis: Redis, namespace: str
) -> None:
    """serve autostarts a worker; SIGKILL it mid-job; serve starts another, which reruns the job."""
    async with stdio_client(lms_env) as client:
        first = result_payload(await client.call_tool("ping", {}))["worker"]["pid"]
        started = asyncio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            started.set()

        call = asyncio.create_task(
            client.call_tool("ping", {"delay_ms": 1500}, progress_callback=on_progress)
        )
        await asyncio.wait_for(started.wait(), 30)
        kill_pid(first)
        answer = result_payload(await asyncio.wait_for(call, 90))
        assert answer["status"] == "ok"
        assert answer["job_try"] == 2
        assert answer["worker"]["pid"] != first
        await wait_for_worker(redis, namespace, answer["worker"]["pid"])


async def test_second_session_is_answered_from_the_handshake_cache(
    lms_env: dict[str, str], tmp_path: Any
) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {**lms_env, "LMS_QUEUE": "inline"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "learning_memory", "serve"], env=env)
    listings = []
    for session in range(2):
        log_path = tmp_path / f"serve-{session}.log"
        with open(log_path, "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                listings.append(sorted(tool.name for tool in (await client.list_tools()).tools))
                assert result_payload(await client.call_tool("ping", {}))["status"] == "ok"
        answered_early = "handshake.answered_from_cache" in log_path.read_text()
        assert answered_early == (session == 1)
    assert listings[0] == listings[1]

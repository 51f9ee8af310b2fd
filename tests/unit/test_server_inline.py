"""The MCP server in-process (inline mode): tools, errors and job status through a real client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import Client

# The first inline job imports every job module (GitPython among them) before it runs: imported
# here, that does not race the 0.2 s the tools below wait for an answer.
import learning_memory.worker.jobs  # noqa: F401
from learning_memory.cli.client import result_payload
from learning_memory.composition import build_server
from learning_memory.shared.settings import load_settings


@asynccontextmanager
async def inline_client() -> AsyncIterator[Client]:
    # Opened inside each test: anyio's task group must exit in the task that entered it.
    server = build_server(load_settings(queue="inline", tool_wait_s=0.2))
    async with Client(server) as connected:
        yield connected


def _error(result: Any) -> dict[str, str]:
    assert result.is_error
    return json.loads(result.content[0].text)["error"]  # type: ignore[no-any-return]


async def test_tools_are_listed_with_schemas() -> None:
    async with inline_client() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {"ping", "get_job_status"} <= set(tools)
        assert tools["ping"].input_schema["properties"]["delay_ms"]["maximum"] == 60_000
        assert tools["get_job_status"].input_schema["required"] == ["job_id"]


async def test_ping() -> None:
    async with inline_client() as client:
        answer = result_payload(await client.call_tool("ping", {}))
        assert answer["status"] == "ok"
        assert answer["mode"] == "inline"
        assert answer["job_try"] == 1


@pytest.mark.parametrize(
    ("arguments", "field"),
    [({"delay_ms": -1}, "delay_ms"), ({"delay_ms": "soon"}, "delay_ms"), ({"delay_ms": 10**9}, "delay_ms")],
)
async def test_bad_arguments_are_validation_errors(arguments: dict[str, Any], field: str) -> None:
    async with inline_client() as client:
        error = _error(await client.call_tool("ping", arguments))
        assert error["type"] == "validation_error"
        assert field in error["message"]


async def test_unknown_tool() -> None:
    async with inline_client() as client:
        assert _error(await client.call_tool("no_such_tool", {}))["type"] == "not_found"


async def test_long_job_returns_an_id_then_status_has_progress_and_result() -> None:
    async with inline_client() as client:
        running = result_payload(await client.call_tool("ping", {"delay_ms": 1000}))
        assert running["status"] == "running"
        job_id = running["job_id"]
        status = result_payload(await client.call_tool("get_job_status", {"job_id": job_id}))
        assert status["state"] == "in_progress"
        assert status["function"] == "ping"

        async def finished() -> dict[str, Any] | None:
            now = result_payload(await client.call_tool("get_job_status", {"job_id": job_id}))
            return now if now["state"] == "complete" else None

        from tests.helpers import wait_for

        done = await wait_for(finished, timeout=10, what="the held ping to complete", interval=0.05)
        assert done["result"]["job_id"] == job_id
        assert done["progress"]["current"] == done["progress"]["total"]


@pytest.mark.parametrize("job_id", ["", "has space", "x" * 200])
async def test_bad_job_ids(job_id: str) -> None:
    async with inline_client() as client:
        assert (
            _error(await client.call_tool("get_job_status", {"job_id": job_id}))["type"] == "validation_error"
        )


async def test_unknown_job_is_not_found() -> None:
    async with inline_client() as client:
        error = _error(await client.call_tool("get_job_status", {"job_id": "deadbeef"}))
        assert error["type"] == "not_found"
        assert "deadbeef" in error["message"]

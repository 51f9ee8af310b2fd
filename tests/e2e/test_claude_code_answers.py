"""Typed tool answers through real Claude Code (the pinned CLI in .tools/claude): its MCP client
checks each answer's structured content against the tool's output schema (with date-time formats)
and hands the model that JSON in place of the text, so what the model reads must be the answer
itself, intact: times as the tools write them, and a job's "running" answer with its id."""

from __future__ import annotations

import json
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from learning_memory.cli.client import result_payload
from learning_memory.server.tool_errors import RUNNING_MESSAGE
from tests.conftest import WorkerFactory, wait_for_worker
from tests.e2e.conftest import stdio_client
from tests.support.claude_code import ClaudeCodeMissing, ClaudeHome, Session, pinned_claude, tool
from tests.support.scripted_model import Request, Turn, call, last_tool_result, say

try:
    CLAUDE = pinned_claude()
except ClaudeCodeMissing as missing:
    pytest.skip(f"{missing} (make test installs it)", allow_module_level=True)

pytestmark = pytest.mark.slow

SESSION_TIMEOUT_S = 120
# Long enough for a warm worker's store and start, far shorter than the ping held below.
WAIT_S = "3"
HOLD_MS = 20_000
MEMORY = {"content": "The staging database is reset every Sunday at 02:00 UTC.", "category": "fact"}
GHAP = {
    "domain": "debugging",
    "strategy": "read-the-error",
    "goal": "find why the nightly export stops halfway",
    "hypothesis": "the export job hits the worker's time limit",
    "action": "read the worker log around the stop",
    "prediction": "the log shows a timeout at the stop",
}


def _tool_results(session: Session) -> list[dict[str, Any]]:
    """Each tool_result block the model received, in order."""
    blocks = []
    for message in session.last_body().get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            blocks += [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    return blocks


async def test_structured_answers_and_a_running_job_reach_the_model_intact(
    home: ClaudeHome,
    lms_env: dict[str, str],
    redis: Redis,
    worker_factory: WorkerFactory,
    tmp_path: Path,
) -> None:
    await wait_for_worker(redis, lms_env["LMS_NAMESPACE"], worker_factory().pid)
    async with stdio_client(lms_env) as client:  # the worker's model loaded before the session
        warm = await client.call_tool("retrieve_memories", {"query": "warm up"})
        assert not warm.is_error, warm.content
    project = tmp_path / "project"
    project.mkdir()
    seen: dict[str, str] = {}

    def script() -> Generator[Turn, Request, None]:
        names = ",".join(tool(n) for n in ("store_memory", "start_ghap", "ping", "get_job_status"))
        yield call("ToolSearch", query=f"select:{names}", max_results=4)
        request = yield call(tool("store_memory"), **MEMORY)
        seen["store_memory"] = last_tool_result(request)
        request = yield call(tool("start_ghap"), **GHAP)
        seen["start_ghap"] = last_tool_result(request)
        request = yield call(tool("ping"), delay_ms=HOLD_MS)
        seen["ping"] = last_tool_result(request)
        job_id = json.loads(seen["ping"])["job_id"]
        request = yield call(tool("get_job_status"), job_id=job_id)
        seen["get_job_status"] = last_tool_result(request)
        yield say("Done.")

    env = {**lms_env, "LMS_TOOL_WAIT_S": WAIT_S}
    session = home.run_session("Remember the reset, then check the server.", script(), env=env, cwd=project)
    assert not session.timed_out, session.stderr[-2000:]
    assert session.returncode == 0, session.stderr[-2000:] or session.stdout[-2000:]
    assert session.script_errors == [], session.script_errors
    blocks = _tool_results(session)
    assert len(blocks) == 5 and not any(b.get("is_error") for b in blocks), blocks

    # What the model read is the answer's JSON, field for field, as the server holds it now.
    async with stdio_client(lms_env) as client:
        listed = result_payload(await client.call_tool("list_memories", {}))
        active = result_payload(await client.call_tool("get_active_ghap", {}))
    stored = json.loads(seen["store_memory"])
    assert stored == listed["results"][0], (stored, listed)
    assert stored["created_at"].endswith("Z")  # pydantic's spelling of UTC, as always
    started = json.loads(seen["start_ghap"])
    assert started == {
        **{k: v for k, v in active.items() if k not in ("iteration_count", "has_active")},
        "warnings": [],
    }
    assert started["created_at"].endswith("+00:00")  # datetime.isoformat(), as the GHAP tools always wrote

    running = json.loads(seen["ping"])
    assert running == {"status": "running", "job_id": running["job_id"], "message": RUNNING_MESSAGE}
    status = json.loads(seen["get_job_status"])
    assert status["job_id"] == running["job_id"] and status["state"] in ("queued", "in_progress")
    assert status["function"] == "ping" and "result" not in status  # left out, not null

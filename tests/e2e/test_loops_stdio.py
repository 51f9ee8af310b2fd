"""Refinement loops over stdio as Claude Code runs them: the workflow, a restarted server that
finds its loops, limits from the environment, and two servers deciding on one state folder."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pytest
from mcp import Client
from mcp.types import TextContent
from redis.asyncio import Redis

from learning_memory.cli.client import result_payload
from tests.e2e.conftest import stdio_client

pytestmark = pytest.mark.slow


@pytest.fixture
def env(lms_env: dict[str, str]) -> dict[str, str]:
    # The loop tools need no worker: keep the test from starting one.
    clean = {k: v for k, v in lms_env.items() if not k.startswith("FSDD_LOOP_")}
    return {**clean, "LMS_AUTOSTART_WORKER": "false"}


async def _ok(client: Client, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result_payload(result)


async def _outcome(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        text = "".join(block.text for block in result.content if isinstance(block, TextContent))
        return str(json.loads(text)["error"]["type"])
    return str(result_payload(result)["status"])


async def test_workflow_survives_a_restart(env: dict[str, str], redis: Redis) -> None:
    async with stdio_client(env) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {
            "initialize_refinement_loop",
            "decide_loop_next_action",
            "get_loop_status",
            "list_active_loops",
        } <= names
        loop_id = (await _ok(client, "initialize_refinement_loop", loop_type="plan"))["id"]
        for score in (50, 65):
            assert (await _ok(client, "decide_loop_next_action", loop_id=loop_id, current_score=score))[
                "status"
            ] == "refine"
        assert await _outcome(client, "decide_loop_next_action", loop_id=loop_id, current_score=101) == (
            "validation_error"
        )
        assert await _outcome(client, "get_loop_status", loop_id="feedbeef") == "not_found"

    async with stdio_client(env) as client:  # Claude Code restarted the server
        status = await _ok(client, "get_loop_status", loop_id=loop_id)
        assert (
            status["status"] == "refine" and status["score_history"] == [50, 65] and status["iteration"] == 2
        )
        assert (await _ok(client, "list_active_loops"))["loops"][0]["id"] == loop_id
        decided = await _ok(client, "decide_loop_next_action", loop_id=loop_id, current_score=86)
        assert decided["status"] == "completed" and "reached the threshold 85" in decided["reason"]
        assert await _outcome(client, "decide_loop_next_action", loop_id=loop_id, current_score=90) == (
            "validation_error"
        )


async def test_thresholds_come_from_the_environment(env: dict[str, str], redis: Redis) -> None:
    custom = {**env, "FSDD_LOOP_BUILD_CODE_THRESHOLD": "70", "FSDD_LOOP_BUILD_CODE_MAX_ITERATIONS": "1"}
    async with stdio_client(custom) as client:
        loop = await _ok(client, "initialize_refinement_loop", loop_type="build_code")
        assert (loop["threshold"], loop["max_iterations"]) == (70, 1)
        assert (
            await _outcome(client, "decide_loop_next_action", loop_id=loop["id"], current_score=40)
            == "refine"
        )
        assert (
            await _outcome(client, "decide_loop_next_action", loop_id=loop["id"], current_score=60)
            == "user_input"
        )


async def test_two_servers_on_one_state_folder_serialize_decisions(env: dict[str, str], redis: Redis) -> None:
    async with stdio_client(env) as first, stdio_client(env) as second:
        loop_ids = [
            (await _ok(first, "initialize_refinement_loop", loop_type="plan"))["id"] for _ in range(5)
        ]
        # Every loop gets four scores of 10 at once, two from each server: serialized, that is
        # refine, refine, user_input (stagnant) and one refusal, whatever the order.
        calls = [
            _outcome(client, "decide_loop_next_action", loop_id=loop_id, current_score=10)
            for loop_id in loop_ids
            for client in (first, second, first, second)
        ]
        outcomes = await asyncio.gather(*calls)
        for i, loop_id in enumerate(loop_ids):
            assert Counter(outcomes[4 * i : 4 * i + 4]) == Counter(
                {"refine": 2, "user_input": 1, "validation_error": 1}
            ), loop_id
        listed = await _ok(second, "list_active_loops")
        assert {loop["id"] for loop in listed["loops"]} == set(loop_ids)
        assert {loop["status"] for loop in listed["loops"]} == {"user_input"}

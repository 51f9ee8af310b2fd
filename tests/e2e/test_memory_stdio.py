"""The memory workflow as Claude Code sees it: stdio, arq mode, a real worker, the real model."""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import pytest
from mcp import Client
from redis.asyncio import Redis

from learning_memory.cli.client import result_payload
from tests.conftest import wait_for_worker
from tests.e2e.conftest import stdio_client
from tests.helpers import wait_for

pytestmark = pytest.mark.slow

FACTS = [
    ("To undo the last git commit but keep the changes, run git reset --soft HEAD~1.", "workflow"),
    ("The staging database is refreshed from production every Sunday night.", "fact"),
    ("Prefer small pull requests with one concern each.", "preference"),
    ("The API rate limit is 100 requests per minute per token.", "fact"),
    ("We moved the CI from Jenkins to GitHub Actions in March.", "event"),
]

CODES = [
    "Gateway answers with code QX7741 when the card issuer times out; retry once.",
    "Gateway answers with code QX7714 while it is down for maintenance; wait for it.",
]


async def _call(client: Client, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result_payload(result)


async def test_memory_workflow_survives_a_worker_restart(
    lms_env: dict[str, str], redis: Redis, namespace: str
) -> None:
    async with stdio_client(lms_env) as client:
        ids = [
            (await _call(client, "store_memory", content=content, category=category, tags=[category]))["id"]
            for content, category in FACTS
        ]

        # A paraphrase, sharing almost no words with the memory, finds it first.
        found = await _call(client, "retrieve_memories", query="how can I revert my latest commit?", limit=3)
        assert found["results"][0]["id"] == ids[0]

        first = await _call(client, "list_memories", limit=2)
        second = await _call(client, "list_memories", limit=2, offset=2)
        third = await _call(client, "list_memories", limit=2, offset=4)
        listed = [m["id"] for page in (first, second, third) for m in page["results"]]
        assert listed == list(reversed(ids)) and first["total"] == len(FACTS)

        # The exact code a person remembers finds its memory, though the model alone prefers its
        # look-alike: the keyword side matches the word itself.
        codes = [
            (await _call(client, "store_memory", content=content, category="fact"))["id"] for content in CODES
        ]
        found = await _call(client, "retrieve_memories", query="QX7741 again, what now?", limit=3)
        assert found["results"][0]["id"] == codes[0]

        # Restart the worker: what was stored stays stored.
        worker_pid = (await _call(client, "ping"))["worker"]["pid"]
        os.kill(worker_pid, signal.SIGTERM)

        async def gone() -> bool:
            try:
                os.kill(worker_pid, 0)
            except ProcessLookupError:
                return True
            return False

        await wait_for(gone, timeout=30, what="the worker to exit")
        # The next call finds no worker, and serve starts a new one.
        after = await _call(client, "list_memories", limit=10)
        assert [m["id"] for m in after["results"]] == list(reversed(ids + codes))
        new_pid = (await _call(client, "ping"))["worker"]["pid"]
        assert new_pid != worker_pid

        # The words it is found by were kept as well as the vectors.
        found = await _call(client, "retrieve_memories", query="QX7741 again, what now?", limit=3)
        assert found["results"][0]["id"] == codes[0]

        assert await _call(client, "delete_memory", id=ids[2]) == {"deleted": True}
        assert await _call(client, "delete_memory", id=ids[2]) == {"deleted": False}
        found = await _call(client, "retrieve_memories", query="small pull requests", limit=5)
        assert ids[2] not in [m["id"] for m in found["results"]]
        failure = await client.call_tool("store_memory", {"content": "x", "category": "gossip"})
        assert failure.is_error
        assert json.loads(failure.content[0].text)["error"]["type"] == "validation_error"  # type: ignore[union-attr]
        await wait_for_worker(redis, namespace, new_pid)

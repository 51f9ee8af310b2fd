"""GHAP over stdio as Claude Code runs it: the workflow with the real model, and the failures
that must lose nothing (worker down, Redis down, the server killed mid-resolve, two servers
on one journal)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from redis.asyncio import Redis

from learning_memory.cli.client import result_payload
from tests.conftest import WorkerFactory, wait_for_worker
from tests.e2e.conftest import stdio_client
from tests.helpers import pids_of, wait_for

pytestmark = pytest.mark.slow

START = {
    "domain": "debugging",
    "strategy": "check-assumptions",
    "goal": "find why the nightly export job runs out of memory",
    "hypothesis": "the export loads every row at once",
    "action": "stream rows in batches of 1000",
    "prediction": "memory stays flat during the export",
}
RESOLVE = {
    "status": "falsified",
    "result": "memory still grew after streaming",
    "surprise": "an in-process cache kept every exported row alive",
    "root_cause": {"category": "wrong-assumption", "description": "assumed the cache evicted entries"},
    "lesson": {"what_worked": "bound the cache with an LRU of 10,000 entries"},
}


async def _ok(client: Client, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result_payload(result)


def _error(result: Any) -> dict[str, str]:
    assert result.is_error
    return json.loads(result.content[0].text)["error"]  # type: ignore[no-any-return]


def _pending(journal: Path) -> list[str]:
    outbox = journal / "outbox"
    return sorted(p.name for p in outbox.iterdir()) if outbox.exists() else []


async def test_workflow_start_update_twice_resolve_then_search(lms_env: dict[str, str], redis: Redis) -> None:
    async with stdio_client(lms_env) as client:
        started = await _ok(client, "start_ghap", **START)
        await _ok(
            client, "update_ghap", hypothesis="a memory leak in the serializer", note="batching did not help"
        )
        assert (await _ok(client, "update_ghap", action="profile with tracemalloc"))["iteration_count"] == 3
        resolved = await _ok(client, "resolve_ghap", **RESOLVE)
        assert resolved["confidence_tier"] == "gold" and resolved["stored"] is True
        # A paraphrase of the surprise, on the surprise axis.
        found = await _ok(
            client, "search_experiences", query="a cache held on to old objects", axis="surprise"
        )
        assert found["results"][0]["ghap_id"] == started["id"]
        assert found["results"][0]["confidence_tier"] == "gold"
        assert _pending(Path(lms_env["LMS_JOURNAL_DIR"])) == []


async def test_worker_down_during_resolve_is_saved_and_persisted_later(
    lms_env: dict[str, str], redis: Redis, namespace: str, worker_factory: WorkerFactory
) -> None:
    env = {
        **lms_env,
        "LMS_AUTOSTART_WORKER": "false",
        "LMS_OUTBOX_DRAIN_INTERVAL_S": "0.5",
        "LMS_EMBEDDING_MODEL": "hashing:128",
    }
    lms_env.update(env)  # the worker started below gets the same settings
    async with stdio_client(env) as client:
        started = await _ok(client, "start_ghap", **START)
        # Its job waits in the queue: the tool answers within its budget that storing is under way.
        resolved = await _ok(client, "resolve_ghap", **RESOLVE)
        assert resolved["stored"] is False
        assert "saved in the journal" in resolved["note"] and "Do not resolve it again" in resolved["note"]
        assert _pending(Path(env["LMS_JOURNAL_DIR"])) == [started["id"]]
        assert (await _ok(client, "get_active_ghap"))["has_active"] is False

        worker = worker_factory()  # the worker comes back; the periodic drain stores the entry
        await wait_for_worker(redis, namespace, worker.pid)

        async def drained() -> bool:
            return _pending(Path(env["LMS_JOURNAL_DIR"])) == []

        await wait_for(drained, timeout=60, what="the outbox to drain")
        found = await _ok(client, "search_experiences", query=START["goal"])
        assert [hit["ghap_id"] for hit in found["results"]] == [started["id"]]  # stored once


async def test_redis_down_then_persisted_by_the_next_server(
    lms_env: dict[str, str], redis: Redis, namespace: str, worker_factory: WorkerFactory
) -> None:
    lms_env["LMS_EMBEDDING_MODEL"] = "hashing:128"
    down = {**lms_env, "LMS_REDIS_URL": "redis://127.0.0.1:1/0"}
    async with stdio_client(down) as client:
        started = await _ok(client, "start_ghap", **START)
        failure = _error(await client.call_tool("resolve_ghap", RESOLVE))
        assert failure["type"] == "unavailable" and "saved in the journal" in failure["message"]
    worker = worker_factory()
    await wait_for_worker(redis, namespace, worker.pid)
    async with stdio_client({**lms_env, "LMS_AUTOSTART_WORKER": "false"}) as client:  # drains at start

        async def stored() -> bool:
            found = await _ok(client, "search_experiences", query=START["goal"])
            return bool(found["results"])

        await wait_for(stored, timeout=60, what="the experience to be stored", interval=0.2)
        found = await _ok(client, "search_experiences", query=START["goal"])
        assert [hit["ghap_id"] for hit in found["results"]] == [started["id"]]


async def test_server_killed_between_local_save_and_persistence(
    lms_env: dict[str, str], redis: Redis, namespace: str, worker_factory: WorkerFactory
) -> None:
    lms_env.update(LMS_AUTOSTART_WORKER="false", LMS_EMBEDDING_MODEL="hashing:128")
    journal = Path(lms_env["LMS_JOURNAL_DIR"])
    client_cm = stdio_client(lms_env)
    client = await client_cm.__aenter__()
    try:
        started = await _ok(client, "start_ghap", **START)
        resolving = asyncio.create_task(client.call_tool("resolve_ghap", RESOLVE))

        async def saved_locally() -> bool:
            return _pending(journal) == [started["id"]]

        await wait_for(saved_locally, timeout=30, what="the local save")
        for pid in pids_of("learning_memory serve", f"LMS_NAMESPACE={namespace}"):
            os.kill(pid, signal.SIGKILL)
        with pytest.raises(BaseException):  # noqa: B017 - the connection dies with the server
            await asyncio.wait_for(resolving, 30)
    finally:
        try:
            await client_cm.__aexit__(None, None, None)
        except BaseException:  # the transport died with the server
            pass
    worker = worker_factory()
    await wait_for_worker(redis, namespace, worker.pid)
    async with stdio_client(lms_env) as client:

        async def drained() -> bool:
            return _pending(journal) == []

        await wait_for(drained, timeout=60, what="the next server to store the entry")
        found = await _ok(client, "search_experiences", query=START["goal"])
        assert [hit["ghap_id"] for hit in found["results"]] == [started["id"]]


async def test_two_servers_on_one_journal(
    lms_env: dict[str, str], redis: Redis, namespace: str, worker_factory: WorkerFactory
) -> None:
    lms_env.update(LMS_AUTOSTART_WORKER="false", LMS_EMBEDDING_MODEL="hashing:128")
    worker = worker_factory()
    await wait_for_worker(redis, namespace, worker.pid)
    async with stdio_client(lms_env) as first, stdio_client(lms_env) as second:
        await _ok(first, "start_ghap", **START)

        async def updates(client: Client, who: str) -> None:
            for n in range(15):
                await _ok(client, "update_ghap", note=f"{who} {n}")

        await asyncio.gather(updates(first, "first"), updates(second, "second"))
        assert (await _ok(second, "get_active_ghap"))["iteration_count"] == 31  # no update lost

        async def cycles(client: Client) -> None:
            for _ in range(5):
                await _ok(client, "start_ghap", **START)
                await client.call_tool("resolve_ghap", {"status": "confirmed", "result": "ok"})  # may race

        await asyncio.gather(cycles(first), cycles(second))
        listed = await _ok(first, "list_ghap_entries", limit=100)
        # Every entry ever started is listed: resolved, abandoned by the other's start, or active.
        assert listed["count"] == 11
        for path in (Path(lms_env["LMS_JOURNAL_DIR"]) / "archive").iterdir():
            json.loads(path.read_text())  # every archived file is whole

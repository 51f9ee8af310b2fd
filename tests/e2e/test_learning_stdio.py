"""The learning tools over stdio as Claude Code runs them (arq mode, the worker ``serve`` starts,
the real model): a retrospective over resolved GHAP entries, and its errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client
from redis.asyncio import Redis

from learning_memory.cli.client import result_payload
from learning_memory.cli.samples import demo_entries
from tests.e2e.conftest import stdio_client
from tests.helpers import wait_for

pytestmark = pytest.mark.slow


async def _ok(client: Client, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result_payload(result)


async def _error(client: Client, tool: str, **arguments: Any) -> dict[str, str]:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.content
    return json.loads(result.content[0].text)["error"]  # type: ignore[no-any-return,union-attr]


async def test_retrospective_over_stdio(lms_env: dict[str, str], redis: Redis) -> None:
    samples = demo_entries()
    async with stdio_client(lms_env) as client:
        # The worker `serve` started, and its model, are up before the first resolve (a busy
        # machine can take longer over that than the persist retries wait).
        async def model_ready() -> bool:
            answer = await client.call_tool("retrieve_memories", {"query": "warm-up", "limit": 1})
            return not answer.is_error and "results" in result_payload(answer)

        await wait_for(model_ready, timeout=180, what="the worker and its model", interval=0.5)
        for sample in samples[:12]:
            await _ok(client, "start_ghap", **sample.start)
            await _ok(client, "resolve_ghap", **sample.resolve)
        too_few = await _error(client, "get_clusters", axis="full")
        assert too_few["type"] == "insufficient_data" and "at least 20" in too_few["message"]
        for sample in samples[12:]:
            await _ok(client, "start_ghap", **sample.start)
            await _ok(client, "resolve_ghap", **sample.resolve)

        clusters = await _ok(client, "get_clusters", axis="full")
        assert clusters["count"] >= 6 and clusters["experience_count"] == len(samples)
        assert await _ok(client, "get_clusters", axis="full") == clusters  # cached
        # The clusters' most typical stories, told as they were embedded: some fit (stories at a
        # cluster's edge may not, the threshold is strict), and one that fits is stored.
        value, target, checked = "", "", {}
        for cluster in clusters["clusters"]:
            members = await _ok(client, "get_cluster_members", cluster_id=cluster["cluster_id"], limit=3)
            assert members["count"] == 3
            for typical in members["members"]:
                parts = ("goal", "hypothesis", "action", "prediction")
                value = "\n".join(f"{part.capitalize()}: {typical[part]}" for part in parts)
                target = cluster["cluster_id"].removeprefix("cluster_")
                checked = await _ok(client, "validate_value", text=value, cluster_id=target)
                if checked["valid"]:
                    break
            if checked["valid"]:
                break
        assert checked["valid"] and checked["centroid_distance"] <= checked["threshold_distance"]
        refused = await _error(
            client, "store_value", text="Water the office plants.", cluster_id="cluster_full_0", axis="full"
        )
        assert refused["type"] == "validation_error" and "threshold" in refused["message"]
        stored = await _ok(client, "store_value", text=value, cluster_id=target, axis="full")
        assert stored["clustering_id"] == clusters["clustering_id"]
        listed = await _ok(client, "list_values")
        assert [v["id"] for v in listed["results"]] == [stored["id"]]

        malformed = await _error(client, "validate_value", text=value, cluster_id="cluster-full-0")
        assert malformed["type"] == "validation_error" and "cluster_{axis}_{label}" in malformed["message"]
        bad_axis = await _error(client, "get_clusters", axis="colour")
        assert bad_axis["type"] == "validation_error" and "root_cause" in bad_axis["message"]

        # One more experience on the axis: the next get_clusters is a new clustering.
        await _ok(client, "start_ghap", **samples[0].start)
        await _ok(client, "resolve_ghap", **samples[0].resolve)
        assert (await _ok(client, "get_clusters", axis="full"))["clustering_id"] != clusters["clustering_id"]

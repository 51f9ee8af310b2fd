"""Memory tools through a real MCP client over stdio, arq mode, a real worker and the real model.

Stores ``--memories`` memories (10,000 by default) through ``store_memory``, then times
each of the four tools one call at a time, and reads the worker's resident memory.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import Client

from bench.common import BenchError, progress, report_tool_targets
from bench.processes import serving
from learning_memory.cli.client import result_payload

# p95 targets of the issue, and the seed's own in brackets.
TARGETS_P95_MS = {
    "store_memory": (100, 500),
    "retrieve_memories": (60, 300),
    "list_memories": (30, 100),
    "delete_memory": (20, 100),
}
CATEGORIES = ("preference", "fact", "event", "workflow", "context")
TAGS = [f"tag{i}" for i in range(20)]
SUBJECTS = [
    "the billing service",
    "the deploy script",
    "our CI",
    "the search index",
    "the auth proxy",
    "the mobile app",
    "the data pipeline",
    "the staging database",
    "the design system",
    "the API gateway",
]
VERBS = ["uses", "depends on", "was migrated to", "is tested with", "is configured through", "replaced"]
OBJECTS = [
    "Postgres 16",
    "a Redis cache",
    "GitHub Actions",
    "feature flags",
    "a nightly cron job",
    "Terraform",
    "gRPC",
    "an S3 bucket",
    "OpenTelemetry",
    "a blue-green rollout",
]
DETAILS = [
    "since last spring",
    "after the outage in March",
    "because of latency",
    "per the security review",
    "to cut costs",
    "on the team's request",
    "until the rewrite lands",
    "in every region",
]
LOAD_CONCURRENCY = 8


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--memories", type=int, default=10_000, help="memories stored first (10000)")
    parser.add_argument("--calls", type=int, default=200, help="timed calls per tool (200)")


def _sentence(rng: random.Random, n: int) -> str:
    return (
        f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
        f"{rng.choice(DETAILS)} (note {n})."
    )


def _memory(rng: random.Random, n: int) -> dict[str, Any]:
    return {
        "content": _sentence(rng, n),
        "category": rng.choice(CATEGORIES),
        "importance": round(rng.random(), 2),
        "tags": rng.sample(TAGS, rng.randint(0, 3)),
    }


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise BenchError(f"{tool} failed: {result.content}")
    return result_payload(result)


async def _timed(calls: int, one: Callable[[int], Awaitable[object]]) -> list[float]:
    samples = []
    for i in range(calls):
        started = time.perf_counter()
        await one(i)
        samples.append(time.perf_counter() - started)
    return samples


async def _load(client: Client, rng: random.Random, count: int) -> tuple[list[str], float]:
    semaphore = asyncio.Semaphore(LOAD_CONCURRENCY)

    async def store(arguments: dict[str, Any]) -> str:
        async with semaphore:
            return str((await _call(client, "store_memory", arguments))["id"])

    ids: list[str] = []
    started = time.perf_counter()
    step = 1000
    for start in range(0, count, step):
        batch = [_memory(rng, n) for n in range(start, min(count, start + step))]
        ids += await asyncio.gather(*(store(arguments) for arguments in batch))
        progress(f"memory: stored {len(ids)}/{count}")
    return ids, time.perf_counter() - started


def _rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


async def _measure(client: Client, ids: list[str], calls: int, rng: random.Random) -> dict[str, list[float]]:
    async def store(i: int) -> None:
        await _call(client, "store_memory", _memory(rng, 10**7 + i))

    async def retrieve(i: int) -> None:
        # Unique queries: a repeated one would be served from the embedding cache, not the model.
        query = f"what does {rng.choice(SUBJECTS)} use {rng.choice(DETAILS)}? (question {i})"
        arguments: dict[str, Any] = {"query": query, "limit": 10}
        if i % 3 == 0:
            arguments["category"] = rng.choice(CATEGORIES)
        await _call(client, "retrieve_memories", arguments)

    async def listing(i: int) -> None:
        arguments: dict[str, Any] = {"limit": 50, "offset": rng.choice([0, 0, 50, 100, 500])}
        if i % 3 == 1:
            arguments["category"] = rng.choice(CATEGORIES)
        if i % 3 == 2:
            arguments["tags"] = rng.sample(TAGS, 2)
        await _call(client, "list_memories", arguments)

    victims = rng.sample(ids, min(calls, len(ids)))

    async def delete(i: int) -> None:
        if not (await _call(client, "delete_memory", {"id": victims[i]}))["deleted"]:
            raise BenchError(f"delete_memory did not find {victims[i]}")

    return {
        "store_memory": await _timed(calls, store),
        "retrieve_memories": await _timed(calls, retrieve),
        "list_memories": await _timed(calls, listing),
        "delete_memory": await _timed(len(victims), delete),
    }


def _report(
    latencies: dict[str, list[float]], load_s: float, count: int, rss: float | None
) -> dict[str, Any]:
    summaries, verdicts = report_tool_targets(latencies, TARGETS_P95_MS)
    print(
        f"\nloaded {count} memories through store_memory in {load_s:.1f}s ({count / load_s:.0f}/s, "
        f"{LOAD_CONCURRENCY} concurrent calls)"
    )
    print(
        f"worker RSS after loading the model and {count} memories: {rss:.0f} MiB"
        if rss
        else "worker RSS: n/a"
    )
    return {
        "tools": summaries,
        "pass": verdicts,
        "load_seconds": load_s,
        "memories": count,
        "worker_rss_mib": rss,
    }


async def _run_in(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    rng = random.Random(7)
    async with serving(args.redis_url, tmp) as (client, worker):
        await _call(client, "store_memory", {"content": "warm-up", "category": "fact"})  # the model is loaded
        ids, load_s = await _load(client, rng, args.memories)
        rss = _rss_mib(worker.pid)
        latencies = await _measure(client, ids, args.calls, rng)
    return _report(latencies, load_s, args.memories, rss)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="lms-bench-memory-"))
    try:
        return {"parameters": {"memories": args.memories, "calls": args.calls}, **await _run_in(args, tmp)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

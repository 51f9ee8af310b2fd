"""Git tools on a generated history: index_commits cold and incremental, then each tool's latency.

Set-up: a repository of ``--commits`` commits (5,000 by default) touching 1,000+ files, written with
``git fast-import`` (bench/git_history.py), then ``git commit-graph write --reachable
--changed-paths``, as a maintained repository has (git's own history walks lean on it). Through a
real MCP client over stdio, arq mode, a real worker with the real model: a cold index_commits
(commits/s), an incremental one after 10 new commits, then search_commits, get_file_history,
get_churn_hotspots (90 days) and get_code_authors, one call at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client

from bench.common import BenchError, print_table, progress, report_tool_targets
from bench.processes import serving
from tests.support.git_history import TOPICS, append, generate, touched_files

# p95 targets of the issue, and the seed's own in brackets.
TARGETS_P95_MS = {
    "search_commits": (50, 300),
    "get_file_history": (200, 500),
    "get_churn_hotspots": (1000, 3000),
    "get_code_authors": (300, 1000),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--commits", type=int, default=5_000, help="commits generated (5000)")
    parser.add_argument("--calls", type=int, default=100, help="timed calls per tool (100)")
    parser.add_argument("--churn-calls", type=int, default=20, help="timed get_churn_hotspots calls (20)")


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    from learning_memory.cli.client import result_payload

    result = await client.call_tool(tool, arguments, read_timeout_seconds=7200)
    if result.is_error:
        raise BenchError(f"{tool} failed: {result.content}")
    return result_payload(result)


async def _index(client: Client) -> tuple[dict[str, Any], float]:
    """index_commits to the end (following the job id once the tool's wait budget runs out)."""
    started = time.perf_counter()
    answer = await _call(client, "index_commits", {})
    while answer.get("status") == "running":
        await asyncio.sleep(0.25)
        status = await _call(client, "get_job_status", {"job_id": answer["job_id"]})
        if status["state"] == "failed":
            raise BenchError(f"index_commits failed: {status.get('error')}")
        if status["state"] == "complete":
            answer = status["result"]
    return answer, time.perf_counter() - started


def _build(root: Path, commits: int) -> tuple[int, list[str]]:
    generate(root, commits)
    subprocess.run(["git", "commit-graph", "write", "--reachable", "--changed-paths"], cwd=root, check=True)
    listed = subprocess.run(["git", "ls-files", "src"], cwd=root, capture_output=True, check=True)
    return touched_files(root), listed.stdout.decode().split()


async def _timed(
    client: Client, samples: dict[str, list[float]], tool: str, arguments: dict[str, Any]
) -> Any:
    started = time.perf_counter()
    answer = await _call(client, tool, arguments)
    samples.setdefault(tool, []).append(time.perf_counter() - started)
    return answer


async def _measure(client: Client, args: argparse.Namespace, files: list[str]) -> dict[str, list[float]]:
    rng = random.Random(3)
    samples: dict[str, list[float]] = {}
    for i in range(args.calls):
        query = f"{TOPICS[i % len(TOPICS)]} ({i})"  # unique: no query embedding comes from the cache
        found = await _timed(client, samples, "search_commits", {"query": query})
        if not found["results"]:
            raise BenchError("search_commits found nothing")
        await _timed(client, samples, "get_file_history", {"path": rng.choice(files)})
        await _timed(client, samples, "get_code_authors", {"path": rng.choice(files)})
    for _ in range(args.churn_calls):
        await _timed(client, samples, "get_churn_hotspots", {"days": 90})
    return samples


async def _run_in(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    repo = tmp / "repo"
    started = time.perf_counter()
    touched, files = await asyncio.to_thread(_build, repo, args.commits)
    built_s = time.perf_counter() - started
    progress(f"git: generated {args.commits} commits touching {touched} files in {built_s:.1f}s")
    async with serving(args.redis_url, tmp, extra_env={"LMS_REPO_PATH": str(repo)}) as (client, _):
        # Load the model first (a memory round trip), so the cold index is timed warm.
        stored = await _call(client, "store_memory", {"content": "warm-up", "category": "fact"})
        await _call(client, "delete_memory", {"id": stored["id"]})
        cold, cold_s = await _index(client)
        progress(f"git: cold index {cold_s:.1f}s, {cold['commits_indexed']} commits")
        await asyncio.to_thread(append, repo, 10)
        incremental, incremental_s = await _index(client)
        samples = await _measure(client, args, files)
    rows = [
        [
            "index_commits, cold",
            f"{cold['commits_indexed']} commits in {cold_s:.1f}s",
            f"{cold['commits_indexed'] / cold_s:.0f} commits/s",
        ],
        [
            "index_commits, 10 new commits",
            f"{incremental['commits_indexed']} commits in {incremental_s * 1000:.0f} ms",
            incremental["reason"],
        ],
    ]
    print_table(["measure", "value", "rate"], rows)
    summaries, verdicts = report_tool_targets(samples, TARGETS_P95_MS)
    return {
        "commits": args.commits,
        "files_touched": touched,
        "cold": cold,
        "cold_seconds": cold_s,
        "cold_commits_per_s": cold["commits_indexed"] / cold_s,
        "incremental": incremental,
        "incremental_seconds": incremental_s,
        "tools": summaries,
        "targets_p95_ms": {tool: target for tool, (target, _) in TARGETS_P95_MS.items()},
        "pass": verdicts,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.commits < 1:
        raise BenchError("--commits must be at least 1")
    tmp = Path(tempfile.mkdtemp(prefix="lms-bench-git-"))
    try:
        return await _run_in(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

"""Warm timings against the seeded folder: the hooks, ``start_ghap``, ``get_clusters`` per axis."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp import Client

from bench.code import call_tool
from bench.common import BenchError, latency_summary_ms
from bench.context.latency import PYTEST_FAIL, PYTEST_PASS
from bench.ghap import _start
from bench.scale.seed import FILES, seed_experiences
from learning_memory.cli.samples import SampleEntry
from learning_memory.server.transport.arq import ArqTransport
from learning_memory.shared.contracts.experiences import AXES

HOOK_P95_MS = 50.0
TOOL_P95_MS = 60.0  # start_ghap, retrieve_memories, search_experiences
CLUSTERS_S = 10.0
RSS_MIB = 1024.0
PROMPTS = (
    "the nightly ETL job fails with a timeout while loading partner data",
    "why does the login flow drop the session after a refresh",
    "add retries to the http client used by the billing service",
    "pytest fails in test_loader with a KeyError on partner_id",
    "rename the config option and keep the old one working",
)
Arguments = Callable[[int], dict[str, Any]]


def _hooks(project: Path) -> dict[str, Arguments]:
    def where(i: int) -> dict[str, str]:
        return {"session_id": f"scale-{i // 10}", "cwd": str(project)}

    def outcome(i: int) -> dict[str, Any]:
        command, output = ("python -m pytest tests", PYTEST_FAIL) if i % 2 else ("pytest -q", PYTEST_PASS)
        return {"command": command, "output": output, "event": "PostToolUse", **where(i)}

    return {
        "hook_prompt_context": lambda i: {"prompt": f"{PROMPTS[i % len(PROMPTS)]} (run {i})", **where(i)},
        "hook_tool_outcome": outcome,
        "hook_file_read": lambda i: {"file_path": str(project / FILES[i % len(FILES)]), **where(i)},
        "hook_file_changed": lambda i: {"file_path": str(project / FILES[i % len(FILES)]), **where(i)},
        "hook_stop": lambda i: {"stop_hook_active": "false", **where(i)},
        "hook_session_event": lambda i: {"event": ("PreCompact", "SessionEnd")[i % 2], **where(i)},
    }


async def _timed(client: Client, tool: str, arguments: dict[str, Any]) -> float:
    started = time.perf_counter()
    await call_tool(client, tool, arguments)
    return time.perf_counter() - started


async def _clusterable(client: Client, axis: str) -> bool:
    """False when the axis has too few experiences to cluster (tiny runs: few falsified ones)."""
    try:
        await call_tool(client, "get_clusters", {"axis": axis})
    except BenchError as exc:
        if "insufficient_data" in str(exc):
            return False
        raise
    return True


async def _prompt_answers(client: Client, project: Path) -> bool:
    asked = {"prompt": PROMPTS[0], "session_id": "scale-check", "cwd": str(project)}
    return bool(await call_tool(client, "hook_prompt_context", asked))


async def time_hooks(client: Client, project: Path, calls: int) -> dict[str, list[float]]:
    # The agent's own tool waits for the worker's first search (which reads what it keeps in
    # memory); a hook past its budget would leave the hooks quiet, answering nothing at once.
    await call_tool(client, "assemble_context", {"query": PROMPTS[0]})
    answers = await _prompt_answers(client, project)
    found: dict[str, list[float]] = {}
    for tool, arguments in _hooks(project).items():
        await call_tool(client, tool, arguments(calls))  # warm
        found[tool] = [await _timed(client, tool, arguments(i)) for i in range(calls)]
    # A store that answers the prompt answers it still, unless a timed call outlasted the budget
    # and those after it were quiet rather than fast.
    if answers and not all([await _prompt_answers(client, project) for _ in range(3)]):
        raise BenchError("the prompt hook went quiet while it was timed: its figures are not answers")
    return found


async def time_ghap(client: Client, calls: int) -> dict[str, list[float]]:
    rng, samples = random.Random(9), []
    for n in range(calls):
        samples.append(await _timed(client, "start_ghap", _start(rng, n)))
        await call_tool(client, "resolve_ghap", {"status": "abandoned", "result": "bench: not pursued"})
    return {"start_ghap": samples}


async def time_search(client: Client, calls: int) -> dict[str, list[float]]:
    """The memory-side searches an agent calls, hybrid-ranked over the seeded store."""
    found: dict[str, list[float]] = {}
    searches: dict[str, Arguments] = {
        "retrieve_memories": lambda i: {"query": f"{PROMPTS[i % len(PROMPTS)]} (run {i})", "limit": 10},
        "search_experiences": lambda i: {"query": f"{PROMPTS[i % len(PROMPTS)]} (run {i})", "limit": 10},
    }
    for tool, arguments in searches.items():
        await call_tool(client, tool, arguments(calls))  # warm
        found[tool] = [await _timed(client, tool, arguments(i)) for i in range(calls)]
    return found


async def time_clusters(
    client: Client, jobs: ArqTransport, samples: list[SampleEntry], loaded: int, cold: int
) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    for axis in AXES:
        if not await _clusterable(client, axis):
            continue
        for _ in range(cold):  # a new experience first, so the axis is clustered again
            await seed_experiences(jobs, samples, range(loaded, loaded + 1))
            loaded += 1
            found.setdefault(f"get_clusters {axis} (cold)", []).append(
                await _timed(client, "get_clusters", {"axis": axis})
            )
        found[f"get_clusters {axis} (cached)"] = [
            await _timed(client, "get_clusters", {"axis": axis}) for _ in range(5)
        ]
    return found


def verdicts(
    times: dict[str, list[float]], memory: dict[str, Any]
) -> tuple[list[list[str]], dict[str, Any], dict[str, bool]]:
    """Table rows, summaries and PASS/FAIL against the issue's targets."""
    rows, summaries, passed = [], {}, {}
    for name, samples in times.items():
        summary = latency_summary_ms(samples)
        summaries[name] = summary
        if name.startswith("get_clusters"):
            figure, target = max(samples), CLUSTERS_S * 1000
            shown = f"max {figure * 1000:.0f} ms"
        else:
            target = HOOK_P95_MS if name.startswith("hook_") else TOOL_P95_MS
            figure = summary["p95_ms"] / 1000
            shown = f"{summary['p95_ms']:.1f} ms"
        passed[name] = figure * 1000 <= target
        verdict = "PASS" if passed[name] else "FAIL"
        rows.append([name, f"{summary['p50_ms']:.1f} ms", shown, f"≤ {target:.0f} ms", verdict])
    rss = memory.get("peak_rss_mib")
    passed["worker peak RSS"] = rss is not None and rss <= RSS_MIB
    shown = "?" if rss is None else f"{rss:.0f} MiB"
    verdict = "PASS" if passed["worker peak RSS"] else "FAIL"
    rows.append(["worker peak RSS (VmHWM)", "", shown, f"≤ {RSS_MIB:.0f} MiB", verdict])
    rows.append(["  of it, the worker's own (RssAnon)", "", f"{memory['peak_anon_mib']:.0f} MiB", "", ""])
    rows.append(["  of it, mapped files (RssFile)", "", f"{memory['peak_file_mib']:.0f} MiB", "", ""])
    return rows, summaries, passed

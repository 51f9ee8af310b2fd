"""Helpers every benchmark shares: machine facts, percentiles, tables, /proc CPU times, bounded waits."""

from __future__ import annotations

import asyncio
import math
import os
import platform
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/13"


class BenchError(Exception):
    """A benchmark cannot run (no Redis, a worker that died): shown as one message, not a traceback."""


class WaitTimeout(BenchError, TimeoutError):
    """:func:`wait_until` ran out of time."""


# --- the machine -------------------------------------------------------------------


def _proc_field(path: str, name: str) -> str | None:
    """The value of the first ``name: value`` line of a /proc file, or None off Linux."""
    try:
        for line in Path(path).read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == name:
                return value.strip()
    except OSError:
        pass
    return None


def _total_memory_bytes() -> int | None:
    mem_total = _proc_field("/proc/meminfo", "MemTotal")  # "16318412 kB"
    if mem_total is None:
        return None
    return int(mem_total.split()[0]) * 1024


async def redis_version(url: str) -> str | None:
    """The server's version, or None when it does not answer (the JSON should still be written)."""
    redis = Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    try:
        info = await redis.info("server")
        return str(info.get("redis_version"))
    except (RedisError, OSError):
        return None
    finally:
        await redis.aclose()


async def require_redis(url: str) -> str:
    """The server's version; raise BenchError at once if it does not answer, before anything starts."""
    version = await redis_version(url)
    if version is None:
        raise BenchError(f"Redis at {url} does not answer: start it (`make redis`) or pass --redis-url")
    return version


async def machine_info(redis_url: str) -> dict[str, Any]:
    """What a reader needs to compare two result files: numbers only mean something next to this."""
    memory = _total_memory_bytes()
    return {
        # The CPUs this process may use, as `nproc` counts them (a container may see fewer than the host).
        "nproc": len(os.sched_getaffinity(0)),
        "cpu_model": _proc_field("/proc/cpuinfo", "model name") or platform.processor() or None,
        "memory_total_bytes": memory,
        "memory_total_gib": None if memory is None else round(memory / 2**30, 2),
        "python_version": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "redis_version": await redis_version(redis_url),
        "hostname": socket.gethostname(),
        "timestamp_utc": datetime.now(UTC).isoformat(timespec="seconds"),
    }


# --- statistics --------------------------------------------------------------------


def percentile(samples: Sequence[float], pct: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), so small samples are not lumpy."""
    if not samples:
        raise ValueError("percentile of no samples")
    ordered = sorted(samples)
    rank = (len(ordered) - 1) * pct / 100
    low = math.floor(rank)
    high = math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def latency_summary_ms(samples_s: Sequence[float]) -> dict[str, float | int]:
    """p50/p95/p99/mean/min/max in milliseconds of durations given in seconds."""
    ms = [s * 1000 for s in samples_s]
    return {
        "n": len(ms),
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "p99_ms": percentile(ms, 99),
        "mean_ms": sum(ms) / len(ms),
        "min_ms": min(ms),
        "max_ms": max(ms),
    }


# --- output ------------------------------------------------------------------------


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A plain-text table: first column left-aligned (labels), the others right-aligned (numbers)."""
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        parts = [
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "| " + " | ".join(parts) + " |"

    print(line(headers))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print(line(row))


def progress(message: str) -> None:
    """Progress goes to stderr, so stdout carries only the results."""
    print(message, file=sys.stderr, flush=True)


# --- processes ---------------------------------------------------------------------


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), from /proc/<pid>/stat.

    The resolution is one clock tick (usually 10 ms), so measure over seconds, not milliseconds.
    """
    stat = Path(f"/proc/{pid}/stat").read_text()
    # The command name (field 2) is in parentheses and may hold spaces: split after its closing one.
    fields = stat[stat.rindex(")") + 2 :].split()
    # Fields 14 (utime) and 15 (stime) overall; the rest starts at field 3.
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def process_cpu_seconds_precise(pid: int) -> float | None:
    """On-CPU time of a process's live threads in nanoseconds' resolution (schedstat), or None.

    Idle workers use a few clock ticks in ten seconds, too few for /proc/<pid>/stat to tell
    two of them apart. A thread that exits mid-window takes its time with it, so this is a
    supplement to :func:`process_cpu_seconds`, not a replacement.
    """
    total_ns = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            total_ns += int((task / "schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total_ns / 1e9


async def wait_until(
    check: Callable[[], Awaitable[bool]],
    *,
    timeout_s: float,
    what: str,
    interval_s: float = 0.05,
) -> float:
    """Call ``check`` every ``interval_s`` until it is true; return the seconds that took.

    Raises WaitTimeout (a TimeoutError) naming ``what`` after ``timeout_s``, so a stuck benchmark says why.
    """
    start = time.monotonic()
    deadline = start + timeout_s
    while True:
        if await check():
            return time.monotonic() - start
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"gave up after {timeout_s:.0f}s waiting for {what}")
        await asyncio.sleep(interval_s)


def report_tool_targets(
    samples: dict[str, list[float]], targets_p95_ms: Mapping[str, tuple[float, float]]
) -> tuple[dict[str, dict[str, float | int]], dict[str, bool]]:
    """Print p50/p95 per tool against (our, the seed's) p95 targets; return summaries and verdicts."""
    summaries = {tool: latency_summary_ms(samples[tool]) for tool in targets_p95_ms}
    rows, verdicts = [], {}
    for tool, summary in summaries.items():
        target, seed = targets_p95_ms[tool]
        verdicts[tool] = summary["p95_ms"] <= target
        verdict = "PASS" if verdicts[tool] else "FAIL"
        rows.append(
            [tool, f"{summary['p50_ms']:.1f}", f"{summary['p95_ms']:.1f}", f"≤ {target} [{seed}]", verdict]
        )
    print_table(["tool", "p50 ms", "p95 ms", "target p95 ms [seed]", ""], rows)
    return summaries, verdicts

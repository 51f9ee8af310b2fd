"""Time from spawning the stdio server to its answers to initialize and tools/list.

Claude Code spawns the server at every session start and waits for these two answers.
Three cases in one run: ours with a cold handshake cache (first start after an install
or upgrade), ours warm (every later start), and a plain mcp 2.x server with one tool.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import latency_summary_ms, print_table, progress

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench-startup", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
TARGET_MS = 1000.0
ANSWER_TIMEOUT_S = 60.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=10, help="starts per case (10)")


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


async def one_start(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Spawn, handshake, list tools; seconds from spawn to each answer."""
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(_line(INITIALIZE))
        await proc.stdin.drain()
        await asyncio.wait_for(proc.stdout.readline(), ANSWER_TIMEOUT_S)
        initialized = time.perf_counter() - started
        proc.stdin.write(_line(INITIALIZED) + _line(TOOLS_LIST))
        await proc.stdin.drain()
        answer = json.loads(await asyncio.wait_for(proc.stdout.readline(), ANSWER_TIMEOUT_S))
        listed = time.perf_counter() - started
        assert answer.get("result", {}).get("tools"), f"no tools in {answer}"
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), ANSWER_TIMEOUT_S)
        except TimeoutError:
            proc.kill()
            await proc.wait()
    return initialized, listed


async def measure(label: str, runs: int, argv: list[str], env_for_run: Any) -> dict[str, Any]:
    progress(f"startup: {label} x{runs}")
    pairs = [await one_start(argv, env_for_run(i)) for i in range(runs)]
    return {
        "initialize": latency_summary_ms([p[0] for p in pairs]),
        "tools_list": latency_summary_ms([p[1] for p in pairs]),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("LMS_")}
    ours = [sys.executable, "-m", "learning_memory", "serve"]
    with tempfile.TemporaryDirectory(prefix="lms-bench-startup-") as tmp:
        root = Path(tmp)

        def env(data_dir: Path) -> dict[str, str]:
            # Inline mode: the handshake must not depend on Redis, a worker or the network.
            return {
                **base_env,
                "LMS_QUEUE": "inline",
                "LMS_DATA_DIR": str(data_dir),
                "LMS_LOG_LEVEL": "WARNING",
            }

        warm_dir = root / "warm"
        await one_start(ours, env(warm_dir))  # fills the cache the warm case reads
        cases = {
            "ours, cold cache": await measure("cold", args.runs, ours, lambda i: env(root / f"cold-{i}")),
            "ours, warm cache": await measure("warm", args.runs, ours, lambda i: env(warm_dir)),
            "plain mcp 2.x server": await measure(
                "plain", args.runs, [sys.executable, "-m", "bench.plain_server"], lambda i: base_env
            ),
        }
    plain = cases["plain mcp 2.x server"]["tools_list"]["p50_ms"]
    rows = [
        [
            name,
            f"{case['initialize']['p50_ms']:.0f}",
            f"{case['tools_list']['p50_ms']:.0f}",
            f"{case['tools_list']['p95_ms']:.0f}",
            f"{plain / case['tools_list']['p50_ms']:.1f}x",
        ]
        for name, case in cases.items()
    ]
    print_table(
        ["case", "initialize p50 ms", "tools/list p50 ms", "tools/list p95 ms", "vs plain (p50)"], rows
    )
    warm = cases["ours, warm cache"]["tools_list"]["p95_ms"]
    verdict = "PASS" if warm <= TARGET_MS else "FAIL"
    print(
        f"\ntarget: warm initialize + tools/list well under {TARGET_MS:.0f} ms: p95 {warm:.0f} ms {verdict}"
    )
    return {"runs": args.runs, "cases": cases, "target_ms": TARGET_MS, "warm_pass": verdict == "PASS"}

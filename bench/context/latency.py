"""Each hook's latency and injected tokens in ``bench context``: the MCP hooks called as Claude
Code would call them, the SessionStart command run as a process, with a warm worker, with none,
and against a Redis that never answers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bench.common import BenchError
from bench.context.calls import CALL_TIMEOUT_S, call, hook_text, injected_context
from bench.processes import REPO_ROOT
from learning_memory.shared.context_lines import estimate_tokens

PYTEST_PASS = "....................                                     [100%]\n20 passed in 0.84s\n"
PYTEST_FAIL = (
    "FAILED tests/test_totals.py::test_rounding - AssertionError: 10.01 != 10.00\n"
    "1 failed, 19 passed in 0.91s\n"
)
# The plugin's launcher runs the installed console script; so does this bench.
_CLI = Path(sys.executable).parent / "learning-memory"
HOOK_COMMAND = [str(_CLI), "hook"] if _CLI.exists() else [sys.executable, "-m", "learning_memory", "hook"]


def session_start_env(env: dict[str, str]) -> dict[str, str]:
    return {**env, "PYTHONPATH": str(REPO_ROOT)}


async def session_start(env: dict[str, str], project: Path, source: str = "startup") -> tuple[str, float]:
    """The SessionStart command as Claude Code runs it: a process, hook JSON on stdin."""
    stdin = json.dumps(
        {"session_id": "bench", "hook_event_name": "SessionStart", "cwd": str(project), "source": source}
    )
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *HOOK_COMMAND, "session-start",
        env=session_start_env(env), cwd=project,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), CALL_TIMEOUT_S)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise BenchError(f"session-start exited {proc.returncode}: {err.decode(errors='replace')[-500:]}")
    return out.decode(), elapsed


def hook_calls(project: Path) -> dict[str, Callable[[int], tuple[str, dict[str, Any]]]]:
    """Each MCP hook with the i-th arguments Claude Code would fill in."""
    outputs = [
        ("pytest -q", PYTEST_PASS),
        ("python -m pytest tests/unit", PYTEST_FAIL),
        ("ls -la", "total 0\n"),
    ]
    return {
        "hook_prompt_context": lambda i: (
            "hook_prompt_context",
            {"prompt": f"the nightly ETL job fails with a timeout while loading partner data (run {i})"},
        ),
        "hook_tool_outcome": lambda i: (
            "hook_tool_outcome",
            {"command": outputs[i % 3][0], "output": outputs[i % 3][1], "event": "PostToolUse"},
        ),
        "hook_file_changed": lambda i: (
            "hook_file_changed",
            {"file_path": str(project / "src" / f"mod{i}.py")},
        ),
        "hook_stop": lambda i: ("hook_stop", {"stop_hook_active": "false"}),
    }


async def time_hooks(
    client: Client, env: dict[str, str], project: Path, calls: int, starts: int
) -> dict[str, dict[str, Any]]:
    """Latency and injected tokens per hook: the MCP hooks in turn, then SessionStart processes."""
    found: dict[str, dict[str, Any]] = {}
    for name, arguments in hook_calls(project).items():
        samples, tokens, answered = [], [], 0
        for i in range(calls):
            tool, args = arguments(i)
            text, elapsed = await hook_text(client, tool, args)
            samples.append(elapsed)
            tokens.append(estimate_tokens(injected_context(text) if "hookSpecificOutput" in text else text))
            answered += bool(text.strip())
        found[name] = {"samples": samples, "tokens": tokens, "answered": answered}
    samples, tokens, answered = [], [], 0
    for _ in range(starts):
        text, elapsed = await session_start(env, project)
        samples.append(elapsed)
        tokens.append(estimate_tokens(injected_context(text)))
        answered += bool(text.strip())
    found["session_start"] = {"samples": samples, "tokens": tokens, "answered": answered}
    return found


@contextlib.asynccontextmanager
async def silent_redis() -> AsyncIterator[str]:
    """A TCP port that accepts connections and never answers: a hung Redis, the worst case."""
    held: list[asyncio.StreamWriter] = []

    async def hold(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        for writer in held:
            writer.close()
        server.close()


async def time_without_redis(env: dict[str, str], project: Path, calls: int, starts: int) -> dict[str, Any]:
    async with silent_redis() as url:
        silent_env = {**env, "LMS_REDIS_URL": url}
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "learning_memory", "serve"], env=silent_env, cwd=REPO_ROOT
        )

        async def measure() -> dict[str, Any]:
            started = time.perf_counter()
            async with Client(params, read_timeout_seconds=CALL_TIMEOUT_S) as client:
                ready_s = time.perf_counter() - started
                # initialize is answered from the handshake cache while the SDK still loads (~1 s);
                # a tool that needs no queue waits that out, so the hooks are timed, not the import.
                await call(client, "list_active_loops", {})
                loaded_s = time.perf_counter() - started
                found = await time_hooks(client, silent_env, project, calls, starts)
            return {"hooks": found, "initialize_s": ready_s, "loaded_s": loaded_s}

        try:
            return await asyncio.wait_for(measure(), 5 * CALL_TIMEOUT_S)
        except (TimeoutError, OSError) as exc:
            return {"error": f"{type(exc).__name__}: the server did not answer with a silent Redis ({exc})"}

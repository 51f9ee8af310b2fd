"""Context the Claude Code hooks inject: recall on a labelled set, tokens, and each hook's latency.

Seeds ``bench/data/context_set.json`` (past experiences through start_ghap/resolve_ghap,
memories through store_memory) through a real MCP client over stdio, arq mode, a real worker
and the real model. Every prompt then goes through ``hook_prompt_context`` (what the
UserPromptSubmit hook injects, at the server's relevance bar) and through ``assemble_context``
with no bar, whose scores give a grid of bars without restarting the server. Each hook is timed
warm, with the worker stopped, and against a Redis that accepts connections and never answers;
the SessionStart brief is timed as the process Claude Code runs. With ``--claude`` (on when the
pinned Claude Code is installed), the same hooks are timed as Claude Code itself measures them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bench import context_report as report
from bench.common import BenchError, progress
from bench.processes import REPO_ROOT, serving, stop_worker
from learning_memory.cli.client import result_payload
from learning_memory.shared.context_lines import estimate_tokens
from learning_memory.shared.settings import Settings

SET_PATH = Path(__file__).resolve().parent / "data" / "context_set.json"
DEFAULT_BARS = (0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60)
_ITEM_ID = re.compile(r"\[((?:exp|val|mem):[^\]\s]+)\]")
PYTEST_PASS = "....................                                     [100%]\n20 passed in 0.84s\n"
PYTEST_FAIL = (
    "FAILED tests/test_totals.py::test_rounding - AssertionError: 10.01 != 10.00\n"
    "1 failed, 19 passed in 0.91s\n"
)
# An active entry: evidence for the test-run hook, a reminder for Stop, a longer brief.
ACTIVE_ENTRY = {
    "domain": "debugging",
    "strategy": "systematic-elimination",
    "goal": "Fix the flaky totals test in invoice-api",
    "hypothesis": "A shared fixture leaks state between tests",
    "action": "Make the fixture function-scoped and rerun the suite",
    "prediction": "The test suite passes ten runs in a row",
}
# The plugin's launcher runs the installed console script; so does this bench.
_CLI = Path(sys.executable).parent / "learning-memory"
HOOK_COMMAND = [str(_CLI), "hook"] if _CLI.exists() else [sys.executable, "-m", "learning_memory", "hook"]
# How long one hook call may take before the bench calls it stuck: far above any target, so a
# slow answer is measured, not cut.
CALL_TIMEOUT_S = 30.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set", type=Path, default=SET_PATH, help="the labelled set (bench/data/context_set.json)"
    )
    parser.add_argument(
        "--min-score",
        type=float,
        default=None,
        help="LMS_CONTEXT_MIN_SCORE for the server (default: the server's own default)",
    )
    parser.add_argument(
        "--bars", default=",".join(f"{b:.2f}" for b in DEFAULT_BARS), help="relevance bars of the grid"
    )
    parser.add_argument("--calls", type=int, default=40, help="timed calls per hook, warm (40)")
    parser.add_argument("--cold-calls", type=int, default=5, help="timed calls per hook with no worker (5)")
    parser.add_argument("--session-starts", type=int, default=10, help="SessionStart processes timed (10)")
    claude = parser.add_mutually_exclusive_group()
    claude.add_argument(
        "--claude", dest="claude", action="store_true", default=None, help="time hooks in Claude Code"
    )
    claude.add_argument("--no-claude", dest="claude", action="store_false", help="skip Claude Code sessions")
    parser.add_argument("--claude-sessions", type=int, default=3, help="Claude Code sessions (3)")


# --- calls ----------------------------------------------------------------------------


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    result = await asyncio.wait_for(client.call_tool(tool, arguments), CALL_TIMEOUT_S)
    if result.is_error:
        raise BenchError(f"{tool} failed: {result.content}")
    return result_payload(result)


async def hook_text(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[str, float]:
    """A hook tool's text answer (what Claude Code reads as the hook's stdout) and its latency."""
    started = time.perf_counter()
    result = await asyncio.wait_for(client.call_tool(tool, arguments), CALL_TIMEOUT_S)
    elapsed = time.perf_counter() - started
    if result.is_error:
        raise BenchError(f"{tool} answered an error, but hooks must fail open: {result.content}")
    return "".join(getattr(block, "text", "") for block in result.content), elapsed


def injected_context(text: str) -> str:
    """The additionalContext of a hook answer ('' for an empty answer or a control object)."""
    if not text.strip():
        return ""
    answer = json.loads(text)
    return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))


# --- seeding --------------------------------------------------------------------------


async def seed(client: Client, labelled: dict[str, Any]) -> dict[str, str]:
    """Store the set's history; return each context id (exp:…, mem:…) → the set's local id."""
    local: dict[str, str] = {}
    for e in labelled["experiences"]:
        start = {k: e[k] for k in ("domain", "strategy", "goal", "hypothesis", "action", "prediction")}
        await _call(client, "start_ghap", start)
        resolution = {k: e[k] for k in ("status", "result", "surprise", "root_cause", "lesson") if k in e}
        answer = await _call(client, "resolve_ghap", resolution)
        local[f"exp:{answer['id']}"] = e["id"]
    for m in labelled["memories"]:
        stored = await _call(
            client, "store_memory", {k: m[k] for k in ("content", "category", "importance", "tags")}
        )
        local[f"mem:{stored['id']}"] = m["id"]
    return local


# --- quality --------------------------------------------------------------------------


async def judge_prompts(
    client: Client, labelled: dict[str, Any], local: dict[str, str]
) -> tuple[list[dict[str, Any]], list[float]]:
    """Each prompt's injected ids (through the hook) and its ranking with no bar; hook latencies."""
    rows, latencies = [], []
    for prompt in labelled["prompts"]:
        text, elapsed = await hook_text(client, "hook_prompt_context", {"prompt": prompt["text"]})
        latencies.append(elapsed)
        block = injected_context(text)
        injected = [local.get(i, i) for i in dict.fromkeys(_ITEM_ID.findall(block))]
        # The hook's embedding is cached now, so this call costs a vector search only.
        ranked = await _call(
            client, "assemble_context", {"query": prompt["text"], "budget_tokens": 4_000, "min_score": 0.0}
        )
        rows.append(
            {
                **prompt,
                "injected": injected,
                "injected_tokens": estimate_tokens(block),
                "ranked": [(local.get(i["id"], i["id"]), round(i["score"], 3)) for i in ranked["items"]],
            }
        )
    return rows, latencies


# --- latency --------------------------------------------------------------------------


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
                await _call(client, "list_active_loops", {})
                loaded_s = time.perf_counter() - started
                found = await time_hooks(client, silent_env, project, calls, starts)
            return {"hooks": found, "initialize_s": ready_s, "loaded_s": loaded_s}

        try:
            return await asyncio.wait_for(measure(), 5 * CALL_TIMEOUT_S)
        except (TimeoutError, OSError) as exc:
            return {"error": f"{type(exc).__name__}: the server did not answer with a silent Redis ({exc})"}


# --- Claude Code ----------------------------------------------------------------------


def claude_available() -> bool:
    from bench.claude_code import ClaudeCodeMissing, pinned_claude

    try:
        pinned_claude()
    except ClaudeCodeMissing:
        return False
    return True


async def time_in_claude(
    args: argparse.Namespace, env: dict[str, str], tmp: Path, labelled: dict[str, Any]
) -> dict[str, Any]:
    from bench import context_claude  # only with Claude Code installed

    return await asyncio.to_thread(context_claude.run_sessions, env, tmp, labelled, args.claude_sessions)


# --- the run --------------------------------------------------------------------------


async def _run_in(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    labelled = json.loads(args.set.read_text())
    bar = args.min_score if args.min_score is not None else Settings.model_fields["context_min_score"].default
    extra = {"LMS_CONTEXT_MIN_SCORE": str(args.min_score)} if args.min_score is not None else {}
    project = tmp / "project"
    (project / "src").mkdir(parents=True)
    timings: dict[str, Any] = {}
    claude: dict[str, Any] | None = None
    started = time.perf_counter()
    async with serving(args.redis_url, tmp, extra_env=extra) as (client, worker):
        env = worker.env
        await _call(client, "assemble_context", {"query": "warm-up"})  # the model is loaded
        brief_empty, _ = await session_start(env, project)
        seed_started = time.perf_counter()
        local = await seed(client, labelled)
        timings["seed_s"] = time.perf_counter() - seed_started
        progress(f"context: seeded {len(local)} items in {timings['seed_s']:.1f}s; judging prompts")
        rows, prompt_latencies = await judge_prompts(client, labelled, local)
        await _call(client, "start_ghap", ACTIVE_ENTRY)
        progress("context: timing hooks with a warm worker")
        warm = await time_hooks(client, env, project, args.calls, args.session_starts)
        warm["hook_prompt_context"]["samples"] += prompt_latencies
        if args.claude or (args.claude is None and claude_available()):
            progress("context: timing hooks through Claude Code")
            # A fresh entry, so the sessions' first test run is news to it and its line is shown.
            await _call(client, "start_ghap", ACTIVE_ENTRY)
            claude = await time_in_claude(args, env, tmp, labelled)
        await stop_worker(worker)
        progress("context: timing hooks with the worker stopped")
        no_worker = await time_hooks(client, env, project, args.cold_calls, min(3, args.session_starts))
    progress("context: timing hooks against a Redis that never answers")
    no_redis = await time_without_redis(env, project, args.cold_calls, min(3, args.session_starts))
    bars = [float(b) for b in args.bars.split(",")]
    from bench.context_themes import run_themes  # it imports this module's helpers

    themes = await run_themes(args.redis_url, tmp / "themes", bar, bars, extra)
    timings["total_s"] = time.perf_counter() - started
    return {"second_set": themes} | report.report(
        rows=rows,
        bar=bar,
        bars=bars,
        warm=warm,
        no_worker=no_worker,
        no_redis=no_redis,
        claude=claude,
        brief_without_history=estimate_tokens(injected_context(brief_empty)),
        timings=timings,
    )


async def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="lms-bench-context-"))
    try:
        return {
            "parameters": {
                "set": str(args.set),
                "min_score": args.min_score,
                "calls": args.calls,
                "cold_calls": args.cold_calls,
                "session_starts": args.session_starts,
            },
            **await _run_in(args, tmp),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

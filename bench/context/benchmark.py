"""The run of ``python -m bench context``: one server and worker for the first labelled set and
the hooks' latency (warm, worker stopped, Redis silent), Claude Code's own timings when it is
installed, then the second set; ``report`` prints and judges the figures."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import progress
from bench.context import report
from bench.context.calls import call, injected_context
from bench.context.first_set import judge_prompts, seed
from bench.context.latency import session_start, time_hooks, time_without_redis
from bench.context.themes import run_themes
from bench.processes import serving, stop_worker
from learning_memory.shared.context_lines import estimate_tokens
from learning_memory.shared.settings import Settings

SET_PATH = Path(__file__).resolve().parents[1] / "data" / "context_set.json"
DEFAULT_BARS = (0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60)
# An active entry: evidence for the test-run hook, a reminder for Stop, a longer brief.
ACTIVE_ENTRY = {
    "domain": "debugging",
    "strategy": "systematic-elimination",
    "goal": "Fix the flaky totals test in invoice-api",
    "hypothesis": "A shared fixture leaks state between tests",
    "action": "Make the fixture function-scoped and rerun the suite",
    "prediction": "The test suite passes ten runs in a row",
}


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


# --- Claude Code ----------------------------------------------------------------------


def claude_available() -> bool:
    from tests.support.claude_code import ClaudeCodeMissing, pinned_claude

    try:
        pinned_claude()
    except ClaudeCodeMissing:
        return False
    return True


async def time_in_claude(
    args: argparse.Namespace, env: dict[str, str], tmp: Path, labelled: dict[str, Any]
) -> dict[str, Any]:
    from bench.context.claude import run_sessions  # only with Claude Code installed

    return await asyncio.to_thread(run_sessions, env, tmp, labelled, args.claude_sessions)


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
        await call(client, "assemble_context", {"query": "warm-up"})  # the model is loaded
        brief_empty, _ = await session_start(env, project)
        seed_started = time.perf_counter()
        local = await seed(client, labelled)
        timings["seed_s"] = time.perf_counter() - seed_started
        progress(f"context: seeded {len(local)} items in {timings['seed_s']:.1f}s; judging prompts")
        rows, prompt_latencies = await judge_prompts(client, labelled, local)
        await call(client, "start_ghap", ACTIVE_ENTRY)
        progress("context: timing hooks with a warm worker")
        warm = await time_hooks(client, env, project, args.calls, args.session_starts)
        warm["hook_prompt_context"]["samples"] += prompt_latencies
        if args.claude or (args.claude is None and claude_available()):
            progress("context: timing hooks through Claude Code")
            # A fresh entry, so the sessions' first test run is news to it and its line is shown.
            await call(client, "start_ghap", ACTIVE_ENTRY)
            claude = await time_in_claude(args, env, tmp, labelled)
        await stop_worker(worker)
        progress("context: timing hooks with the worker stopped")
        no_worker = await time_hooks(client, env, project, args.cold_calls, min(3, args.session_starts))
    progress("context: timing hooks against a Redis that never answers")
    no_redis = await time_without_redis(env, project, args.cold_calls, min(3, args.session_starts))
    bars = [float(b) for b in args.bars.split(",")]
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

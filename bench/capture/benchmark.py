"""The run of ``python -m bench capture``: prepare the worktrees, start a real server and worker,
replay every session's hook calls, let the queues settle, then read what was kept and score it."""

from __future__ import annotations

import argparse
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client

from bench.capture import report
from bench.capture.hooks import HOOKS_JSON, load_hooks
from bench.capture.runner import CallRecord, Session, prepare, replay
from bench.capture.scoring import LABELS_JSON, labelled, load_labels, score, sha256
from bench.capture.stored import episode_records, fix_index, forget_results, mined, session_logs, settle
from bench.common import BenchError, progress, require_redis
from bench.processes import REPO_ROOT, serving

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "transcripts"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "transcripts",
        nargs="*",
        type=Path,
        metavar="TRANSCRIPT",
        help="Claude Code session files (.jsonl); a folder's are one project (default: the test fixtures)",
    )
    parser.add_argument("--worktrees", type=int, default=2, help="worktrees per project (2)")
    parser.add_argument("--labels", type=Path, default=LABELS_JSON, help="labels (bench/capture/labels.json)")
    parser.add_argument("--hooks", type=Path, default=HOOKS_JSON, help="hooks.json to follow (the plugin's)")
    parser.add_argument(
        "--keep-work",
        action="store_true",
        help="keep the scratch folder (worktrees, data, logs) and say where",
    )
    parser.add_argument(
        "--pause-timeout",
        type=float,
        default=60.0,
        help="seconds queued jobs may take after a turn's end, a compaction or a prompt; 0: no pause (60)",
    )
    parser.add_argument(
        "--settle-timeout", type=float, default=300.0, help="seconds to wait for queued jobs afterwards (300)"
    )


def _paths(args: argparse.Namespace) -> list[Path]:
    given: list[Path] = args.transcripts or [FIXTURES]
    paths = []
    for path in given:
        paths.extend(sorted(path.glob("*.jsonl")) if path.is_dir() else [path])
    return paths


async def _records(client: Client, sessions: list[Session], labels: dict[str, dict[str, Any]]) -> list[str]:
    """Auto experiences a search finds for each labelled episode's failing command, as text."""
    found: list[str] = []
    for session in sessions:
        label = labels.get(session.transcript.session_id) or {}
        commands = {
            str(e.input.get("tool_input", {}).get("command", ""))
            for e in session.events
            if e.input.get("tool_use_id") in {ep.get("red") for ep in label.get("episodes", [])}
        }
        for command in sorted(c for c in commands if c):
            result = await client.call_tool("search_experiences", {"query": command[:500], "limit": 5})
            if not result.is_error:
                found.append("".join(getattr(block, "text", "") for block in result.content))
    return found


async def _run_in(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    paths = _paths(args)
    if not paths:
        raise SystemExit("bench capture: no transcripts given")
    hooks = load_hooks(args.hooks)
    sessions = prepare(paths, tmp / "work", args.worktrees)
    digests = {s.transcript.session_id: sha256(s.transcript.path) for s in sessions}
    all_labels = load_labels(args.labels)
    labels = {sid: lab for sid, d in digests.items() if (lab := labelled(all_labels, sid, d)) is not None}
    progress(f"capture: {len(sessions)} sessions ({len(labels)} labelled), {args.worktrees} worktrees each")
    (tmp / "journal").mkdir()  # a project that uses the memory: hooks act on it
    namespace = f"bench-capture-{secrets.token_hex(4)}"
    calls: list[CallRecord] = []
    timings: dict[str, float | None] = {}
    connected = False
    try:
        async with serving(args.redis_url, tmp, namespace=namespace) as (client, _worker):
            connected = True
            await client.call_tool("assemble_context", {"query": "warm-up"})  # the model is loaded
            paused: list[float] = []

            async def pause() -> None:
                waited = await settle(args.redis_url, namespace, args.pause_timeout)
                paused.append(args.pause_timeout if waited is None else waited)

            started = time.perf_counter()
            for index, session in enumerate(sessions, start=1):
                progress(f"capture: [{index}/{len(sessions)}] {session.transcript.path.name}")
                calls.extend(await replay(client, hooks, session, pause if args.pause_timeout > 0 else None))
            timings["replay_s"] = time.perf_counter() - started
            timings["paused_s"] = sum(paused)
            timings["settle_s"] = await settle(args.redis_url, namespace, args.settle_timeout)
            got = await mined(args.redis_url, namespace)
            episode_texts = await _records(client, sessions, labels) if got.totals.get("stored") else []
    except Exception as exc:
        if connected:
            raise
        raise BenchError(
            f"the server did not start or closed at once (its output is above): {exc!r}"
        ) from exc
    finally:
        await forget_results(args.redis_url, namespace)
    tables = fix_index(tmp / "data")
    records = episode_records(tmp / "data", tables) + episode_texts
    in_labelled = [got.by_session[sid].get("episodes", 0) for sid in labels if sid in got.by_session]
    episodes_mined = (
        sum(in_labelled)
        if in_labelled
        else (got.totals.get("episodes") if len(labels) == len(sessions) else None)
    )
    scores = score(labels, calls, records if records else None, episodes_mined)
    stored = {
        "fix_index_rows": None if tables is None else {name: len(rows) for name, rows in tables.items()},
        "session_logs": session_logs(tmp / "data"),
    }
    document = report.report(sessions, calls, got, stored, scores, len(labels))
    return {
        "parameters": {
            "worktrees": args.worktrees,
            "labels": str(args.labels),
            "hooks": str(args.hooks),
            "pause_timeout_s": args.pause_timeout,
        },
        "transcripts": [
            {
                "path": str(s.transcript.path),
                "session_id": s.transcript.session_id,
                "sha256": digests[s.transcript.session_id],
                "labelled": s.transcript.session_id in labels,
            }
            for s in sessions
        ],
        "timings_s": timings,
        **document,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    await require_redis(args.redis_url)
    tmp = Path(tempfile.mkdtemp(prefix="lms-bench-capture-"))
    try:
        return await _run_in(args, tmp)
    finally:
        if args.keep_work:
            progress(f"capture: scratch folder kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

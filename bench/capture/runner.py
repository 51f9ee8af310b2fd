"""The replay: transcripts grouped by folder (one project each), each group's sessions moved into
the worktrees of a repository of its own, then every hook call sent over MCP, in order and timed.

A call that answers an error, raises (a tool the server does not have, arguments it rejects) or
outlasts the hook's timeout is recorded as an error and the replay goes on: Claude Code too
carries on past a failed hook.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp import Client

from bench.capture.hooks import HookCall, Hooks, calls_for
from bench.capture.transcripts import HookEvent, Transcript, read_transcript
from bench.capture.worktrees import FileCounts, Materializer, make_repository, move_transcript, moved_events

# Events after which time passes in a real session (a turn's end, a compaction, the session's end,
# the next prompt): the replay lets queued work finish there.
PAUSE_AFTER = frozenset({"Stop", "PreCompact", "SessionEnd", "UserPromptSubmit"})
# Claude Code's own limit when a hook names none (seconds).
DEFAULT_HOOK_TIMEOUT_S = 60.0
_ERROR_CHARS = 300


@dataclass
class Session:
    transcript: Transcript
    group: str
    worktree: Path
    events: list[HookEvent]
    files: FileCounts = field(default_factory=FileCounts)


@dataclass
class CallRecord:
    session_id: str
    event: str
    tool: str
    tool_use_id: str | None
    seconds: float
    error: str | None = None
    context: str = ""  # the answer's hookSpecificOutput.additionalContext
    blocked: bool = False  # a Stop hook's {"decision": "block"}


def _encoded(folder: Path) -> str:
    """The name Claude Code gives a project's folder under ~/.claude/projects."""
    return str(folder).replace("/", "-").replace(".", "-")


def prepare(paths: list[Path], root: Path, worktrees: int) -> list[Session]:
    """Read, group and move the transcripts; sessions in replay order (each group by start time)."""
    groups: dict[Path, list[Transcript]] = defaultdict(list)
    for path in paths:
        groups[path.resolve().parent].append(read_transcript(path))
    sessions = []
    for index, (folder, transcripts) in enumerate(sorted(groups.items())):
        group_root = root / f"group{index}"
        folders = make_repository(group_root, worktrees)
        never = datetime.max.replace(tzinfo=UTC)
        transcripts.sort(key=lambda t: (t.started_at or never, t.path.name))
        for k, transcript in enumerate(transcripts):
            worktree = folders[k % worktrees]
            copy = root / "claude-projects" / _encoded(worktree) / f"{transcript.session_id}.jsonl"
            move_transcript(transcript.path, transcript.cwd, worktree, copy)
            events = moved_events(transcript.events, transcript.cwd, worktree, copy)
            sessions.append(Session(transcript, folder.name, worktree, events))
    return sessions


def answer_parts(text: str) -> tuple[str, bool]:
    """(additionalContext, blocked) of a hook's text answer, as Claude Code reads it."""
    try:
        answer = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return "", False  # plain text: not shown for these hooks (see DESIGN notes in the plugin tests)
    if not isinstance(answer, dict):
        return "", False
    output = answer.get("hookSpecificOutput")
    context = output.get("additionalContext", "") if isinstance(output, dict) else ""
    return str(context or ""), answer.get("decision") == "block"


async def call_hook(client: Client, session_id: str, call: HookCall, tool_use_id: str | None) -> CallRecord:
    record = CallRecord(session_id, call.event, call.tool, tool_use_id, 0.0)
    timeout = call.timeout_s or DEFAULT_HOOK_TIMEOUT_S
    started = time.perf_counter()
    try:
        result = await asyncio.wait_for(client.call_tool(call.tool, call.arguments), timeout)
    except TimeoutError:
        record.error = f"no answer within the hook's {timeout:g}s"
    except Exception as exc:  # an unknown tool or rejected arguments must not stop the replay
        record.error = f"{type(exc).__name__}: {exc}"[:_ERROR_CHARS]
    else:
        text = "".join(getattr(block, "text", "") for block in result.content)
        if result.is_error:
            record.error = text[:_ERROR_CHARS] or "error answer"
        else:
            record.context, record.blocked = answer_parts(text)
    record.seconds = time.perf_counter() - started
    return record


async def replay(
    client: Client, hooks: Hooks, session: Session, pause: Callable[[], Awaitable[object]] | None = None
) -> list[CallRecord]:
    """Send one session's hook calls in order, making its written files real just before each.

    ``pause`` runs after each event that may queue background work (mining): in a real session
    seconds or days pass between a turn's end and what follows, and a replay that raced on
    would measure a memory that had no time to learn.
    """
    materializer = Materializer(session.worktree)
    records = []
    for event in session.events:
        materializer.apply(event)
        tool_use_id = event.input.get("tool_use_id")
        for call in calls_for(hooks, event.input):
            records.append(await call_hook(client, session.transcript.session_id, call, tool_use_id))
        if pause is not None and event.name in PAUSE_AFTER:
            await pause()
    session.files = materializer.counts
    return records


def calls_by_tool(records: list[CallRecord]) -> dict[str, list[CallRecord]]:
    by_tool: dict[str, list[CallRecord]] = defaultdict(list)
    for record in records:
        by_tool[record.tool].append(record)
    return dict(by_tool)


def record_json(record: CallRecord) -> dict[str, Any]:
    return {k: v for k, v in record.__dict__.items() if v not in (None, "", False)}

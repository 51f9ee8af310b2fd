"""Hook tools for what happens around the agent's commands: a file edited, the agent stopping,
a compaction, the session's end. Each records the event in the session log; stopping,
compacting and ending also queue the log's mining (``server.capture.mining``)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from pydantic import Field

from learning_memory.server.capture.fix_hints import file_lessons
from learning_memory.server.capture.mining import mine_soon
from learning_memory.server.hooks.hook_output import NOTHING, Cwd, HookAnswer, SessionId, ToolUseId, tracking
from learning_memory.server.services import AppServices, app_services
from learning_memory.server.services.fail_open import within_budget
from learning_memory.server.services.inputs import utf8_safe
from learning_memory.server.tool_registry import tool
from learning_memory.server.transport import JobStillRunning
from learning_memory.shared.context_lines import one_line
from learning_memory.shared.contracts.capture import EventType
from learning_memory.shared.contracts.code import REINDEX_FILE, ReindexFileRequest

_MARKERS: dict[str, EventType] = {"PreCompact": "compact", "SessionEnd": "end", "Stop": "stop"}


async def _record_and_mine(app: AppServices, kind: EventType, session_id: str, cwd: str) -> None:
    async def work() -> None:
        if not session_id or (where := await asyncio.to_thread(app.capture.place, cwd)) is None:
            return
        await asyncio.to_thread(app.capture.marker, kind, session_id, cwd)
        await mine_soon(app, session_id, where)

    await within_budget(app, f"capture_{kind}", work, None, needs_worker=False)


@tool(
    "hook_file_changed",
    description=(
        "For the Claude Code plugin's PostToolUse hook on Edit/Write: records the edit (file and changed "
        "lines) in the session log, and re-indexes the file in the background when its project is "
        "indexed for search_code. Answers nothing."
    ),
    instant=True,
)
async def hook_file_changed(
    ctx: Context[AppServices, Any],
    file_path: str = "",
    patch: Annotated[str, Field(description="The Edit tool's structuredPatch, as JSON.")] = "",
    session_id: SessionId = "",
    cwd: Cwd = "",
    tool_use_id: ToolUseId = "",
) -> HookAnswer:
    app = app_services(ctx)
    path = Path(utf8_safe(file_path).strip())
    if not path.is_absolute():
        return NOTHING

    async def record() -> HookAnswer:
        edit = await asyncio.to_thread(
            app.capture.edit, utf8_safe(session_id), utf8_safe(cwd), utf8_safe(tool_use_id), str(path), patch
        )
        return (
            await _lessons_once(app, "PostToolUse", edit.session_id, cwd, edit.file)
            if edit and edit.file
            else NOTHING
        )

    async def reindex() -> HookAnswer:
        # Queued, not awaited (a budget of 0): the batch queue re-reads the file while the
        # session goes on.
        with contextlib.suppress(JobStillRunning):
            await app.jobs.run(REINDEX_FILE, ReindexFileRequest(path=str(path)), budget_s=0)
        return NOTHING

    lessons = (
        await within_budget(app, "capture_edit", record, NOTHING, needs_worker=False)
        if session_id
        else NOTHING
    )
    await within_budget(app, "file_changed", reindex, NOTHING)
    return lessons


async def _lessons_once(app: AppServices, event: str, session_id: str, cwd: str, file: str) -> HookAnswer:
    """The fixes, memories and lessons anchored to ``file``, the first time the session touches it."""
    where = await asyncio.to_thread(app.capture.place, cwd)
    if where is None or not app.capture.first_touch(session_id, where, file):
        return NOTHING
    shown = await asyncio.to_thread(file_lessons, app.capture.fixes, where.project, where.worktree, file)
    if not shown.items:
        return NOTHING
    await asyncio.to_thread(app.capture.injected, session_id, cwd, shown.items, "file_lesson")
    return HookAnswer.context(event, shown.text)


@tool(
    "hook_file_read",
    description=(
        "For the Claude Code plugin's PostToolUse hook on Read: the failures fixed before by editing "
        "this file and the memories and lessons that name it, once per file per session (nothing "
        "when there are none)."
    ),
    instant=True,
)
async def hook_file_read(
    ctx: Context[AppServices, Any], file_path: str = "", session_id: SessionId = "", cwd: Cwd = ""
) -> HookAnswer:
    app = app_services(ctx)
    path, sid, folder = utf8_safe(file_path).strip(), utf8_safe(session_id), utf8_safe(cwd)
    if not path or not sid:
        return NOTHING

    async def work() -> HookAnswer:
        where = await asyncio.to_thread(app.capture.place, folder)
        if where is None:
            return NOTHING
        return await _lessons_once(app, "PostToolUse", sid, folder, app.capture.relative(where, path))

    return await within_budget(app, "file_read", work, NOTHING, needs_worker=False)


@tool(
    "hook_stop",
    description=(
        "For the Claude Code plugin's Stop hook: records the stop, mines the session's log in the "
        "background, and reminds once per GHAP entry that it is still active."
    ),
    instant=True,
)
async def hook_stop(
    ctx: Context[AppServices, Any], stop_hook_active: str = "false", session_id: SessionId = "", cwd: Cwd = ""
) -> HookAnswer:
    app = app_services(ctx)
    if stop_hook_active.strip().lower() == "true":
        return NOTHING  # continuing because of a Stop hook already: never hold the agent twice
    await _record_and_mine(app, "stop", utf8_safe(session_id), utf8_safe(cwd))
    if not tracking(app):
        return NOTHING

    async def work() -> HookAnswer:
        entry = await asyncio.to_thread(app.journal.active)
        if entry is None or entry.id in app.reminded:
            return NOTHING
        app.reminded.add(entry.id)
        reason = (
            f'Learning memory: the GHAP entry "{one_line(entry.goal, 120)}" is still active. If you '
            'know the outcome, resolve_ghap(status="confirmed"|"falsified"|"abandoned", result=...) '
            "so the experience is kept; if the work goes on, say so and stop."
        )
        return HookAnswer(decision="block", reason=reason)

    return await within_budget(app, "stop", work, NOTHING, needs_worker=False)


@tool(
    "hook_session_event",
    description=(
        "For the Claude Code plugin's PreCompact hook (and clients that can still call at SessionEnd): "
        "records the event and mines the session's log in the background. Answers nothing."
    ),
    instant=True,
)
async def hook_session_event(
    ctx: Context[AppServices, Any],
    event: Literal["PreCompact", "SessionEnd"] = "SessionEnd",
    session_id: SessionId = "",
    cwd: Cwd = "",
) -> HookAnswer:
    await _record_and_mine(app_services(ctx), _MARKERS[event], utf8_safe(session_id), utf8_safe(cwd))
    return NOTHING

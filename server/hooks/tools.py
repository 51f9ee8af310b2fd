"""Tools the Claude Code plugin's hooks call (``mcp_tool`` hooks, over the connection Claude Code
already holds: no process per hook, and the same in inline mode): the prompt's context, and
what a Bash command's outcome says.

Each answers a :class:`HookAnswer`. Every hook fails open (``services.fail_open``): no answer in
time is an empty answer, never an error. What the session did is recorded in its log
(``server.capture``) whatever else happens: that needs no worker.
"""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from learning_memory.server.capture.fix_hints import fix_hints
from learning_memory.server.capture.mining import mine_soon
from learning_memory.server.capture.project import Place
from learning_memory.server.hooks.hook_output import NOTHING, Cwd, HookAnswer, SessionId, ToolUseId, tracking
from learning_memory.server.services import AppServices, app_services
from learning_memory.server.services.context_assembly import assemble, render
from learning_memory.server.services.fail_open import within_budget
from learning_memory.server.services.inputs import utf8_safe
from learning_memory.server.tool_registry import tool
from learning_memory.shared import runs
from learning_memory.shared.context_lines import estimate_tokens, one_line
from learning_memory.shared.contracts.capture import InjectedVia, RunOutcome
from learning_memory.shared.contracts.experiences import Evidence, GhapEntry
from learning_memory.shared.log import get_logger

log = get_logger(__name__)
PROMPT_BUDGET_TOKENS = 300
PROMPT_MAX_ITEMS = 4
PROMPT_HEADER = "Learning memory: past work that may bear on this (expand_context(ids) for whole records):"
# A prompt this short ("yes", "go on", "thanks") is a reply, not a task to look up.
MIN_PROMPT_CHARS = 12
# Tool output beyond this is the noise before a runner's summary, which comes last.
MAX_OUTPUT_CHARS = 20_000
_PREDICTS_RUN = re.compile(
    r"\b(tests?|pass(es|ing)?|fail(s|ing|ures?)?|green|red|suite|ci|build(s)?|compil\w*|pytest|jest|"
    r"vitest|cargo|go test|spec(s)?|assert\w*)\b",
    re.IGNORECASE,
)
_EXIT = re.compile(r"Exit code (\d+)")


def _bears_on(prediction: str) -> bool:
    return bool(_PREDICTS_RUN.search(prediction))


def _outcome_line(entry: GhapEntry, evidence: Evidence) -> str | None:
    """One line when the run speaks to the active prediction and says something new: the first
    run of its kind on this entry, or one whose outcome differs from the previous run's."""
    if not _bears_on(entry.prediction):
        return None
    earlier = [e for e in entry.evidence[:-1] if e.kind == evidence.kind]
    if earlier and earlier[-1].passed == evidence.passed:
        return None
    prediction = one_line(entry.prediction, 120)
    if evidence.passed:
        return (
            f'Learning memory: {evidence.summary}. The active GHAP predicted: "{prediction}". If this '
            'confirms it, resolve_ghap(status="confirmed", result=...).'
        )
    return (
        f'Learning memory: {evidence.summary}. Not yet what the active GHAP predicted ("{prediction}"): '
        'update_ghap if your hypothesis changed, or resolve_ghap(status="falsified", ...) if it is wrong.'
    )


@tool(
    "hook_prompt_context",
    description=(
        "For the Claude Code plugin's UserPromptSubmit hook: past experiences, values and memories "
        "relevant to a prompt, as hook output (empty when nothing is relevant). Call assemble_context "
        "yourself instead."
    ),
    instant=True,
)
async def hook_prompt_context(
    ctx: Context[AppServices, Any], prompt: str = "", session_id: SessionId = "", cwd: Cwd = ""
) -> HookAnswer:
    app = app_services(ctx)
    query = utf8_safe(prompt).strip()
    session, folder = utf8_safe(session_id), utf8_safe(cwd)
    where = await _record_prompt(app, session, folder, query)
    answer = NOTHING
    if len(query) >= MIN_PROMPT_CHARS and not query.startswith("/"):
        answer = await _prompt_context(app, query, session, folder)
    # Mined once the context is ranked, not before: the worker would run both at once.
    if where is not None and app.capture.unmined(session, where):
        await within_budget(
            app, "mine_prompt", lambda: mine_soon(app, session, where), False, needs_worker=False
        )
    return answer


async def _prompt_context(app: AppServices, query: str, session_id: str, cwd: str) -> HookAnswer:
    async def work() -> HookAnswer:
        budget = PROMPT_BUDGET_TOKENS - estimate_tokens(PROMPT_HEADER) - 1
        found = await assemble(
            app,
            query[:2_000],
            budget_tokens=budget,
            min_score=app.settings.context_min_score,
            max_items=PROMPT_MAX_ITEMS,
            timeout_s=app.settings.hook_budget_s,
        )
        block = render(found, PROMPT_HEADER)
        if not block:
            return NOTHING
        shown = [item.id for item in found.items]
        await _note_shown(app, session_id, cwd, shown, "prompt")
        return HookAnswer.context("UserPromptSubmit", block)

    return await within_budget(app, "prompt_context", work, NOTHING)


async def _note_shown(
    app: AppServices, session_id: str, cwd: str, items: list[str], via: InjectedVia
) -> None:
    """Log what the agent was shown (nothing when capture is off or there is no session)."""
    if items and session_id:
        await asyncio.to_thread(app.capture.injected, session_id, cwd, items, via)


async def _record_prompt(app: AppServices, session_id: str, cwd: str, prompt: str) -> Place | None:
    """Log the prompt (a new task starts, which settles the last one); where the session's log
    is, for mining it, or None when nothing was logged. The line is written before anything
    asks the queue, so a queue that does not answer costs the log nothing."""

    async def work() -> Place | None:
        where = await asyncio.to_thread(app.capture.place, cwd) if session_id else None
        if where is not None:
            await asyncio.to_thread(app.capture.prompt, session_id, cwd, prompt)
        return where

    return await within_budget(app, "capture_prompt", work, None, needs_worker=False)


@tool(
    "hook_tool_outcome",
    description=(
        "For the Claude Code plugin's PostToolUse hook on Bash: records the command and its outcome in "
        "the session log, keeps test and build runs as evidence on the active GHAP entry, and says in "
        "one or two lines when a failure was met and fixed before, or when a run bears on the prediction."
    ),
    instant=True,
)
async def hook_tool_outcome(
    ctx: Context[AppServices, Any],
    command: str = "",
    output: str = "",
    stderr: str = "",
    error: Annotated[str, Field(description="Claude Code's error text of a failed run.")] = "",
    event: str = "PostToolUse",
    session_id: SessionId = "",
    cwd: Cwd = "",
    tool_use_id: ToolUseId = "",
) -> HookAnswer:
    app = app_services(ctx)
    if event not in ("PostToolUse", "PostToolUseFailure") or not command.strip():
        return NOTHING

    async def work() -> HookAnswer:
        failed_run = event == "PostToolUseFailure"
        code = _exit_code(error) if failed_run else 0
        text = "\n".join(part[-MAX_OUTPUT_CHARS:] for part in (output, stderr, error) if part)
        where = await asyncio.to_thread(app.capture.place, utf8_safe(cwd)) if session_id else None
        worktree = str(where.worktree) if where else None
        outcome = runs.read_run(utf8_safe(command), utf8_safe(text), code, worktree=worktree)
        entry = await _add_evidence(app, command, outcome) if outcome.kind in ("test", "build") else None
        lines: list[str] = []
        if where is not None:
            sid = utf8_safe(session_id)
            ghap_id = entry.id if entry is not None else None
            await asyncio.to_thread(
                app.capture.run, sid, utf8_safe(cwd), utf8_safe(tool_use_id), command, outcome, ghap_id
            )
            if not outcome.passed:
                found = await asyncio.to_thread(
                    fix_hints, app.capture.fixes, where.project, where.worktree, outcome
                )
                lines.extend(found.lines)
                await _note_shown(app, sid, utf8_safe(cwd), found.items, "fix_hint")
        if entry is not None and (line := _outcome_line(entry, entry.evidence[-1])):
            lines.append(line)
        return HookAnswer.context(event, "\n".join(lines)) if lines else NOTHING

    return await within_budget(app, "tool_outcome", work, NOTHING, needs_worker=False)


def _exit_code(error: str) -> int:
    """The status Claude Code's error text of a failed Bash call starts with ("Exit code N")."""
    found = _EXIT.match(error.lstrip())
    return int(found.group(1)) if found else 1


async def _add_evidence(app: AppServices, command: str, outcome: RunOutcome) -> GhapEntry | None:
    """The run as evidence on the active GHAP entry (when there is one); the entry after it."""
    if not tracking(app) or outcome.kind not in ("test", "build"):
        return None
    evidence = Evidence(
        kind="test" if outcome.kind == "test" else "build",
        command=one_line(utf8_safe(command), 300),
        passed=outcome.passed,
        exit_code=outcome.exit_code,
        tests_passed=outcome.tests_passed,
        tests_failed=outcome.tests_failed,
        summary=runs.summary(outcome),
        at=datetime.now(UTC),
    )
    return await asyncio.to_thread(app.journal.add_evidence, evidence)

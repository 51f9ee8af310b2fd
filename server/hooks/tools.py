"""Tools the Claude Code plugin's hooks call (``mcp_tool`` hooks, over the connection Claude Code
already holds: no process per hook, and the same in inline mode).

Each answers a :class:`HookAnswer`: its JSON is Claude Code's hook output, and its text is what
an ``mcp_tool`` hook reads (Claude Code 2.1.330 joins the result's text blocks; the structured
content only has to match the output schema, which its MCP client checks). Nothing to say is
``{}``, written as empty text; context for the model is ``hookSpecificOutput.additionalContext``;
a Stop hook's reminder is ``{"decision": "block", "reason"}``. Every hook fails open
(``services.fail_open``): no answer in time is an empty answer, never an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from pydantic import BaseModel, ConfigDict, Field

from learning_memory.server.hooks import run_outcomes
from learning_memory.server.services import AppServices, app_services
from learning_memory.server.services.context_assembly import assemble, render
from learning_memory.server.services.fail_open import within_budget
from learning_memory.server.services.inputs import utf8_safe
from learning_memory.server.tool_answers import Answer, omitted
from learning_memory.server.tool_registry import tool
from learning_memory.server.transport import JobStillRunning
from learning_memory.shared.context_lines import estimate_tokens, one_line
from learning_memory.shared.contracts.code import REINDEX_FILE, ReindexFileRequest
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


def _tracking(app: AppServices) -> bool:
    """Whether this project has a journal at all: a hook must not create one in every project."""
    return app.settings.journal_dir.is_dir()


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


class HookContext(BaseModel):
    model_config = ConfigDict(validate_by_name=True)

    event: str = Field(alias="hookEventName")
    context: str = Field(alias="additionalContext", description="Shown to the model.")


class HookAnswer(Answer):
    """Claude Code's hook output: context for the model, a Stop hook's block, or nothing ({}).
    The same shape as ``hooks.answer.hook_answer``, which the SessionStart command writes without
    pydantic."""

    model_config = ConfigDict(validate_by_name=True)

    output: HookContext | None = omitted(alias="hookSpecificOutput")
    decision: Literal["block"] | None = omitted()
    reason: str | None = omitted("Why the agent is held: shown to the model.")

    @classmethod
    def context(cls, event: str, context: str) -> HookAnswer:
        return cls(output=HookContext(event=event, context=context))

    def answer_text(self, structured: dict[str, Any]) -> str:
        """The hook's stdout, as Claude Code reads it: the JSON object, or nothing at all."""
        return json.dumps(structured) if structured else ""


NOTHING = HookAnswer()


@tool(
    "hook_prompt_context",
    description=(
        "For the Claude Code plugin's UserPromptSubmit hook: past experiences, values and memories "
        "relevant to a prompt, as hook output (empty when nothing is relevant). Call assemble_context "
        "yourself instead."
    ),
    instant=True,
)
async def hook_prompt_context(ctx: Context[AppServices, Any], prompt: str = "") -> HookAnswer:
    app = app_services(ctx)
    query = utf8_safe(prompt).strip()
    if len(query) < MIN_PROMPT_CHARS or query.startswith("/"):
        return NOTHING

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
        return HookAnswer.context("UserPromptSubmit", block) if block else NOTHING

    return await within_budget(app, "prompt_context", work, NOTHING)


@tool(
    "hook_tool_outcome",
    description=(
        "For the Claude Code plugin's PostToolUse hook on Bash: recognises test and build runs, keeps "
        "their outcome as evidence on the active GHAP entry, and says in one line when it bears on "
        "the prediction."
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
) -> HookAnswer:
    app = app_services(ctx)
    kind = run_outcomes.classify(command)
    if kind is None or event not in ("PostToolUse", "PostToolUseFailure") or not _tracking(app):
        return NOTHING

    async def work() -> HookAnswer:
        failed_run = event == "PostToolUseFailure"
        code = (run_outcomes.exit_code(error) or 1) if failed_run else 0
        text = "\n".join(part[-MAX_OUTPUT_CHARS:] for part in (output, stderr, error) if part)
        counts = run_outcomes.counts(text)
        evidence = Evidence(
            kind=kind,
            command=one_line(utf8_safe(command), 300),
            passed=code == 0 and not counts.failed,
            exit_code=code,
            tests_passed=counts.passed,
            tests_failed=counts.failed,
            summary=run_outcomes.summary(kind, counts, code),
            at=datetime.now(UTC),
        )
        entry = await asyncio.to_thread(app.journal.add_evidence, evidence)
        line = _outcome_line(entry, evidence) if entry is not None else None
        return HookAnswer.context(event, line) if line else NOTHING

    return await within_budget(app, "tool_outcome", work, NOTHING, needs_worker=False)


@tool(
    "hook_file_changed",
    description=(
        "For the Claude Code plugin's PostToolUse hook on Edit/Write: re-indexes the edited file in the "
        "background when its project is indexed for search_code. Answers nothing."
    ),
    instant=True,
)
async def hook_file_changed(ctx: Context[AppServices, Any], file_path: str = "") -> HookAnswer:
    app = app_services(ctx)
    path = Path(utf8_safe(file_path).strip())
    if not path.is_absolute():
        return NOTHING

    async def work() -> HookAnswer:
        # Queued, not awaited (a budget of 0): the batch queue re-reads the file while the
        # session goes on.
        with contextlib.suppress(JobStillRunning):
            await app.jobs.run(REINDEX_FILE, ReindexFileRequest(path=str(path)), budget_s=0)
        return NOTHING

    return await within_budget(app, "file_changed", work, NOTHING)


@tool(
    "hook_stop",
    description=(
        "For the Claude Code plugin's Stop hook: reminds once per GHAP entry that it is still active."
    ),
    instant=True,
)
async def hook_stop(ctx: Context[AppServices, Any], stop_hook_active: str = "false") -> HookAnswer:
    app = app_services(ctx)
    if stop_hook_active.strip().lower() == "true" or not _tracking(app):
        return NOTHING  # continuing because of a Stop hook already: never hold the agent twice

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

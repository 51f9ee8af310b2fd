"""What a hook tool answers: Claude Code's hook output, as a typed answer.

Its JSON is Claude Code's hook output, and its text is what an ``mcp_tool`` hook reads (Claude
Code joins the result's text blocks; the structured content only has to match the output
schema, which its MCP client checks). Nothing to say is ``{}``, written as empty text; context
for the model is ``hookSpecificOutput.additionalContext``; a Stop hook's reminder is
``{"decision": "block", "reason"}``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from learning_memory.server.services import AppServices
from learning_memory.server.tool_answers import Answer, omitted

SessionId = Annotated[str, Field(description="Claude Code's session id (the hook input's session_id).")]
Cwd = Annotated[str, Field(description="The session's working folder (the hook input's cwd).")]
ToolUseId = Annotated[str, Field(description="The hook input's tool_use_id: one event per tool call.")]


def tracking(app: AppServices) -> bool:
    """Whether this project has a GHAP journal at all: a hook must not create one in every project."""
    return app.settings.journal_dir.is_dir()


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

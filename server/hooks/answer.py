"""The one shape in which hook output reaches the model (hookSpecificOutput.additionalContext);
Claude Code reads any other JSON object as a control object and shows nothing. Standard library
only: the SessionStart command imports it."""

from __future__ import annotations

import json


def hook_answer(event: str, context: str) -> str:
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}})

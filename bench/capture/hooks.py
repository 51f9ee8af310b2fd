"""The MCP calls the plugin's hooks make for a hook event, built from ``plugin/hooks/hooks.json`` as
Claude Code 2.1.330 builds them, so the replay follows whatever that file says.

- A hook group applies when its ``matcher`` matches the event's match value (the tool name for tool
  events, ``source`` for SessionStart, ``trigger`` for PreCompact, ``reason`` for SessionEnd;
  other events ignore matchers). No matcher, ``""`` or ``"*"`` matches everything; a matcher of
  letters, digits, ``_`` and ``|`` is a list of exact names; anything else is a regular expression
  searched in the value.
- Only ``mcp_tool`` hooks are calls; command hooks (SessionStart's) run a process and are left out.
- In the ``input`` template every string is filled in, however deep: ``${a.b.c}`` is the value at
  that dotted path of the hook input; missing or null gives ``""``, an object or array its JSON
  (``JSON.stringify``: compact, non-ASCII kept), anything else ``String(value)``. Non-strings stay.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOOKS_JSON = Path(__file__).resolve().parents[2] / "plugin" / "hooks" / "hooks.json"
_PLACEHOLDER = re.compile(r"\$\{([a-zA-Z_][a-zA-Z0-9_.]*)\}")
_NAMES = re.compile(r"^[a-zA-Z0-9_|]+$")
_TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"})
_MATCH_FIELD = {
    "SessionStart": "source",
    "PreCompact": "trigger",
    "PostCompact": "trigger",
    "SessionEnd": "reason",
    "Notification": "notification_type",
}


@dataclass(frozen=True)
class HookCall:
    """One ``mcp_tool`` hook's call: the tool of ``server`` with the filled-in ``arguments``."""

    event: str
    server: str
    tool: str
    arguments: dict[str, Any]
    timeout_s: float | None


Hooks = dict[str, list[dict[str, Any]]]


def load_hooks(path: Path = HOOKS_JSON) -> Hooks:
    """The ``hooks`` object of a plugin's hooks.json: event name -> its matcher groups."""
    document = json.loads(path.read_text())
    hooks = document.get("hooks", document)
    if not isinstance(hooks, dict):
        raise ValueError(f"{path}: no hooks object")
    return hooks


def js_string(value: Any) -> str:
    """``String(value)`` for a JSON value that is not an object, array or null."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def lookup(hook_input: Any, dotted: str) -> Any:
    """The value at a dotted path, or None when a step is missing or not an object."""
    value = hook_input
    for key in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _fill(text: str, hook_input: dict[str, Any]) -> str:
    def one(match: re.Match[str]) -> str:
        value = lookup(hook_input, match.group(1))
        if value is None:
            return ""
        if isinstance(value, dict | list):
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        return js_string(value)

    return _PLACEHOLDER.sub(one, text)


def substitute(template: Any, hook_input: dict[str, Any]) -> Any:
    """The template with every string's placeholders filled in from the hook input."""
    if isinstance(template, str):
        return _fill(template, hook_input)
    if isinstance(template, list):
        return [substitute(item, hook_input) for item in template]
    if isinstance(template, dict):
        return {key: substitute(value, hook_input) for key, value in template.items()}
    return template


def match_value(hook_input: dict[str, Any]) -> str | None:
    """What a group's matcher is compared with for this event (None: matchers do not apply)."""
    event = str(hook_input.get("hook_event_name", ""))
    if event in _TOOL_EVENTS:
        return str(hook_input.get("tool_name", ""))
    name = _MATCH_FIELD.get(event)
    return None if name is None else str(hook_input.get(name, ""))


def matches(matcher: str | None, value: str | None) -> bool:
    if value is None or not matcher or matcher == "*":
        return True
    if _NAMES.match(matcher):
        return value in {name.strip() for name in matcher.split("|")}
    try:
        return re.search(matcher, value) is not None
    except re.error:
        return False  # Claude Code logs an invalid matcher and runs none of its hooks


def calls_for(hooks: Hooks, hook_input: dict[str, Any]) -> list[HookCall]:
    """The ``mcp_tool`` calls Claude Code makes for this hook input, in hooks.json's order."""
    event = str(hook_input.get("hook_event_name", ""))
    value = match_value(hook_input)
    calls = []
    for group in hooks.get(event, []):
        if not matches(group.get("matcher"), value):
            continue
        for hook in group.get("hooks", []):
            if hook.get("type") != "mcp_tool":
                continue
            arguments = substitute(hook.get("input") or {}, hook_input)
            timeout = hook.get("timeout")
            calls.append(
                HookCall(
                    event=event,
                    server=str(hook.get("server", "")),
                    tool=str(hook["tool"]),
                    arguments=arguments if isinstance(arguments, dict) else {},
                    timeout_s=float(timeout) if isinstance(timeout, int | float) else None,
                )
            )
    return calls

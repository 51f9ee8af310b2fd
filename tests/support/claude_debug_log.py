"""Hook latencies as Claude Code itself saw them, read from its ``--debug-file``.

Lines look like ``2026-11-23T18:29:22.745Z [DEBUG] <message>`` (Claude Code 2.1.330):

- a command hook reports its own duration:
  ``Hooks: SessionStart:startup ["…/learning-memory-hook" session-start] (plugin …) finished
  with status 0 (98ms)``, followed by the lines that read its output;
- an ``mcp_tool`` hook logs only its start, ``Hooks: mcp_tool calling <server>/<tool> with N
  arg(s)``; its end is the first line that reads its answer: ``Hook output does not start with
  {…``, ``Hook JSON output had unrecognized keys…``, ``"Hook <label> (<Event>) success:…``,
  ``"Hook <label> (<Event>) error:…`` or ``Hook <Event> (…) provided additionalContext…``.

Hooks of one event run concurrently, so their lines interleave. The lines that read a command
hook's output come right after its ``finished`` line; those that read an ``mcp_tool`` answer
follow its first end line. Both runs are attributed before the remaining end lines are given to
the ``mcp_tool`` calls still open, oldest first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

_LINE = re.compile(r"^(?P<at>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z) \[(?P<level>\w+)\] (?P<message>.*)$")
_FINISHED = re.compile(
    r"^Hooks: (?P<label>\S+) \[(?P<command>.*)\](?: \(plugin (?P<plugin>[^)]*)\))? "
    r"finished with status (?P<status>-?\d+) \((?P<ms>\d+)ms\)"
)
_CALLING = re.compile(
    r"^Hooks: mcp_tool calling (?P<server>.+)/(?P<tool>[^/\s]+) with (?P<args>\d+) arg\(s\)"
)
_RESULT = re.compile(r'^"Hook (?P<label>\S+) \((?P<event>\w+)\) (?P<outcome>success|error):')
_PROVIDED = re.compile(r"^Hook (?P<event>\w+) \((?P<source>.*)\) provided additionalContext")
_READ = ("Hook output does not start with {", "Hook JSON output had unrecognized keys")


@dataclass
class HookTiming:
    """One hook run: ``kind`` is ``command`` or ``mcp_tool``; ``name`` the command or the tool;
    ``label`` Claude Code's label (``SessionStart:startup``, ``PostToolUse:Bash``…; an empty
    answer's log lines do not say it, see :func:`label_unnamed`); ``outcome`` ``success``,
    ``error``, ``status N`` or ``open`` (no end line: the session ended first); ``args`` how many
    arguments an ``mcp_tool`` hook passed (tells two hooks on one tool apart)."""

    kind: str
    name: str
    label: str
    started: datetime
    ms: float | None
    outcome: str
    args: int | None = None


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


# The lines that read one hook's answer come in this order, each at most once.
_ORDER = {"read": 0, "result": 1, "provided": 2}


@dataclass
class _Owner:
    """The hook the next reading lines belong to, and the last kind of line it has had."""

    hook: HookTiming
    last: int = -1


def hook_timings(text: str) -> list[HookTiming]:
    """Every hook run in a debug log, in the order they started."""
    timings: list[HookTiming] = []
    open_calls: list[HookTiming] = []
    owner: _Owner | None = None
    for raw in text.splitlines():
        match = _LINE.match(raw)
        if match is None:
            continue
        at, message = _time(match["at"]), match["message"]
        if finished := _FINISHED.match(message):
            command = HookTiming(
                "command",
                finished["command"],
                finished["label"],
                at,
                float(finished["ms"]),
                f"status {finished['status']}",
            )
            timings.append(command)
            owner = _Owner(command)
            continue
        if calling := _CALLING.match(message):
            call = HookTiming("mcp_tool", calling["tool"], "", at, None, "open", int(calling["args"]))
            timings.append(call)
            open_calls.append(call)
            owner = None
            continue
        result, provided = _RESULT.match(message), _PROVIDED.match(message)
        kind = "result" if result else "provided" if provided else "read" if message.startswith(_READ) else ""
        if not kind:
            continue
        if owner is not None and _continues(owner, kind, result, provided):
            owner.last = _ORDER[kind]
            if result and owner.hook.kind == "mcp_tool":
                owner.hook.label = owner.hook.label or result["label"]
                owner.hook.outcome = result["outcome"]
            continue
        if not open_calls:
            owner = None
            continue
        call = open_calls.pop(0)
        call.ms = (at - call.started).total_seconds() * 1000
        call.outcome = result["outcome"] if result else "success"
        call.label = result["label"] if result else provided["event"] if provided else ""
        owner = _Owner(call, _ORDER[kind])
    return timings


def _continues(
    owner: _Owner, kind: str, result: re.Match[str] | None, provided: re.Match[str] | None
) -> bool:
    """Whether a reading line still belongs to ``owner``: one that comes after the last it had,
    with its label."""
    if _ORDER[kind] <= owner.last:
        return False
    hook = owner.hook
    if result is not None:
        return not hook.label or result["label"] == hook.label
    if provided is not None:
        # A command's context line names the command as configured (unexpanded), so go by event.
        return hook.label.split(":")[0] in ("", provided["event"])
    return True


def label_unnamed(timings: list[HookTiming], hooks_config: dict[str, Any]) -> None:
    """Fill in the label of ``mcp_tool`` runs whose log lines did not name it, from a plugin's
    ``hooks.json``: the event (with its matcher) that calls that tool with that many arguments."""
    labels: dict[tuple[str, int], str] = {}
    for event, groups in hooks_config.get("hooks", {}).items():
        for group in groups:
            matcher = group.get("matcher", "")
            for hook in group.get("hooks", []):
                if hook.get("type") == "mcp_tool":
                    label = f"{event}:{matcher}" if matcher else event
                    labels.setdefault((hook["tool"], len(hook.get("input", {}))), label)
    for timing in timings:
        if timing.kind == "mcp_tool" and not timing.label and timing.args is not None:
            timing.label = labels.get((timing.name, timing.args), "")

"""A Claude Code session transcript (``~/.claude/projects/<folder>/<session>.jsonl``) read back
into the hook events Claude Code fired while it was written, each with the input its hooks got.

What fires, and where in the file:

- ``UserPromptSubmit {prompt}`` at a user line a person typed: plain text, not a tool result, not
  meta (skill bodies, caveats), not a compaction summary, not a command's output, not a task
  notification and not an interruption marker. A slash command is sent as ``/name args``.
- ``PostToolUse {tool_name, tool_input, tool_response, tool_use_id}`` at the line holding the
  tool's result; ``tool_response`` is that line's ``toolUseResult`` (for Bash ``{stdout, stderr,
  interrupted, ...}``, for Edit ``{filePath, oldString, newString, structuredPatch, ...}``).
- ``PostToolUseFailure {..., error}`` instead when the result has ``is_error``: ``error`` is the
  result's text, "Exit code N\\n<output>" for a failed Bash command.
- ``Stop`` when an assistant turn ends (before the next turn starts, or at the end of the file),
  unless the person interrupted it; ``PreCompact`` at a ``compact_boundary`` line; ``SessionEnd``
  at the end.

Every event but SessionEnd carries the permission mode, and each carries the ``prompt_id`` of the
turn's prompt when the lines hold one (``promptId``, Claude Code 2.1.330): as Claude Code sends
them. What a transcript does not keep is left out or estimated: ``duration_ms`` is the gap between
the call's line and the result's, a little longer than the tool ran.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
TEST_RUN = re.compile(
    r"\b(pytest|py\.test|unittest|tox|nox|jest|vitest|mocha|playwright test|cargo (?:test|nextest)|"
    r"go test|mix test|(?:npm|pnpm|yarn|bun) (?:run )?test|rspec|phpunit|dotnet test|gradlew? test|"
    r"mvn test|ctest|swift test|zig build test)\b"
)
# User lines that are Claude Code's own (command outputs, notifications), not something typed.
_NOT_TYPED = (
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<task-notification>",
    "<system-reminder>",
)
_INTERRUPTED = "[Request interrupted by user"
_COMMAND = re.compile(r"<command-name>\s*(/?[^<\s]+)\s*</command-name>")
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)


@dataclass(frozen=True)
class HookEvent:
    """One hook event: ``input`` is the JSON object Claude Code hands the event's hooks."""

    name: str
    input: dict[str, Any]
    line: int  # 1-based line of the transcript it comes from


@dataclass
class TranscriptStats:
    lines: int = 0
    unreadable_lines: int = 0
    prompts: int = 0
    turns: int = 0
    compactions: int = 0
    tool_uses: Counter[str] = field(default_factory=Counter)
    bash_commands: int = 0
    test_runs: int = 0
    failed_commands: int = 0
    failed_test_runs: int = 0
    edits: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            **{k: v for k, v in self.__dict__.items() if k != "tool_uses"},
            "tool_uses": dict(self.tool_uses.most_common()),
        }


@dataclass
class Transcript:
    path: Path
    session_id: str
    cwd: str  # where the session started
    events: list[HookEvent]
    stats: TranscriptStats
    started_at: datetime | None = None


def block_text(content: Any) -> str:
    """The text of a message's or a tool result's content: a string, or text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and "text" in b)
    return ""


def _has_tool_result(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def prompt_of(line: dict[str, Any]) -> str | None:
    """What the person typed on a user line, or None when the line is not a typed prompt."""
    if line.get("type") != "user" or line.get("isMeta") or line.get("isCompactSummary"):
        return None
    if line.get("isSidechain") or (line.get("origin") or {}).get("kind", "human") != "human":
        return None
    content = (line.get("message") or {}).get("content")
    if _has_tool_result(content):
        return None
    text = block_text(content).strip()
    if not text or text.startswith(_NOT_TYPED) or text.startswith(_INTERRUPTED):
        return None
    command = _COMMAND.search(text)
    if command:
        name = command.group(1) if command.group(1).startswith("/") else "/" + command.group(1)
        args = _COMMAND_ARGS.search(text)
        return f"{name} {args.group(1).strip()}".strip() if args else name
    return text


def _starts_turn(line: dict[str, Any]) -> bool:
    """A user line the model answers with a new turn: a prompt, a command or a task notification."""
    if line.get("type") != "user" or line.get("isMeta") or line.get("isCompactSummary"):
        return False
    if line.get("isSidechain"):
        return False
    content = (line.get("message") or {}).get("content")
    if _has_tool_result(content):
        return False
    text = block_text(content).strip()
    return bool(text) and not text.startswith(("<local-command-", _INTERRUPTED))


def _timestamp(line: dict[str, Any]) -> datetime | None:
    try:
        return datetime.fromisoformat(str(line["timestamp"]).replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return None


class _Reader:
    """Walks the lines once, in order, keeping what the next event needs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.events: list[HookEvent] = []
        self.stats = TranscriptStats()
        self.session_id = ""
        self.cwd = ""
        self.first_cwd = ""
        self.permission_mode = "default"
        self.prompt_id = ""
        self.tool_uses: dict[str, tuple[str, dict[str, Any], datetime | None]] = {}
        self.answered: set[str] = set()
        self.seen: set[str] = set()
        self.turn_open = False  # the model has spoken since the turn started
        self.interrupted = False
        self.last_text = ""
        self.started_at: datetime | None = None

    def emit(self, name: str, line_no: int, **fields: Any) -> None:
        base: dict[str, Any] = {
            "session_id": self.session_id,
            "transcript_path": str(self.path),
            "cwd": self.cwd,
        }
        if self.prompt_id:  # the prompt the event belongs to (Claude Code 2.1.330 and later)
            base["prompt_id"] = self.prompt_id
        if name != "SessionEnd":  # Claude Code gives SessionEnd no permission mode
            base["permission_mode"] = self.permission_mode
        base["hook_event_name"] = name
        self.events.append(HookEvent(name, base | fields, line_no))

    def end_turn(self, line_no: int) -> None:
        if self.turn_open and not self.interrupted:
            self.stats.turns += 1
            self.emit("Stop", line_no, stop_hook_active=False, last_assistant_message=self.last_text)
        self.turn_open = False
        self.interrupted = False

    def read(self, line_no: int, line: dict[str, Any]) -> None:
        uuid = line.get("uuid")
        if isinstance(uuid, str):
            if uuid in self.seen:
                return  # a resumed session repeats the lines it continues from
            self.seen.add(uuid)
        self.session_id = self.session_id or str(line.get("sessionId") or "")
        self.cwd = str(line.get("cwd") or self.cwd)
        self.first_cwd = self.first_cwd or self.cwd
        self.permission_mode = str(line.get("permissionMode") or self.permission_mode)
        if line.get("type") == "user" and not line.get("isSidechain"):
            self.prompt_id = str(line.get("promptId") or self.prompt_id)
        self.started_at = self.started_at or _timestamp(line)
        kind = line.get("type")
        if kind == "assistant":
            self.assistant(line)
        elif kind == "user":
            self.user(line_no, line)
        elif kind == "system" and line.get("subtype") == "compact_boundary":
            self.stats.compactions += 1
            trigger = (line.get("compactMetadata") or {}).get("trigger", "auto")
            self.emit("PreCompact", line_no, trigger=trigger, custom_instructions="")

    def assistant(self, line: dict[str, Any]) -> None:
        content = (line.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                name, tool_input = str(block.get("name")), block.get("input") or {}
                self.tool_uses[block["id"]] = (name, tool_input, _timestamp(line))
                self.stats.tool_uses[name] += 1
                self.stats.edits += name in EDIT_TOOLS
                if name == "Bash":
                    self.stats.bash_commands += 1
                    self.stats.test_runs += bool(TEST_RUN.search(str(tool_input.get("command", ""))))
            elif block.get("type") == "text" and str(block.get("text", "")).strip():
                self.last_text = str(block["text"])
        if not line.get("isSidechain"):
            self.turn_open = True

    def user(self, line_no: int, line: dict[str, Any]) -> None:
        content = (line.get("message") or {}).get("content")
        if isinstance(content, list) and _has_tool_result(content):
            results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            structured = line.get("toolUseResult") if len(results) == 1 else None
            for block in results:
                self.tool_result(line_no, line, block, structured)
            return
        if block_text(content).strip().startswith(_INTERRUPTED):
            self.interrupted = True
            return
        if _starts_turn(line):
            self.end_turn(line_no)
            prompt = prompt_of(line)
            if prompt is not None:
                self.stats.prompts += 1
                self.emit("UserPromptSubmit", line_no, prompt=prompt)

    def tool_result(self, line_no: int, line: dict[str, Any], block: dict[str, Any], structured: Any) -> None:
        tool_use_id = str(block.get("tool_use_id", ""))
        if tool_use_id not in self.tool_uses or tool_use_id in self.answered:
            return
        self.answered.add(tool_use_id)
        name, tool_input, asked_at = self.tool_uses[tool_use_id]
        text = block_text(block.get("content"))
        answered_at = _timestamp(line)
        duration = (
            {"duration_ms": int((answered_at - asked_at).total_seconds() * 1000)}
            if (asked_at and answered_at)
            else {}
        )
        common = {"tool_name": name, "tool_input": tool_input, "tool_use_id": tool_use_id, **duration}
        if block.get("is_error"):
            self.stats.failed_commands += name == "Bash"
            self.stats.failed_test_runs += name == "Bash" and bool(
                TEST_RUN.search(str(tool_input.get("command", "")))
            )
            self.emit("PostToolUseFailure", line_no, **common, error=text, is_interrupt=False)
            return
        if isinstance(structured, dict):
            response: Any = structured
        elif name == "Bash":
            response = {"stdout": text, "stderr": "", "interrupted": False, "isImage": False}
        else:
            response = structured if structured is not None else text
        self.emit("PostToolUse", line_no, **common, tool_response=response)


def read_transcript(path: Path) -> Transcript:
    """Read a session's JSONL file into the hook events it fired, in order."""
    reader = _Reader(path)
    line_no = 0
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line_no, raw in enumerate(lines, start=1):
            reader.stats.lines += 1
            try:
                line = json.loads(raw)
            except json.JSONDecodeError:
                reader.stats.unreadable_lines += 1
                continue
            if isinstance(line, dict):
                reader.read(line_no, line)
    reader.end_turn(line_no)
    reader.emit("SessionEnd", line_no, reason="other")
    session_id = reader.session_id or path.stem
    for event in reader.events:
        event.input["session_id"] = session_id
    return Transcript(path, session_id, reader.first_cwd, reader.events, reader.stats, reader.started_at)

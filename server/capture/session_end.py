"""The SessionEnd hook: ``learning-memory hook session-end``, run by Claude Code as a command.

Claude Code closes its MCP connections before SessionEnd hooks run, so this cannot be a tool
call. It appends the session's end to its log with the standard library (the line has the
session event's shape), then leaves the log's mining to a detached
``learning-memory mine`` process, so that Claude Code is not kept waiting.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from learning_memory.server.capture import project
from learning_memory.server.capture.session_log import SessionLog
from learning_memory.shared.paths import capture_dir, capture_from_env, data_dir_from_env


def event_line(kind: str, session_id: str, where: project.Place, **fields: Any) -> tuple[str, bytes]:
    """A session event's line in the contract's shape, written without pydantic (the commands
    that write one must start fast); its id first, as the log's readers expect."""
    event_id = f"{kind}-{uuid.uuid4().hex}"
    event = {
        "id": event_id,
        "session_id": session_id,
        "type": kind,
        "at": datetime.now(UTC).isoformat(),
        "project": where.project,
        "worktree": str(where.worktree),
        "branch": project.branch(where),
        **fields,
    }
    return event_id, json.dumps(event, separators=(",", ":")).encode()


def end_line(session_id: str, where: project.Place) -> tuple[str, bytes]:
    return event_line("end", session_id, where)


def record_end(event: dict[str, Any], data_dir: Path) -> Path | None:
    """Append the end event; the log's path, or None when there is nothing to mine."""
    session_id, cwd = str(event.get("session_id") or ""), str(event.get("cwd") or "")
    if not session_id or not cwd or not capture_from_env():
        return None
    where = project.place_of(cwd)
    log = SessionLog(capture_dir(data_dir))
    if not log.path(where.project, session_id).exists():
        return None  # a session that did nothing worth a line
    event_id, line = end_line(session_id, where)
    log.append_line(where.project, session_id, event_id, line)
    return log.path(where.project, session_id)


def mine_detached(path: Path) -> None:
    subprocess.Popen(
        [sys.executable, "-m", "learning_memory", "mine", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def main(stdin: Any = None) -> int:
    """Read Claude Code's hook input; print nothing; never fail the session."""
    try:
        event = json.loads((stdin or sys.stdin).read() or "{}")
        path = record_end(event, data_dir_from_env()) if isinstance(event, dict) else None
        if path is not None:
            mine_detached(path)
    except Exception as exc:  # fail open: the log is mined at the session's next trigger instead
        sys.stderr.write(json.dumps({"event": "hook.session_end_failed", "error": str(exc)}) + "\n")
    return 0

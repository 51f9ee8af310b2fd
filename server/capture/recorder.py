"""Turning hook calls into session events: where the session is, what ran, what was edited,
and whether HEAD moved (a commit) since the session's last command."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from learning_memory.server.capture import project
from learning_memory.server.capture.session_log import SessionLog
from learning_memory.shared.contracts.capture import (
    MAX_COMMAND_CHARS,
    MAX_INJECTED_ITEMS,
    MAX_PROMPT_CHARS,
    EventType,
    InjectedVia,
    LineRange,
    RunOutcome,
    SessionEvent,
)
from learning_memory.shared.fix_index import FixIndex
from learning_memory.shared.log import get_logger

log = get_logger(__name__)
# Commands after which a moved HEAD is worth a commit event (a checkout moves it too, but the
# miner checks that the new HEAD descends from the old before it calls it a commit).
_MOVES_HEAD = re.compile(r"\bgit\b")
# Events that alone give a miner nothing new: what was asked, and what the agent was shown (read
# only against runs that follow it).
_SETTLE_NOTHING = frozenset({"prompt", "injected"})


def changed_lines(patch: str) -> list[LineRange]:
    """Lines of the edited file that an Edit's ``structuredPatch`` added or replaced, as ranges
    in the new file; [] when there is no patch (a new file: all of it)."""
    try:
        hunks = json.loads(patch) if patch.strip() else []
    except ValueError:
        return []
    marked: list[int] = []
    for hunk in hunks if isinstance(hunks, list) else []:
        if not isinstance(hunk, dict) or not isinstance(hunk.get("newStart"), int):
            continue
        line = hunk["newStart"]
        for text in hunk.get("lines") or []:
            if not isinstance(text, str):
                continue
            if text.startswith("+"):
                marked.append(line)
                line += 1
            elif text.startswith("-"):
                marked.append(max(line, 1))  # removed here: the line now in its place
            else:
                line += 1
    ranges: list[LineRange] = []
    for number in sorted(set(marked)):
        if ranges and number == ranges[-1].end + 1:
            ranges[-1] = LineRange(start=ranges[-1].start, end=number)
        else:
            ranges.append(LineRange(start=number, end=number))
    return ranges


class Recorder:
    """Writes a session's events; one per server process, for every session it serves."""

    def __init__(self, root: Path, fix_index: Path, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.log = SessionLog(root)
        # One reader per process: it keeps its connection open between hooks.
        self.fixes = FixIndex(fix_index)
        self._heads: dict[str, str | None] = {}
        self._touched: set[tuple[str, str, str]] = set()
        # (session, project) whose log holds nothing a miner reads since mining was last asked.
        self._mined: set[tuple[str, str]] = set()

    def place(self, cwd: str) -> project.Place | None:
        """Where a session in ``cwd`` works; None when nothing is to be recorded."""
        return project.place_of(cwd) if self.enabled and cwd.strip() else None

    def _event(
        self, kind: EventType, session_id: str, where: project.Place, event_id: str = "", **fields: Any
    ) -> SessionEvent:
        return SessionEvent(
            id=event_id or f"{kind}-{uuid.uuid4().hex}",
            session_id=session_id,
            type=kind,
            at=datetime.now(UTC),
            project=where.project,
            worktree=str(where.worktree),
            branch=project.branch(where),
            **fields,
        )

    def _write(self, event: SessionEvent) -> SessionEvent:
        self.log.append(event)
        if event.type not in _SETTLE_NOTHING:
            self._mined.discard((event.session_id, event.project))
        return event

    def mined(self, session_id: str, where: project.Place) -> None:
        """Mining of the session's log as it is now was asked for."""
        self._mined.add((session_id, where.project))

    def unmined(self, session_id: str, where: project.Place) -> bool:
        """Whether the session logged anything a miner reads since mining was last asked (by this
        process: a session it has not mined yet has)."""
        return (session_id, where.project) not in self._mined

    def relative(self, where: project.Place, file_path: str) -> str:
        path = Path(file_path)
        try:
            return str(path.resolve().relative_to(where.worktree))
        except (ValueError, OSError):
            return file_path

    def first_touch(self, session_id: str, where: project.Place, file: str) -> bool:
        """True the first time this session reads or edits ``file`` (then False)."""
        key = (session_id, str(where.worktree), file)
        if key in self._touched:
            return False
        self._touched.add(key)
        return True

    def _head_moved(self, session_id: str, where: project.Place) -> tuple[str | None, str | None]:
        """(previous, new) HEAD when it moved since this session's last look, else (None, None)."""
        head = project.head_commit(where)
        key = f"{session_id}\0{where.worktree}"
        previous = self._heads.get(key)
        self._heads[key] = head
        if previous is None or head is None or previous == head:
            return None, None
        return previous, head

    def prompt(self, session_id: str, cwd: str, text: str) -> SessionEvent | None:
        where = self.place(cwd)
        if where is None or not session_id:
            return None
        self._head_moved(session_id, where)  # the session's HEAD before its first command
        return self._write(self._event("prompt", session_id, where, prompt=text[:MAX_PROMPT_CHARS]))

    def run(
        self,
        session_id: str,
        cwd: str,
        tool_use_id: str,
        command: str,
        outcome: RunOutcome,
        ghap_id: str | None,
    ) -> list[SessionEvent]:
        """The run, and a commit event after it when the command moved HEAD."""
        where = self.place(cwd)
        if where is None or not session_id:
            return []
        events = [
            self._event(
                "run",
                session_id,
                where,
                tool_use_id,
                command=command[:MAX_COMMAND_CHARS],
                run=outcome,
                ghap_id=ghap_id,
            )
        ]
        previous, head = self._head_moved(session_id, where)
        if head is not None and _MOVES_HEAD.search(command):
            events.append(
                self._event("commit", session_id, where, f"commit-{head}", head=head, previous_head=previous)
            )
        return [self._write(event) for event in events]

    def edit(
        self, session_id: str, cwd: str, tool_use_id: str, file_path: str, patch: str
    ) -> SessionEvent | None:
        where = self.place(cwd)
        if where is None or not session_id or not file_path.strip():
            return None
        return self._write(
            self._event(
                "edit",
                session_id,
                where,
                tool_use_id,
                file=self.relative(where, file_path),
                lines=changed_lines(patch),
            )
        )

    def marker(self, kind: EventType, session_id: str, cwd: str) -> SessionEvent | None:
        """A compaction, a stop or the session's end."""
        where = self.place(cwd)
        if where is None or not session_id:
            return None
        return self._write(self._event(kind, session_id, where))

    def injected(self, session_id: str, cwd: str, items: list[str], via: InjectedVia) -> SessionEvent | None:
        """The context ids a hook put in front of the agent: the miner later tells whether the
        episode that followed went green (``worker.capture.feedback``)."""
        shown = list(dict.fromkeys(item for item in items if item))[:MAX_INJECTED_ITEMS]
        where = self.place(cwd)
        if where is None or not session_id or not shown:
            return None
        return self._write(self._event("injected", session_id, where, items=shown, via=via))

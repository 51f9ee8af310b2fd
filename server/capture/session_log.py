"""The session log: every hook event of a session, one JSON line each, appended in place.

``<data_dir>/capture/<project>/sessions/<session_id>.jsonl``: the data folder, not the
worktree's journal, so that every worktree and clone of a repository (one project) is mined
together. Each append is one ``write`` to a file opened for appending, under an exclusive
lock: two processes never interleave lines, and a crash tears at most the last line, which
readers skip (the next append starts on a new line). An event id already in the file is not
written again, so a hook delivered twice is recorded once.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the SessionEnd command writes its line without pydantic
    from learning_memory.shared.contracts.capture import SessionEvent

# Events are written with their id first (the contract's first field), so an id can be read
# without parsing the line.
_ID = re.compile(rb'^\{"id":"((?:[^"\\]|\\.)*)"')
_SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}")


def safe_name(name: str) -> str:
    """``name`` when it is a plain file name, else a digest of it (a session id is untrusted)."""
    if _SAFE_NAME.fullmatch(name):
        return name
    return "h-" + hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:24]


@dataclass
class _Seen:
    ids: set[str] = field(default_factory=set)
    offset: int = 0  # how far into the file ``ids`` has read
    ends_with_newline: bool = True


class SessionLog:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._seen: dict[Path, _Seen] = {}

    def path(self, project: str, session_id: str) -> Path:
        return self.root / safe_name(project) / "sessions" / f"{safe_name(session_id)}.jsonl"

    def append(self, event: SessionEvent) -> bool:
        """Append ``event`` unless its id is in the log already; True when it was written."""
        line = event.model_dump_json().encode()
        return self.append_line(event.project, event.session_id, event.id, line)

    def append_line(self, project: str, session_id: str, event_id: str, line: bytes) -> bool:
        """Append one serialised event (a JSON object whose first key is its ``id``)."""
        path = self.path(project, session_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        line = line.rstrip(b"\n") + b"\n"
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            seen = self._catch_up(path, fd)
            if event_id in seen.ids:
                return False
            if not seen.ends_with_newline:
                line = b"\n" + line  # a torn last line stays alone, and is skipped
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            seen.ids.add(event_id)
            seen.offset += len(line)
            seen.ends_with_newline = True
            return True
        finally:
            os.close(fd)  # also releases the lock

    def event_count(self, project: str, session_id: str) -> int:
        """Events this process has seen in the log (all of them, after an append)."""
        seen = self._seen.get(self.path(project, session_id))
        return len(seen.ids) if seen else 0

    def _catch_up(self, path: Path, fd: int) -> _Seen:
        """Read the ids other processes appended since this one last looked."""
        seen = self._seen.setdefault(path, _Seen())
        size = os.fstat(fd).st_size
        if size < seen.offset:  # replaced or truncated under us: read it again
            self._seen[path] = seen = _Seen()
        if size == seen.offset:
            return seen
        chunk = os.pread(fd, size - seen.offset, seen.offset)
        for raw in chunk.splitlines():
            if match := _ID.match(raw):
                seen.ids.add(match.group(1).decode("utf-8", "replace"))
        seen.offset = size
        seen.ends_with_newline = chunk.endswith(b"\n")
        return seen

"""A failure's signature: the same failure met again, in any clone, reads the same digest."""

from __future__ import annotations

import hashlib

from learning_memory.shared.runs.normalise import normalise


def first_line(message: str) -> str:
    for line in message.splitlines():
        if line.strip():
            return line
    return ""


def signature(
    family: str,
    test_id: str | None,
    error_type: str | None,
    message: str,
    *,
    frame: str | None = None,
    worktree: str | None = None,
) -> str:
    """A 16-hex-digit digest of what identifies a failure: the output's family, the test, the error
    type and the first line of the message, normalised. Line numbers never count (they move with
    every edit above them); for a failure that names no test (a compile or lint error) its frame,
    "path" or "path:function", stands in for the test."""
    where = test_id if test_id else (frame or "")
    parts = (family, where, error_type or "", normalise(first_line(message), worktree=worktree))
    return hashlib.sha1("\x1f".join(parts).encode("utf-8")).hexdigest()[:16]

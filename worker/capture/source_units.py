"""A source file's code units as the capture sees them: each named function or class with its
line range and a digest of its text, parsed with the code index's own parser.

The digest is a short hash of the unit's source with whitespace collapsed, so re-indenting or
reflowing a function does not count as rewriting it, and anything else does.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from learning_memory.worker.code.index.parser import language_for, parse_source

MAX_FILE_BYTES = 2_000_000


@dataclass(frozen=True)
class SourceUnit:
    name: str  # qualified, e.g. "Session.refresh"
    start_line: int  # 1-based, inclusive
    end_line: int
    digest: str


class Unreadable(Exception):
    """The file is there but cannot be told about: too big, unreadable, or not a language we parse."""


def digest(body: str) -> str:
    return hashlib.sha256(" ".join(body.split()).encode()).hexdigest()[:16]


def read_units(worktree: Path, file: str, project: str = "") -> list[SourceUnit]:
    """The file's units (no module unit), in the parser's order. FileNotFoundError when it is
    gone; :class:`Unreadable` when it is there but cannot be parsed."""
    language = language_for(PurePosixPath(file))
    path = worktree / file
    if language is None:
        path.stat()  # gone or not, even when we cannot parse it
        raise Unreadable(f"{file}: not a language we parse")
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise Unreadable(f"{file}: too big")
        source = path.read_bytes()
    except FileNotFoundError:  # gone: not the same as unreadable
        raise
    except OSError as exc:
        raise Unreadable(f"{file}: {exc}") from exc
    result = parse_source(source, language=language, project=project, file_path=file)
    if result.error is not None:
        raise Unreadable(f"{file}: {result.error.message}")
    return [
        SourceUnit(unit.qualified_name, unit.start_line, unit.end_line, digest(unit.body))
        for unit in result.units
        if unit.unit_type != "module"
    ]

"""The code units an edit changed: its line ranges mapped to the innermost enclosing function or
class, parsed with the code index's own parser (``worker.code.index.parser``).

The file is read as it is on disk when the session is mined: edits made later in the session may
have moved lines a little, which at worst names a neighbouring unit. A file that is missing, too
big, not source or in a language we do not parse gives no symbol (the file alone is the anchor).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from learning_memory.shared.log import get_logger
from learning_memory.worker.capture.episodes import Edit
from learning_memory.worker.capture.source_units import SourceUnit, Unreadable, read_units

log = get_logger(__name__)


class SymbolResolver:
    """Per mining run: each file is read and parsed once, however many edits name it."""

    def __init__(self, worktree: Path, project: str) -> None:
        self.worktree = worktree
        self.project = project
        self._lines: dict[str, list[str | None]] = {}  # file -> innermost unit per line (index = line)
        self._digests: dict[str, dict[str, str]] = {}  # file -> unit -> digest of its text

    def symbols(self, edits: Iterable[Edit]) -> dict[str, tuple[str, ...]]:
        """For each edited file (in first-edited order), the units its edits changed."""
        found: dict[str, dict[str, None]] = {}
        for edit in edits:
            names = found.setdefault(edit.file, {})
            units = self._units_by_line(edit.file)
            for changed in edit.lines:
                for line in range(changed.start, min(changed.end, len(units) - 1) + 1):
                    if (name := units[line]) is not None:
                        names[name] = None
        return {file: tuple(names) for file, names in found.items()}

    def digests(self, file: str) -> dict[str, str]:
        """The digest of each unit of ``file`` as it is now (see ``source_units.digest``)."""
        self._units_by_line(file)
        return self._digests.get(file, {})

    def _units_by_line(self, file: str) -> list[str | None]:
        if file not in self._lines:
            self._lines[file] = self._parse(file)
        return self._lines[file]

    def _parse(self, file: str) -> list[str | None]:
        try:
            units = read_units(self.worktree, file, self.project)
        except (OSError, Unreadable):
            return []
        self._digests[file] = _first_digests(units)
        last = max((unit.end_line for unit in units), default=0)
        by_line: list[str | None] = [None] * (last + 2)
        # Outer units first (longest first among those starting together): inner ones overwrite them.
        for unit in sorted(units, key=lambda u: (u.start_line, -u.end_line)):
            for line in range(unit.start_line, min(unit.end_line, len(by_line) - 1) + 1):
                by_line[line] = unit.name
        return by_line


def _first_digests(units: list[SourceUnit]) -> dict[str, str]:
    found: dict[str, str] = {}
    for unit in units:
        found.setdefault(unit.name, unit.digest)
    return found

"""Whether the code an experience is anchored to is still as it was: cheap, without a model.

An anchor's file is read and parsed again (once per file and modification time) and its unit's
digest compared with the one taken when the experience was captured. ``fresh``: the same text
(or, without a digest, the file and unit are still there); ``changed``: rewritten; ``gone``: the
file or the unit is no more; ``unknown``: the file is there but cannot be told about (too big,
unreadable, not a language we parse, while a unit is named).

An experience is ``gone`` when every anchor it has is gone, ``changed`` when any anchor changed
or went, ``unknown`` when none can be told about, else ``fresh``. It is kept and searchable
either way: only what is injected unasked heeds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from learning_memory.shared.contracts.experiences import Anchor
from learning_memory.worker.capture.source_units import SourceUnit, Unreadable, read_units

AnchorState = Literal["fresh", "changed", "gone", "unknown"]


class StalenessChecker:
    """Against one worktree; each file parsed once per modification time, however many anchors
    name it (one checker may serve a whole mining run)."""

    def __init__(self, worktree: Path) -> None:
        self.worktree = worktree
        self._cache: dict[str, tuple[int, list[SourceUnit] | None]] = {}

    def _units(self, file: str) -> list[SourceUnit] | None:
        """The file's units; None when it cannot be told about. FileNotFoundError when gone."""
        mtime = (self.worktree / file).stat().st_mtime_ns
        cached = self._cache.get(file)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        try:
            units: list[SourceUnit] | None = read_units(self.worktree, file)
        except Unreadable:
            units = None
        self._cache[file] = (mtime, units)
        return units

    def anchor(self, anchor: Anchor) -> AnchorState:
        try:
            units = self._units(anchor.file)
        except FileNotFoundError:
            return "gone"
        except OSError:
            return "unknown"
        if anchor.symbol is None:
            return "fresh"  # the file is there; an edit elsewhere in it says nothing of this anchor
        if units is None:
            return "unknown"
        digests = [unit.digest for unit in units if unit.name == anchor.symbol]
        if not digests:
            return "gone"
        if anchor.digest is None or anchor.digest in digests:
            return "fresh"
        return "changed"

    def experience(self, anchors: Sequence[Anchor]) -> AnchorState:
        """``unknown`` when no anchor can be told about (what was known of it stands)."""
        states = [self.anchor(anchor) for anchor in anchors]
        known = [state for state in states if state != "unknown"]
        if not known:
            return "unknown"
        if all(state == "gone" for state in known):
            return "gone"
        return "changed" if any(state in ("changed", "gone") for state in known) else "fresh"

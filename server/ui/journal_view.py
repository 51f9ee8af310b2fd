"""The GHAP journal as the view reads it: the active entry and the archive, parsed without taking
the journal's lock or moving anything (a page must write nothing; a file being replaced this
instant is skipped, and shows on the next load). Archived files never change, so each is parsed
once per process."""

from __future__ import annotations

import os
from pathlib import Path

import pydantic

from learning_memory.shared.contracts.experiences import GhapEntry


def _read(path: Path) -> GhapEntry | None:
    try:
        return GhapEntry.model_validate_json(path.read_bytes())
    except (OSError, pydantic.ValidationError):
        return None


class JournalView:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._archived: dict[str, GhapEntry] = {}

    def _archive(self) -> list[GhapEntry]:
        folder = self.root / "archive"
        try:
            names = {
                e.name for e in os.scandir(folder) if e.name.endswith(".json") and not e.name.startswith(".")
            }
        except OSError:
            return []
        for gone in self._archived.keys() - names:
            del self._archived[gone]
        for name in names - self._archived.keys():
            entry = _read(folder / name)
            if entry is not None:
                self._archived[name] = entry
        return list(self._archived.values())

    def entries(self) -> list[GhapEntry]:
        """Newest ``created_at`` first."""
        entries = self._archive()
        active = _read(self.root / "active.json")
        if active is not None:
            entries.append(active)
        entries.sort(key=lambda entry: entry.created_at, reverse=True)
        return entries

    def entry(self, ghap_id: str) -> GhapEntry | None:
        return next((entry for entry in self.entries() if entry.id == ghap_id), None)

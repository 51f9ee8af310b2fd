"""The archive folder, parsed once per process: archived files are immutable, so a file name
seen before never needs reading again, and a listing only parses the names that are new.

Callers hold the journal lock; this class does no locking of its own.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import ValidationError as PydanticValidationError

from learning_memory.server.journal import files
from learning_memory.shared.contracts.experiences import GhapEntry
from learning_memory.shared.log import get_logger

log = get_logger(__name__)

SUFFIX = ".json"


class ArchiveCache:
    def __init__(self, archive_dir: Path, corrupt_dir: Path) -> None:
        self._dir = archive_dir
        self._corrupt_dir = corrupt_dir
        self._by_name: dict[str, GhapEntry] = {}
        # Unreadable files that could not be moved aside either: skipped, not retried each call.
        self._skipped: set[str] = set()
        self._newest_first: list[GhapEntry] | None = None

    def newest_first(self) -> list[GhapEntry]:
        """Every readable archived entry, newest ``created_at`` first (a shared list: do not
        modify it). Unreadable files are set aside and skipped."""
        names = {
            e.name for e in os.scandir(self._dir) if e.name.endswith(SUFFIX) and not e.name.startswith(".")
        }
        known = self._by_name.keys() | self._skipped
        if names != known:
            for gone in self._by_name.keys() - names:
                del self._by_name[gone]
            self._skipped &= names
            for name in names - known:
                entry = self._load(name)
                if entry is not None:
                    self._by_name[name] = entry
            self._newest_first = None
        if self._newest_first is None:
            self._newest_first = sorted(self._by_name.values(), key=lambda e: e.created_at, reverse=True)
        return self._newest_first

    def get(self, ghap_id: str) -> GhapEntry | None:
        name = f"{ghap_id}{SUFFIX}"
        entry = self._by_name.get(name)
        if entry is None:
            entry = self._load(name)
            if entry is not None:
                self.remember(entry)
        return entry

    def remember(self, entry: GhapEntry) -> None:
        """Record an entry this process has just archived, sparing a re-read."""
        self._by_name[f"{entry.id}{SUFFIX}"] = entry
        self._newest_first = None

    def _load(self, name: str) -> GhapEntry | None:
        path = self._dir / name
        try:
            entry = GhapEntry.model_validate_json(path.read_bytes())
            if entry.resolution is None:
                raise ValueError("an archived entry must be resolved")
            if f"{entry.id}{SUFFIX}" != name:
                raise ValueError(f"the file holds entry {entry.id}")
        except FileNotFoundError:
            log.warning("journal_archive_missing", path=str(path))
            return None
        except (PydanticValidationError, ValueError, OSError) as exc:
            # One bad file must not break listing: set it aside (never deleted) and go on.
            try:
                where = files.set_aside(path, self._corrupt_dir)
            except OSError as move_exc:
                self._skipped.add(name)
                log.error(
                    "journal_archive_unreadable", path=str(path), error=str(exc), move_error=str(move_exc)
                )
                return None
            log.error("journal_archive_corrupt", path=str(path), moved_to=str(where), error=str(exc))
            return None
        return entry

"""The journal API the GHAP tools use.

Layout under ``root`` (``LMS_JOURNAL_DIR``, default ``./.claude/journal``):

- ``active.json``        the active entry (at most one), a ``GhapEntry`` with ``resolution`` None;
- ``archive/<id>.json``  resolved and abandoned entries, one immutable file each;
- ``outbox/<id>``        empty markers: archived entries not yet stored for search;
- ``session_log.jsonl``  one JSON line per event (start, update, resolve, orphaned, persisted);
- ``corrupt/``           unreadable files, set aside with a timestamp (never silently reset);
- ``.lock``              every operation holds an exclusive ``flock`` on it, so several server
                         processes (Claude Code sessions in one project) never lose an update.

Writes are atomic: temp file in the same folder, fsync, rename, fsync the folder. Resolving
writes the archive file, then the outbox marker, then removes active.json; every operation
first repairs a resolve that a crash interrupted (see ``_repair``).
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError as PydanticValidationError

from learning_memory.server.journal import files, records
from learning_memory.server.journal.archive import ArchiveCache
from learning_memory.shared.contracts.experiences import (
    MAX_EVIDENCE,
    Domain,
    Evidence,
    GhapEntry,
    Lesson,
    OutcomeStatus,
    RootCause,
    Strategy,
)
from learning_memory.shared.errors import NotFoundError, StorageError, ValidationError
from learning_memory.shared.log import get_logger

log = get_logger(__name__)

ABANDONED_RESULT = "Abandoned: a new GHAP entry was started before this one was resolved."
NO_ACTIVE_MESSAGE = "No GHAP entry is active: call start_ghap to begin one."


def _close_fds(*fds: int) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _require(entry: GhapEntry | None) -> GhapEntry:
    if entry is None:
        raise NotFoundError(NO_ACTIVE_MESSAGE)
    return entry


class Journal:
    def __init__(self, root: Path, session_id: str) -> None:
        """``session_id`` names this server process's session; an active entry started by
        another session is *orphaned*, and resolving it here gives the bronze tier."""
        self.root = Path(root)
        self.session_id = session_id
        self._active_path = self.root / "active.json"
        self._archive_dir = self.root / "archive"
        self._outbox_dir = self.root / "outbox"
        self._corrupt_dir = self.root / "corrupt"
        try:
            for folder in (self._archive_dir, self._outbox_dir, self._corrupt_dir):
                folder.mkdir(parents=True, exist_ok=True)
            self._lock_fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
            self._log_fd = os.open(
                self.root / "session_log.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644
            )
        except OSError as exc:
            raise StorageError(f"Cannot open the GHAP journal in {self.root}: {exc}") from exc
        self._finalizer = weakref.finalize(self, _close_fds, self._lock_fd, self._log_fd)
        # flock is per open file description: threads of this process sharing our descriptor
        # would not exclude each other through it, so they also take this lock.
        self._thread_lock = threading.Lock()
        self._archive = ArchiveCache(self._archive_dir, self._corrupt_dir)
        self._swept = False

    def close(self) -> None:
        self._finalizer()

    # --- public API ------------------------------------------------------------------

    def active(self) -> GhapEntry | None:
        """The active entry, or None. A corrupt active.json is moved to ``corrupt/`` and
        reported with StorageError (the next call then sees no active entry)."""
        with self._locked() as current:
            return current

    def start(
        self, *, domain: Domain, strategy: Strategy, goal: str, hypothesis: str, action: str, prediction: str
    ) -> tuple[GhapEntry, GhapEntry | None]:
        """Start a new active entry; returns it and the entry it displaced, if any (archived
        as abandoned, tier "abandoned", with an outbox marker: it is never lost)."""
        with self._locked() as previous:
            now = datetime.now(UTC)
            displaced = None
            if previous is not None:
                displaced = records.with_resolution(
                    previous, session_id=self.session_id, status="abandoned", result=ABANDONED_RESULT, at=now
                )
                self._archive_entry(displaced)
                self._log_event("orphaned", previous.id)
            entry = GhapEntry(
                id=str(uuid.uuid4()),
                session_id=self.session_id,
                domain=domain,
                strategy=strategy,
                goal=goal,
                hypothesis=hypothesis,
                action=action,
                prediction=prediction,
                created_at=now,
                updated_at=now,
            )
            # Replacing active.json after archiving: a crash in between leaves an active entry
            # whose id is archived, which _repair clears.
            self._write_active(entry)
            self._log_event("start", entry.id)
            return entry, displaced

    def update(
        self,
        *,
        hypothesis: str | None = None,
        action: str | None = None,
        prediction: str | None = None,
        strategy: Strategy | None = None,
        note: str | None = None,
    ) -> GhapEntry:
        """Record the current hypothesis/action/prediction/strategy (and ``note``) as an
        Iteration, then apply the given fields. NotFoundError (saying to call start_ghap)
        when no entry is active."""
        with self._locked() as current:
            entry = _require(current)
            now = datetime.now(UTC)
            updated = records.with_iteration(
                entry,
                at=now,
                note=note,
                hypothesis=hypothesis,
                action=action,
                prediction=prediction,
                strategy=strategy,
            )
            self._write_active(updated)
            self._log_event("update", updated.id)
            return updated

    def add_evidence(self, evidence: Evidence) -> GhapEntry | None:
        """Keep a test or build run with the active entry (its latest ``MAX_EVIDENCE``); None,
        and nothing written, when no entry is active."""
        with self._locked() as current:
            if current is None:
                return None
            kept = [*current.evidence, evidence][-MAX_EVIDENCE:]
            updated = current.model_copy(update={"evidence": kept})
            self._write_active(updated)
            self._log_event("evidence", updated.id)
            return updated

    def resolve(
        self,
        *,
        status: OutcomeStatus,
        result: str,
        surprise: str | None = None,
        root_cause: RootCause | None = None,
        lesson: Lesson | None = None,
    ) -> GhapEntry:
        """Resolve the active entry (tier by ``confidence_tier``; orphaned = started by another
        session): write ``archive/<id>.json``, then the outbox marker, then remove active.json.
        NotFoundError when no entry is active."""
        with self._locked() as current:
            entry = _require(current)
            resolved = records.with_resolution(
                entry,
                session_id=self.session_id,
                status=status,
                result=result,
                surprise=surprise,
                root_cause=root_cause,
                lesson=lesson,
                at=datetime.now(UTC),
            )
            self._archive_entry(resolved)
            files.remove_durably(self._active_path)
            self._log_event("resolve", resolved.id)
            return resolved

    def entries(
        self,
        *,
        limit: int,
        domain: Domain | None = None,
        outcome: OutcomeStatus | None = None,
        since: datetime | None = None,
    ) -> list[GhapEntry]:
        """The active entry and the archive, newest ``created_at`` first, filtered (``outcome``
        matches resolved entries only; ``since`` compares with ``created_at``)."""
        if limit <= 0:
            return []
        if since is not None and since.tzinfo is None:
            since = since.replace(tzinfo=UTC)  # naive times are taken as UTC, like ours
        with self._locked() as current:
            archived = self._archive.newest_first()
        candidates = archived if current is None else [current, *archived]
        if current is not None and archived and archived[0].created_at > current.created_at:
            candidates = sorted(candidates, key=lambda e: e.created_at, reverse=True)
        selected: list[GhapEntry] = []
        for entry in candidates:
            if domain is not None and entry.domain != domain:
                continue
            if outcome is not None and (entry.resolution is None or entry.resolution.status != outcome):
                continue
            if since is not None and entry.created_at < since:
                # Newest first: every later candidate is older still.
                break
            selected.append(entry)
            if len(selected) >= limit:
                break
        return selected

    def outbox(self) -> list[GhapEntry]:
        """Archived entries not yet stored for search, oldest first (in the order they were
        archived: ``resolved_at``, then ``created_at``)."""
        with self._locked(strict=False):
            ids = [e.name for e in os.scandir(self._outbox_dir) if not e.name.startswith(".")]
            pending = [entry for ghap_id in ids if (entry := self._archive.get(ghap_id)) is not None]
        return sorted(
            pending, key=lambda e: (e.resolution.resolved_at if e.resolution else e.created_at, e.created_at)
        )

    def archived(self) -> list[GhapEntry]:
        """Every archived entry, newest ``created_at`` first (what an export carries)."""
        with self._locked(strict=False):
            return list(self._archive.newest_first())

    def import_archived(self, entry: GhapEntry, *, persist: bool) -> bool:
        """Archive a resolved entry from an export, unless one with its id is archived already
        (importing twice changes nothing); ``persist``: also leave it in the outbox, to be stored
        as an experience (when the export did not carry it). True when written."""
        if entry.resolution is None or not entry.id or "/" in entry.id or entry.id.startswith("."):
            raise ValidationError(f"Not a resolved GHAP entry that can be archived: {entry.id!r}")
        target = self._archive_dir / f"{entry.id}.json"
        with self._locked(strict=False):
            if target.exists():
                return False
            files.atomic_write(target, entry.model_dump_json(indent=2).encode())
            if persist:
                files.create_marker(self._outbox_dir / entry.id)
            self._archive.remember(entry)
            self._log_event("imported", entry.id)
            return True

    def mark_persisted(self, ghap_id: str) -> None:
        """Remove the outbox marker (idempotent)."""
        if not ghap_id or "/" in ghap_id or ghap_id.startswith("."):
            raise ValidationError(f"Not a GHAP entry id: {ghap_id!r}")
        with self._locked(strict=False):
            if files.remove_durably(self._outbox_dir / ghap_id):
                self._log_event("persisted", ghap_id)

    # --- internals -------------------------------------------------------------------

    @contextmanager
    def _locked(self, *, strict: bool = True) -> Iterator[GhapEntry | None]:
        """Hold both locks for the operation, yielding the active entry (after repairing an
        interrupted resolve), and turn I/O failures into StorageError. ``strict=False`` leaves
        a corrupt active.json to the user-facing calls, so background outbox work never
        swallows the message that tells the user where it went."""
        with self._thread_lock:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
                try:
                    if not self._swept:
                        self._sweep_temp_files()
                    yield self._repair(strict=strict)
                finally:
                    fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            except OSError as exc:
                log.error("journal_io_failed", root=str(self.root), error=str(exc))
                raise StorageError(
                    f"The GHAP journal in {self.root} could not be read or written: {exc}"
                ) from exc

    def _sweep_temp_files(self) -> None:
        """Temp files only exist while a writer holds the lock, so any seen under the lock
        were left by a crashed process: partial copies of data whose original is intact."""
        for folder in (self.root, self._archive_dir):
            for item in os.scandir(folder):
                if files.is_temp_name(item.name):
                    os.unlink(item.path)
                    log.warning("journal_temp_file_removed", path=item.path)
        self._swept = True

    def _repair(self, *, strict: bool) -> GhapEntry | None:
        """Read active.json, the entry this operation works on. A resolve (or an abandoning
        start) that crashed after archiving leaves active.json holding an archived id: the
        archive copy wins, so make sure its outbox marker exists and drop the stale file."""
        try:
            raw = self._active_path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            entry = GhapEntry.model_validate_json(raw)
            if entry.resolution is not None:
                raise ValueError("active.json holds a resolved entry")
        except (PydanticValidationError, ValueError) as exc:
            if not strict:
                return None
            where = files.set_aside(self._active_path, self._corrupt_dir)
            log.error("journal_active_corrupt", path=str(where), error=str(exc))
            raise StorageError(
                f"The active GHAP entry file was unreadable and has been moved to {where}; "
                "no entry is active now (call start_ghap to begin a new one)."
            ) from exc
        if (self._archive_dir / f"{entry.id}.json").exists():
            files.create_marker(self._outbox_dir / entry.id)
            files.remove_durably(self._active_path)
            log.warning("journal_interrupted_resolve_repaired", ghap_id=entry.id)
            return None
        return entry

    def _archive_entry(self, entry: GhapEntry) -> None:
        """Archive file first, then the marker: a marker never points at a missing file."""
        files.atomic_write(self._archive_dir / f"{entry.id}.json", entry.model_dump_json(indent=2).encode())
        files.create_marker(self._outbox_dir / entry.id)
        self._archive.remember(entry)

    def _write_active(self, entry: GhapEntry) -> None:
        files.atomic_write(self._active_path, entry.model_dump_json(indent=2).encode())

    def _log_event(self, event: str, ghap_id: str) -> None:
        line = {
            "at": datetime.now(UTC).isoformat(),
            "session": self.session_id,
            "event": event,
            "ghap_id": ghap_id,
        }
        # One write on an O_APPEND descriptor: lines from several processes never interleave.
        os.write(self._log_fd, (json.dumps(line) + "\n").encode())

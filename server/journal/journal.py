"""The journal API the GHAP tools use. (Skeleton: the layout and rules are in the docstring.)

Layout under ``root`` (``LMS_JOURNAL_DIR``, default ``./.claude/journal``):

- ``active.json``        the active entry (at most one), a ``GhapEntry`` with ``resolution`` None;
- ``archive/<id>.json``  resolved and abandoned entries, one immutable file each;
- ``outbox/<id>``        empty markers: archived entries not yet stored for search;
- ``session_log.jsonl``  one JSON line per event (start, update, resolve, orphaned, persisted);
- ``corrupt/``           unreadable files, set aside with a timestamp (never silently reset);
- ``.lock``              every operation holds an exclusive ``flock`` on it, so several server
                         processes (Claude Code sessions in one project) never lose an update.

Writes are atomic: temp file in the same folder, fsync, rename, fsync the folder.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from shared.contracts.experiences import (
    Domain,
    GhapEntry,
    Lesson,
    OutcomeStatus,
    RootCause,
    Strategy,
)


class Journal:
    def __init__(self, root: Path, session_id: str) -> None:
        """``session_id`` names this server process's session; an active entry started by
        another session is *orphaned*, and resolving it here gives the bronze tier."""
        raise NotImplementedError

    def active(self) -> GhapEntry | None:
        """The active entry, or None. A corrupt active.json is moved to ``corrupt/`` and
        reported with StorageError (the next call then sees no active entry)."""
        raise NotImplementedError

    def start(
        self, *, domain: Domain, strategy: Strategy, goal: str, hypothesis: str, action: str, prediction: str
    ) -> tuple[GhapEntry, GhapEntry | None]:
        """Start a new active entry; returns it and the entry it displaced, if any (archived
        as abandoned, tier "abandoned", with an outbox marker: it is never lost)."""
        raise NotImplementedError

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
        raise NotImplementedError

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
        raise NotImplementedError

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
        raise NotImplementedError

    def outbox(self) -> list[GhapEntry]:
        """Archived entries not yet stored for search, oldest first."""
        raise NotImplementedError

    def mark_persisted(self, ghap_id: str) -> None:
        """Remove the outbox marker (idempotent)."""
        raise NotImplementedError

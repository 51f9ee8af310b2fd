"""The fix index: which failures were met, and which edits (files, symbols, commit) made them go.

The session miner (``learning_memory.worker.capture``) writes it; the server's hooks read it on
every failing run ("this failure was fixed before by editing src/app.py (login)") and when a file
is read or edited ("fixes made here"). So reads must be fast and harmless: any SQLite error
answers [] rather than failing the hook, and a missing file is never created by a read. Several
processes share the file (WAL: readers never wait for the one writer).

Tables (:mod:`.fix_store`): ``signatures`` (each failure seen, per session), ``episodes`` (each
mined episode and the experience it taught, so that mining a log again stores and counts nothing
twice), ``fixes`` (a signature that went away after edits, and those edits) and ``fix_files``
(fixes by file), and ``feedback`` (whether what the hooks showed helped: :mod:`.fix_feedback`).
The miner's records and writes: :mod:`.fix_writes`.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from learning_memory.shared.anchored_items import AnchoredItem, items_for_file
from learning_memory.shared.contracts.capture import Failure, RunOutcome
from learning_memory.shared.fix_feedback import Outcomes, count_outcomes
from learning_memory.shared.fix_similarity import CLOSE, similarity, tokens
from learning_memory.shared.fix_store import connect, create_schema, open_reader
from learning_memory.shared.fix_writes import (
    EpisodeRecord,
    FeedbackRecord,
    FixRecord,
    SeenFailure,
    SessionChange,
    clean_path,
    note_seen,
    replace_aliases,
    replace_feedback,
    replace_session,
)
from learning_memory.shared.log import get_logger
from learning_memory.shared.paths import capture_dir

log = get_logger(__name__)
T = TypeVar("T")
# Candidates are the latest fixes of an error type or a file, compared here: enough to hold what
# still describes the code, and grouping them in SQL would sort every fix of a common type (an
# AssertionError) on each failing run.
CANDIDATES = 200
# Fixes whose code is gone since (every anchor deleted) teach nothing about the code there now:
# no read offers them, though the index keeps them (the experience stays searchable). Nor do
# those of an experience a person marked wrong (or merged away): state "wrong", which only
# curation writes or clears (:meth:`FixIndex.set_curated`).
WRONG = "wrong"
_LIVE = "AND fixes.experience_id NOT IN (SELECT experience_id FROM stale WHERE state IN ('gone', 'wrong')) "
# A fix as the hooks tell it: the latest of its live fixes (the same failure and files), counted.
_GROUP = (
    "SELECT signature, test_id, error_type, message, files, symbols, commit_sha, commit_subject, "
    "experience_id, worktree, MAX(fixed_at) AS fixed_at, COUNT(*) AS times, "
    "(SELECT state FROM stale WHERE stale.experience_id = fixes.experience_id) AS stale FROM fixes "
    f"WHERE project = ? AND signature = ? AND files = ? {_LIVE}"
)


def failure_text(error_type: str | None, message: str) -> str:
    """What a failure says, as its meaning is compared (``worker.capture.meaning``)."""
    return f"{error_type}: {message}" if error_type else message


def fix_index_path(data_dir: Path) -> Path:
    return capture_dir(data_dir) / "fixes.sqlite3"


def failures_of(run: RunOutcome) -> list[Failure]:
    """A run's failures; for a failed run no parser understood, one failure made of its last
    error line (so that it too can be followed and looked up); else none."""
    if run.failures or run.passed or not run.last_error:
        return list(run.failures)
    key = f"unparsed\0{run.kind}\0{run.runner or ''}\0{run.last_error}"
    signature = hashlib.sha256(key.encode()).hexdigest()[:16]
    return [Failure(message=run.last_error, signature=signature)]


@dataclass(frozen=True)
class KnownFix:
    signature: str
    test_id: str | None
    error_type: str | None
    message: str
    files: tuple[str, ...]
    symbols: tuple[str, ...]
    commit: str | None
    subject: str | None
    experience_id: str
    worktree: str
    fixed_at: datetime
    times_fixed: int
    similarity: float  # 1.0 exact
    stale: str | None = None  # "changed" or "gone": the fix's code since (worker.capture.staleness)


@dataclass(frozen=True)
class ExperienceState:
    occurrences: int  # distinct episodes, in every session
    first_seen: datetime
    last_seen: datetime
    entry: str  # as its latest episode tells it


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


class FixIndex:
    """The index at ``path``. Reads share one connection per instance (opened once the file
    exists; thread-safe); each write opens its own."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._reader: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None

    # --- reads (the hooks): never raise, never create ---------------------------------

    def fixes_for(self, project: str, failures: Sequence[Failure], limit: int = 2) -> list[KnownFix]:
        """Fixes of these failures: exact signatures first (most recent first), then close ones
        (same error type, similar words: closest first, then most recent)."""
        if not failures or limit < 1:
            return []
        return self._read(lambda conn: self._fixes_for(conn, project, failures, limit), [])

    def fixes_for_file(self, project: str, file: str, limit: int = 3) -> list[KnownFix]:
        """Fixes that edited ``file`` (relative to the repository's root), most recent first."""
        if limit < 1:
            return []

        def lookup(conn: sqlite3.Connection) -> list[KnownFix]:
            rows = conn.execute(
                "SELECT fixes.signature, fixes.files FROM fix_files "
                f"JOIN fixes ON fixes.id = fix_files.fix_id WHERE fix_files.project = ? {_LIVE}"
                "AND fix_files.file = ? ORDER BY fix_files.fixed_at DESC LIMIT ?",
                (project, clean_path(file), CANDIDATES),
            ).fetchall()
            keys = list(dict.fromkeys((row[0], row[1]) for row in rows))[:limit]
            return [_known(conn.execute(_GROUP, (project, *key)).fetchone(), 1.0) for key in keys]

        return self._read(lookup, [])

    def recent(self, project: str, limit: int = 3) -> list[KnownFix]:
        """The project's latest fixes, most recent first."""

        def lookup(conn: sqlite3.Connection) -> list[KnownFix]:
            rows = conn.execute(
                f"SELECT signature, files FROM fixes WHERE project = ? {_LIVE}ORDER BY fixed_at DESC LIMIT ?",
                (project, CANDIDATES),
            ).fetchall()
            keys = list(dict.fromkeys((row[0], row[1]) for row in rows))[: max(limit, 0)]
            return [_known(conn.execute(_GROUP, (project, *key)).fetchone(), 1.0) for key in keys]

        return self._read(lookup, [])

    def anchored_to(self, project: str, file: str, limit: int = 3) -> list[AnchoredItem]:
        """Memories and values anchored to ``file`` whose code is not gone, newest first."""
        return self._read(lambda conn: items_for_file(conn, project, file, limit), [])

    def outcomes(self, items: Sequence[str]) -> dict[str, Outcomes]:
        """Helped / not-helped counts of the items (context ids) that have any."""
        return self._read(lambda conn: count_outcomes(conn, items), {}) if items else {}

    def _read(self, lookup: Callable[[sqlite3.Connection], T], empty: T) -> T:
        if not self.path.exists():  # nothing mined yet: the common case before the first fix
            return empty
        with self._lock:
            try:
                if self._reader is None:
                    self._reader = open_reader(self.path)
                return lookup(self._reader)
            except sqlite3.Error as exc:
                # Opened again on the next read: the file may have been replaced or repaired.
                if self._reader is not None:
                    self._reader.close()
                    self._reader = None
                log.debug("fix_index.read_failed", path=str(self.path), error=repr(exc))
                return empty

    def _fixes_for(
        self, conn: sqlite3.Connection, project: str, failures: Sequence[Failure], limit: int
    ) -> list[KnownFix]:
        signatures = list(dict.fromkeys(failure.signature for failure in failures))
        marks = ",".join("?" * len(signatures))
        exact = conn.execute(
            f"SELECT signature, files FROM fixes WHERE project = ? AND signature IN ({marks}) {_LIVE}"
            "ORDER BY fixed_at DESC LIMIT ?",
            (project, *signatures, CANDIDATES),
        ).fetchall()
        keys = list(dict.fromkeys((row[0], row[1]) for row in exact))[:limit]
        found = [_known(conn.execute(_GROUP, (project, *key)).fetchone(), 1.0) for key in keys]
        if len(found) >= limit:
            return found
        best: dict[tuple[str, str], tuple[float, float]] = {}  # (signature, files) -> score, fixed_at
        for error_type in dict.fromkeys(failure.error_type for failure in failures):
            words = [tokens(f.message, f.test_id) for f in failures if f.error_type == error_type]
            rows = conn.execute(
                "SELECT signature, files, tokens, fixed_at FROM fixes WHERE project = ? AND error_type IS ? "
                f"{_LIVE}ORDER BY fixed_at DESC LIMIT ?",
                (project, error_type, CANDIDATES),
            ).fetchall()
            for signature, files, row_tokens, fixed_at in rows:
                if signature in signatures:
                    continue
                theirs = frozenset(row_tokens.split())
                score = max(similarity(mine, theirs) for mine in words)
                if score >= CLOSE and (score, fixed_at) > best.get((signature, files), (0.0, 0.0)):
                    best[(signature, files)] = (score, fixed_at)
        ranked = sorted(best.items(), key=lambda item: (-item[1][0], -item[1][1]))[: limit - len(found)]
        for key, (score, _) in ranked:
            # Below 1.0, which says exact, even when the words are the same.
            found.append(_known(conn.execute(_GROUP, (project, *key)).fetchone(), min(round(score, 3), 0.99)))
        if len(found) >= limit:
            return found
        # Then what a failure met before without a fix means the same as (found at mining).
        shown = {fix.signature for fix in found}
        aliased = conn.execute(
            "SELECT aliases.fix_signature, fixes.files, MAX(aliases.similarity) AS close FROM aliases "
            "JOIN fixes ON fixes.project = aliases.project AND fixes.signature = aliases.fix_signature "
            f"WHERE aliases.project = ? AND aliases.signature IN ({marks}) {_LIVE}"
            "GROUP BY aliases.fix_signature, fixes.files "
            "ORDER BY close DESC, MAX(fixes.fixed_at) DESC LIMIT ?",
            (project, *signatures, CANDIDATES),
        ).fetchall()
        for fix_signature, files, close in aliased:
            if len(found) >= limit:
                break
            if fix_signature not in shown:
                shown.add(fix_signature)
                row = conn.execute(_GROUP, (project, fix_signature, files)).fetchone()
                found.append(_known(row, min(round(float(close), 3), 0.98)))
        return found

    def fix_texts(self, project: str, limit: int = CANDIDATES) -> list[tuple[str, str]]:
        """(signature, what it says) of the project's fixed failures, most recent first."""

        def lookup(conn: sqlite3.Connection) -> list[tuple[str, str]]:
            rows = conn.execute(
                "SELECT signature, error_type, message, MAX(fixed_at) AS at FROM fixes "
                f"WHERE project = ? {_LIVE}GROUP BY signature ORDER BY at DESC LIMIT ?",
                (project, limit),
            ).fetchall()
            return [(row[0], failure_text(row[1], row[2])) for row in rows]

        return self._read(lookup, [])

    def set_aliases(self, project: str, aliases: Mapping[str, Sequence[tuple[str, float]]]) -> None:
        """Replace what each failure (signature) means the same as: (fix signature, similarity)."""
        if not aliases:
            return
        with connect(self.path) as conn:
            create_schema(conn)
            conn.execute("BEGIN IMMEDIATE")
            try:
                replace_aliases(conn, project, aliases)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    # --- the miner ------------------------------------------------------------------------

    def record_session(
        self,
        project: str,
        session: str,
        worktree: str,
        seen: Sequence[SeenFailure],
        episodes: Sequence[EpisodeRecord],
        feedback: Sequence[FeedbackRecord] = (),
    ) -> SessionChange:
        """Make the index hold exactly ``episodes`` and ``feedback`` for this session (a log mined
        again, or mined further as it grew, replaces what the last mining recorded) and note the
        failures seen."""
        with connect(self.path) as conn:
            create_schema(conn)
            conn.execute("BEGIN IMMEDIATE")
            try:
                change = replace_session(conn, project, session, worktree, episodes)
                replace_feedback(conn, project, session, feedback)
                for item in seen:
                    note_seen(conn, project, session, worktree, item)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return change

    def mark_stale(self, states: dict[str, str | None]) -> None:
        """Note what became of experiences' code (None: as it was, or told anew); an experience
        marked wrong stays so (its restore reads its code's state from its record)."""
        if not states:
            return
        with connect(self.path) as conn:
            create_schema(conn)
            conn.executemany(
                "DELETE FROM stale WHERE experience_id = ? AND state != ?",
                [(k, WRONG) for k, s in states.items() if s is None],
            )
            conn.executemany(
                "INSERT INTO stale (experience_id, state) VALUES (?, ?) ON CONFLICT (experience_id) "
                "DO UPDATE SET state = excluded.state WHERE stale.state != ?",
                [(key, state, WRONG) for key, state in states.items() if state is not None],
            )

    def set_curated(self, states: dict[str, str | None]) -> None:
        """Set experiences' states as curation decides them: ``WRONG`` (no hint offers their
        fixes), else what became of their code (None: as it was)."""
        if not states:
            return
        with connect(self.path) as conn:
            create_schema(conn)
            conn.executemany(
                "DELETE FROM stale WHERE experience_id = ?", [(k,) for k, s in states.items() if s is None]
            )
            conn.executemany(
                "INSERT OR REPLACE INTO stale (experience_id, state) VALUES (?, ?)",
                [(key, state) for key, state in states.items() if state is not None],
            )

    def experience(self, experience_id: str) -> ExperienceState | None:
        """What the index holds of an auto experience's episodes, or None when it has none."""
        if not self.path.exists():
            return None
        with connect(self.path) as conn:
            row = conn.execute(
                "SELECT COUNT(*), MIN(started_at), MAX(ended_at) FROM episodes "
                "WHERE experience_id = ? AND NOT absorbed",
                (experience_id,),
            ).fetchone()
            latest = conn.execute(
                "SELECT entry FROM episodes WHERE experience_id = ? AND NOT absorbed "
                "ORDER BY ended_at DESC, episode_id LIMIT 1",
                (experience_id,),
            ).fetchone()
        if not row[0] or latest is None:
            return None
        return ExperienceState(row[0], _dt(row[1]), _dt(row[2]), latest[0])


def _known(row: sqlite3.Row, score: float) -> KnownFix:
    return KnownFix(
        signature=row["signature"],
        test_id=row["test_id"],
        error_type=row["error_type"],
        message=row["message"],
        files=tuple(filter(None, row["files"].split("\n"))),
        symbols=tuple(filter(None, row["symbols"].split("\n"))),
        commit=row["commit_sha"],
        subject=row["commit_subject"],
        experience_id=row["experience_id"],
        worktree=row["worktree"],
        fixed_at=_dt(row["fixed_at"]),
        times_fixed=row["times"],
        similarity=score,
        stale=row["stale"],
    )


__all__ = [
    "EpisodeRecord",
    "ExperienceState",
    "FeedbackRecord",
    "FixIndex",
    "FixRecord",
    "KnownFix",
    "Outcomes",
    "SeenFailure",
    "SessionChange",
    "failures_of",
    "fix_index_path",
]

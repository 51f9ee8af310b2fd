"""The fix index: which failures were met, and which edits (files, symbols, commit) made them go.

The session miner (``learning_memory.worker.capture``) writes it; the server's hooks read it on
every failing run ("this failure was fixed before by editing src/app.py (login)") and when a file
is read or edited ("fixes made here"). So reads must be fast and harmless: a connection per call
(several processes share the file, WAL lets readers and one writer go on together), any SQLite
error answers [] rather than failing the hook, and a missing file is never created by a read.

Tables: ``signatures`` (each failure seen, per session), ``episodes`` (each mined episode and the
experience it taught, so that mining a log again stores and counts nothing twice), ``fixes`` (a
signature that went away after edits, and those edits) and ``fix_files`` (a fix by file).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from learning_memory.shared.contracts.capture import Failure, RunOutcome
from learning_memory.shared.fix_similarity import CLOSE, similarity, tokens
from learning_memory.shared.fix_store import SCHEMA_VERSION, connect, create_schema
from learning_memory.shared.log import get_logger

log = get_logger(__name__)
# Close ones are looked for among this many recent fixes of the same error type: enough for a
# project's history, and the hook's read stays around a millisecond.
NEAR_CANDIDATES = 300
_COLUMNS = (
    "signature, test_id, error_type, message, files, symbols, commit_sha, commit_subject, "
    "experience_id, worktree, MAX(fixed_at) AS fixed_at, COUNT(*) AS times, tokens"
)


def fix_index_path(data_dir: Path) -> Path:
    return data_dir / "capture" / "fixes.sqlite3"


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


@dataclass(frozen=True)
class FixRecord:
    """A signature that went away after edits, and those edits."""

    failure: Failure
    files: tuple[str, ...]
    symbols: tuple[str, ...]
    commit: str | None
    subject: str | None
    fixed_at: datetime


@dataclass(frozen=True)
class EpisodeRecord:
    episode_id: str
    experience_id: str  # the auto experience, or the agent's GHAP entry that absorbed it
    outcome: str
    absorbed: bool
    started_at: datetime
    ended_at: datetime
    entry: str | None  # the auto experience as this episode tells it (JSON); None when absorbed
    fixes: tuple[FixRecord, ...] = ()


@dataclass(frozen=True)
class SeenFailure:
    failure: Failure
    at: datetime


@dataclass(frozen=True)
class SessionChange:
    """What recording a session's episodes changed."""

    added: tuple[str, ...]  # episodes not recorded before
    experiences: frozenset[str]  # experiences whose episodes changed: to store again, or forget
    new_experiences: frozenset[str]  # experiences that had no episode before


@dataclass(frozen=True)
class ExperienceState:
    occurrences: int  # distinct episodes, in every session
    first_seen: datetime
    last_seen: datetime
    entry: str  # as its latest episode tells it


def _ts(moment: datetime) -> float:
    return moment.timestamp()


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


class FixIndex:
    def __init__(self, path: Path) -> None:
        self.path = path

    # --- reads (the hooks): never raise, never create ---------------------------------

    def fixes_for(self, project: str, failures: Sequence[Failure], limit: int = 2) -> list[KnownFix]:
        """Fixes of these failures: exact signatures first (most recent first), then close ones
        (same error type, similar words; closest first, then most recent)."""
        if not failures or limit < 1:
            return []
        try:
            with connect(self.path, create=False) as conn:
                return self._fixes_for(conn, project, failures, limit)
        except sqlite3.Error as exc:
            log.debug("fix_index.read_failed", path=str(self.path), error=repr(exc))
            return []

    def fixes_for_file(self, project: str, file: str, limit: int = 3) -> list[KnownFix]:
        """Fixes that edited ``file`` (relative to the repository's root), most recent first."""
        if limit < 1:
            return []
        try:
            with connect(self.path, create=False) as conn:
                rows = conn.execute(
                    f"SELECT {_COLUMNS} FROM fixes WHERE id IN (SELECT fix_id FROM fix_files "
                    "WHERE project = ? AND file = ?) GROUP BY signature, files "
                    "ORDER BY fixed_at DESC LIMIT ?",
                    (project, _clean(file), limit),
                ).fetchall()
                return [_known(row, 1.0) for row in rows]
        except sqlite3.Error as exc:
            log.debug("fix_index.read_failed", path=str(self.path), error=repr(exc))
            return []

    def _fixes_for(
        self, conn: sqlite3.Connection, project: str, failures: Sequence[Failure], limit: int
    ) -> list[KnownFix]:
        signatures = list(dict.fromkeys(failure.signature for failure in failures))
        marks = ",".join("?" * len(signatures))
        exact = conn.execute(
            f"SELECT {_COLUMNS} FROM fixes WHERE project = ? AND signature IN ({marks}) "
            "GROUP BY signature, files ORDER BY fixed_at DESC LIMIT ?",
            (project, *signatures, limit),
        ).fetchall()
        found = [_known(row, 1.0) for row in exact]
        if len(found) >= limit:
            return found
        near: dict[tuple[str, str], tuple[float, Any]] = {}
        for failure in failures:
            words = tokens(failure.message, failure.test_id)
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM fixes WHERE project = ? AND error_type IS ? "
                f"AND signature NOT IN ({marks}) GROUP BY signature, files "
                "ORDER BY fixed_at DESC LIMIT ?",
                (project, failure.error_type, *signatures, NEAR_CANDIDATES),
            ).fetchall()
            for row in rows:
                score = similarity(words, frozenset(row["tokens"].split()))
                key = (row["signature"], row["files"])
                if score >= CLOSE and score > near.get(key, (0.0, None))[0]:
                    near[key] = (score, row)
        ranked = sorted(near.values(), key=lambda item: (-item[0], -item[1]["fixed_at"]))
        return found + [_known(row, round(score, 3)) for score, row in ranked[: limit - len(found)]]

    def experience(self, experience_id: str) -> ExperienceState | None:
        """What the fix index holds of an auto experience's episodes, or None when it has none."""
        with connect(self.path, create=False) as conn:
            row = conn.execute(
                "SELECT COUNT(*) AS n, MIN(started_at) AS first, MAX(ended_at) AS last "
                "FROM episodes WHERE experience_id = ? AND NOT absorbed",
                (experience_id,),
            ).fetchone()
            latest = conn.execute(
                "SELECT entry FROM episodes WHERE experience_id = ? AND NOT absorbed "
                "ORDER BY ended_at DESC, episode_id LIMIT 1",
                (experience_id,),
            ).fetchone()
        if not row["n"] or latest is None:
            return None
        return ExperienceState(row["n"], _dt(row["first"]), _dt(row["last"]), latest["entry"])

    # --- writes (the miner) -------------------------------------------------------------

    def record_session(
        self,
        project: str,
        session: str,
        worktree: str,
        seen: Sequence[SeenFailure],
        episodes: Sequence[EpisodeRecord],
    ) -> SessionChange:
        """Make the index hold exactly ``episodes`` for this session (a log mined again, or mined
        further as it grew, replaces what the last mining recorded) and note the failures seen."""
        with connect(self.path, create=True) as conn:
            create_schema(conn)
            conn.execute("BEGIN IMMEDIATE")
            try:
                change = _replace_session(conn, project, session, worktree, episodes)
                for item in seen:
                    _note_seen(conn, project, session, worktree, item)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return change


def _clean(file: str) -> str:
    file = file.replace("\\", "/")
    return file[2:] if file.startswith("./") else file


def _known(row: Any, score: float) -> KnownFix:
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
    )


def _replace_session(
    conn: sqlite3.Connection, project: str, session: str, worktree: str, episodes: Sequence[EpisodeRecord]
) -> SessionChange:
    before = {
        row["episode_id"]: (
            row["experience_id"],
            row["outcome"],
            row["entry"],
            row["ended_at"],
            row["absorbed"],
        )
        for row in conn.execute(
            "SELECT episode_id, experience_id, outcome, entry, ended_at, absorbed FROM episodes "
            "WHERE project = ? AND session = ?",
            (project, session),
        )
    }
    after = {
        e.episode_id: (e.experience_id, e.outcome, e.entry, _ts(e.ended_at), int(e.absorbed))
        for e in episodes
    }
    changed = [key for key in before.keys() | after.keys() if before.get(key) != after.get(key)]
    # An absorbed episode's experience is the agent's entry: never the miner's to store or forget.
    touched = {
        side[key][0] for side in (before, after) for key in changed if key in side and not side[key][4]
    }
    marks = ",".join("?" * len(touched))
    known = {
        row[0]
        for row in conn.execute(
            f"SELECT DISTINCT experience_id FROM episodes WHERE experience_id IN ({marks})", tuple(touched)
        )
    }
    for episode_id in before:
        conn.execute(
            "DELETE FROM fix_files WHERE fix_id IN (SELECT id FROM fixes WHERE episode_id = ?)", (episode_id,)
        )
        conn.execute("DELETE FROM fixes WHERE episode_id = ?", (episode_id,))
        conn.execute("DELETE FROM episodes WHERE episode_id = ?", (episode_id,))
    for episode in episodes:
        _insert_episode(conn, project, session, worktree, episode)
    return SessionChange(
        added=tuple(e.episode_id for e in episodes if e.episode_id not in before),
        experiences=frozenset(touched),
        new_experiences=frozenset(touched - known),
    )


def _insert_episode(
    conn: sqlite3.Connection, project: str, session: str, worktree: str, episode: EpisodeRecord
) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO episodes (episode_id, experience_id, outcome, absorbed, project, session, "
        "worktree, started_at, ended_at, entry) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            episode.episode_id,
            episode.experience_id,
            episode.outcome,
            int(episode.absorbed),
            project,
            session,
            worktree,
            _ts(episode.started_at),
            _ts(episode.ended_at),
            episode.entry,
        ),
    )
    for fix in episode.fixes:
        failure = fix.failure
        cursor = conn.execute(
            "INSERT OR REPLACE INTO fixes (episode_id, project, signature, test_id, error_type, message, "
            "tokens, experience_id, files, symbols, commit_sha, commit_subject, worktree, session, fixed_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                episode.episode_id,
                project,
                failure.signature,
                failure.test_id,
                failure.error_type,
                failure.message,
                " ".join(sorted(tokens(failure.message, failure.test_id))),
                episode.experience_id,
                "\n".join(fix.files),
                "\n".join(fix.symbols),
                fix.commit,
                fix.subject,
                worktree,
                session,
                _ts(fix.fixed_at),
            ),
        )
        conn.executemany(
            "INSERT OR IGNORE INTO fix_files (project, file, fix_id) VALUES (?, ?, ?)",
            [(project, _clean(file), cursor.lastrowid) for file in fix.files],
        )


def _note_seen(
    conn: sqlite3.Connection, project: str, session: str, worktree: str, item: SeenFailure
) -> None:
    failure, at = item.failure, _ts(item.at)
    conn.execute(
        "INSERT INTO signatures (project, signature, session, test_id, error_type, message, first_seen, "
        "last_seen, worktree) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (project, signature, session) DO UPDATE SET "
        "first_seen = MIN(first_seen, excluded.first_seen), last_seen = MAX(last_seen, excluded.last_seen)",
        (
            project,
            failure.signature,
            session,
            failure.test_id,
            failure.error_type,
            failure.message,
            at,
            at,
            worktree,
        ),
    )


__all__ = [
    "SCHEMA_VERSION",
    "EpisodeRecord",
    "ExperienceState",
    "FixIndex",
    "FixRecord",
    "KnownFix",
    "SeenFailure",
    "SessionChange",
    "failures_of",
    "fix_index_path",
]

"""The fix index's write side: what the session miner records, one session at a time
(the read side, and what the tables hold: :mod:`.fix_index`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from learning_memory.shared.contracts.capture import Failure
from learning_memory.shared.fix_similarity import tokens


def clean_path(file: str) -> str:
    """A file as the index keys it: "/" separators, no leading "./"."""
    file = file.replace("\\", "/")
    return file[2:] if file.startswith("./") else file


def _ts(moment: datetime) -> float:
    return moment.timestamp()


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
class FeedbackRecord:
    """An item the agent was shown, and whether the episode that followed it went green."""

    item: str  # a context id: "exp:<id>", "val:<id>", "mem:<id>"
    episode_id: str
    via: str
    helped: bool
    shown_at: datetime


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


def replace_session(
    conn: sqlite3.Connection, project: str, session: str, worktree: str, episodes: Sequence[EpisodeRecord]
) -> SessionChange:
    before = {
        row[0]: tuple(row[1:])
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
            "INSERT OR IGNORE INTO fix_files (project, file, fix_id, fixed_at) VALUES (?, ?, ?, ?)",
            [(project, clean_path(file), cursor.lastrowid, _ts(fix.fixed_at)) for file in fix.files],
        )


def note_seen(conn: sqlite3.Connection, project: str, session: str, worktree: str, item: SeenFailure) -> None:
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


def replace_feedback(
    conn: sqlite3.Connection, project: str, session: str, records: Sequence[FeedbackRecord]
) -> None:
    """The session's outcomes, as its whole log now tells them: one row per item and episode (an
    item shown again while the same episode went on counts once), so mining again counts nothing
    twice."""
    conn.execute("DELETE FROM feedback WHERE project = ? AND session = ?", (project, session))
    conn.executemany(
        "INSERT OR IGNORE INTO feedback (item, project, session, episode_id, via, helped, shown_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(r.item, project, session, r.episode_id, r.via, int(r.helped), _ts(r.shown_at)) for r in records],
    )


def replace_aliases(
    conn: sqlite3.Connection, project: str, aliases: Mapping[str, Sequence[tuple[str, float]]]
) -> None:
    """Make each failure (signature) mean the same as these fixed ones: (fix signature, similarity)."""
    for signature, close in aliases.items():
        conn.execute("DELETE FROM aliases WHERE project = ? AND signature = ?", (project, signature))
        conn.executemany(
            "INSERT INTO aliases (project, signature, fix_signature, similarity) VALUES (?, ?, ?, ?)",
            [(project, signature, fix, similarity) for fix, similarity in close],
        )

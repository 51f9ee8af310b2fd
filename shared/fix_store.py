"""The fix index's SQLite file: connections and schema (the index itself: :mod:`.fix_index`).

WAL, so that the hooks' reads never wait for the miner's write and several processes share the
file; a busy timeout, so that two miners writing at once take turns instead of failing. Times are
stored as UTC epoch seconds, so that they sort.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# 2: feedback or stale; 3: both; 4: anchored; 5: aliases (a file below gains what it lacks on the
# next write)
SCHEMA_VERSION = 5
BUSY_TIMEOUT_MS = 5_000
_SCHEMA = """
CREATE TABLE IF NOT EXISTS signatures (
    project TEXT NOT NULL,
    signature TEXT NOT NULL,
    session TEXT NOT NULL,
    test_id TEXT,
    error_type TEXT,
    message TEXT NOT NULL,
    first_seen REAL NOT NULL,
    last_seen REAL NOT NULL,
    worktree TEXT NOT NULL,
    PRIMARY KEY (project, signature, session)
);
CREATE TABLE IF NOT EXISTS episodes (
    episode_id TEXT PRIMARY KEY,
    experience_id TEXT NOT NULL,
    outcome TEXT NOT NULL,
    absorbed INTEGER NOT NULL,
    project TEXT NOT NULL,
    session TEXT NOT NULL,
    worktree TEXT NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL NOT NULL,
    entry TEXT
);
CREATE INDEX IF NOT EXISTS episodes_by_session ON episodes (project, session);
CREATE INDEX IF NOT EXISTS episodes_by_experience ON episodes (experience_id);
CREATE TABLE IF NOT EXISTS fixes (
    id INTEGER PRIMARY KEY,
    episode_id TEXT NOT NULL,
    project TEXT NOT NULL,
    signature TEXT NOT NULL,
    test_id TEXT,
    error_type TEXT,
    message TEXT NOT NULL,
    tokens TEXT NOT NULL,
    experience_id TEXT NOT NULL,
    files TEXT NOT NULL,
    symbols TEXT NOT NULL,
    commit_sha TEXT,
    commit_subject TEXT,
    worktree TEXT NOT NULL,
    session TEXT NOT NULL,
    fixed_at REAL NOT NULL,
    UNIQUE (episode_id, signature)
);
CREATE INDEX IF NOT EXISTS fixes_by_signature ON fixes (project, signature, fixed_at);
CREATE INDEX IF NOT EXISTS fixes_by_error_type ON fixes (project, error_type, fixed_at);
CREATE TABLE IF NOT EXISTS fix_files (
    project TEXT NOT NULL,
    file TEXT NOT NULL,
    fix_id INTEGER NOT NULL,
    fixed_at REAL NOT NULL,
    PRIMARY KEY (project, file, fix_id)
);
CREATE INDEX IF NOT EXISTS fix_files_by_time ON fix_files (project, file, fixed_at);
CREATE INDEX IF NOT EXISTS fix_files_by_fix ON fix_files (fix_id);
CREATE TABLE IF NOT EXISTS feedback (
    item TEXT NOT NULL,
    project TEXT NOT NULL,
    session TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    via TEXT NOT NULL,
    helped INTEGER NOT NULL,
    shown_at REAL NOT NULL,
    PRIMARY KEY (item, session, episode_id)
);
CREATE INDEX IF NOT EXISTS feedback_by_session ON feedback (project, session);
-- Experiences whose anchored code changed or went since (the miner notices): their fixes'
-- hints say so, or are not given.
CREATE TABLE IF NOT EXISTS stale (
    experience_id TEXT PRIMARY KEY,
    state TEXT NOT NULL
);
-- Failures with no fix of their own or of close words, and the fixed failures they mean the
-- same as (worker.capture.meaning, at mining: the hooks call no model): the next time one is
-- met, its hint can name that fix.
CREATE TABLE IF NOT EXISTS aliases (
    project TEXT NOT NULL,
    signature TEXT NOT NULL,
    fix_signature TEXT NOT NULL,
    similarity REAL NOT NULL,
    PRIMARY KEY (project, signature, fix_signature)
);
-- Memories and values anchored to files (shared.anchored_items): a file read or edited brings them.
CREATE TABLE IF NOT EXISTS anchored (
    item TEXT NOT NULL,
    project TEXT NOT NULL,
    file TEXT NOT NULL,
    symbols TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at REAL NOT NULL,
    state TEXT,
    PRIMARY KEY (item, file)
);
CREATE INDEX IF NOT EXISTS anchored_by_file ON anchored (project, file, created_at);
"""


@contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    """A writer's connection (the file and its folder made if missing), in autocommit mode
    (transactions are explicit), closed after."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        yield conn
    finally:
        conn.close()


def open_reader(path: Path) -> sqlite3.Connection:
    """A reader's connection to an existing file: ``mode=rw`` fails rather than create it (a
    read-only connection could not follow a WAL file it did not create). Usable from any thread
    (the caller serialises its use)."""
    uri = f"{path.resolve().as_uri()}?mode=rw"
    conn = sqlite3.connect(
        uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
    )
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def _use_wal(conn: sqlite3.Connection) -> None:
    """WAL, waiting while another process creates the tables: SQLite answers this pragma
    "database is locked" at once, without the busy timeout, while another connection writes."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def create_schema(conn: sqlite3.Connection) -> None:
    """Tables on first write, and those a later version added (each statement is idempotent);
    WAL set once (it stays with the file)."""
    if conn.execute("PRAGMA user_version").fetchone()[0] >= SCHEMA_VERSION:
        return
    _use_wal(conn)
    # One transaction: a second process creating it at the same moment waits, then finds it made.
    conn.executescript(f"BEGIN IMMEDIATE;\n{_SCHEMA}\nPRAGMA user_version = {SCHEMA_VERSION};\nCOMMIT;")

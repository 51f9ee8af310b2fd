"""The metadata schema, as an ordered list of SQL scripts.

The database records how many have been applied in ``PRAGMA user_version``; on open, the
store applies the missing ones, each in its own transaction. Never edit a script once it has
shipped: append a new one, so every existing database moves forward the same way.
"""

from __future__ import annotations

import sqlite3

MIGRATIONS: tuple[str, ...] = (
    # 1: the embedding cache (so no text is embedded twice, across restarts) and the
    # bookkeeping that makes indexing incremental: file hashes and commit watermarks.
    """
    CREATE TABLE embedding_cache (
        key BLOB PRIMARY KEY,
        model TEXT NOT NULL,
        dim INTEGER NOT NULL,
        vector BLOB NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE TABLE indexed_files (
        repo TEXT NOT NULL,
        path TEXT NOT NULL,
        content_hash TEXT,
        indexed_at REAL,
        PRIMARY KEY (repo, path)
    );
    CREATE TABLE commit_watermarks (
        repo TEXT PRIMARY KEY,
        last_commit TEXT,
        indexed_at REAL
    );
    """,
    # 2: a version per experience axis, bumped whenever an experience on it is stored or
    # replaced, so a clustering cached for the axis knows when it is out of date.
    """
    CREATE TABLE axis_versions (
        axis TEXT PRIMARY KEY,
        version INTEGER NOT NULL
    );
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)


def split_statements(script: str) -> list[str]:
    """Cut a script into complete statements.

    ``executescript`` would commit any open transaction first, so a migration could not be
    applied atomically with its version bump; instead each statement runs through
    ``execute``. ``sqlite3.complete_statement`` knows where a statement ends (a ``;`` inside
    a string literal or a trigger body does not end it).
    """
    statements: list[str] = []
    current = ""
    for piece in script.split(";"):
        current += piece + ";"
        if sqlite3.complete_statement(current):
            if current.strip(" \t\r\n;"):
                statements.append(current.strip())
            current = ""
    if current.strip(" \t\r\n;"):
        raise ValueError(f"incomplete SQL statement in migration: {current.strip()[:80]!r}")
    return statements

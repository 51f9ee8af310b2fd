"""The metadata schema, as an ordered list of SQL scripts.

The database records how many have been applied in ``PRAGMA user_version``; on open, the
store applies the missing ones, each in its own transaction. Never edit a script once it has
shipped: append a new one, so every existing database moves forward the same way.
"""

from __future__ import annotations

import sqlite3

# The collections recall has a keyword side for (worker.recall.texts.COLLECTIONS, as of migration 11).
_RECALL_COLLECTIONS = (
    "memories",
    "values",
    "experiences_full",
    "experiences_strategy",
    "experiences_surprise",
    "experiences_root_cause",
)

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
    # 2: the lexical side of code search (BM25 over SQLite FTS5), one row per code unit. The
    # rows live in a plain table indexed by (project, file_path), so replacing a file's units
    # is an index lookup, and the FTS index reads its text from there (external content, kept
    # in step by triggers). Files indexed before this had no rows: forgetting their hashes
    # makes the next index_codebase re-read them (their vectors come from the embedding cache).
    """
    CREATE TABLE code_lexical (
        rowid INTEGER PRIMARY KEY,
        point_id TEXT NOT NULL UNIQUE,
        project TEXT NOT NULL,
        language TEXT NOT NULL,
        file_path TEXT NOT NULL,
        text TEXT NOT NULL
    );
    CREATE INDEX code_lexical_file ON code_lexical (project, file_path);
    CREATE VIRTUAL TABLE code_fts USING fts5(
        text, content = 'code_lexical', content_rowid = 'rowid', tokenize = 'porter unicode61'
    );
    CREATE TRIGGER code_lexical_insert AFTER INSERT ON code_lexical BEGIN
        INSERT INTO code_fts (rowid, text) VALUES (new.rowid, new.text);
    END;
    CREATE TRIGGER code_lexical_delete AFTER DELETE ON code_lexical BEGIN
        INSERT INTO code_fts (code_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    END;
    UPDATE indexed_files SET content_hash = NULL;
    """,
    # 3: the oldest commit date an index covers (NULL: the whole history), so a later
    # index_commits with an earlier `since` (or none) knows to add the older commits.
    """
    ALTER TABLE commit_watermarks ADD COLUMN since_ts REAL;
    """,
    # 4: a version per experience axis, bumped whenever an experience on it is stored or
    # replaced, so a clustering cached for the axis knows when it is out of date.
    """
    CREATE TABLE axis_versions (
        axis TEXT PRIMARY KEY,
        version INTEGER NOT NULL
    );
    """,
    # 5: where each project was indexed from, so an edited file can be re-indexed on its own
    # (projects indexed before this migration are known again after their next index_codebase).
    """
    CREATE TABLE project_roots (
        project TEXT PRIMARY KEY,
        root TEXT NOT NULL,
        recursive INTEGER NOT NULL
    );
    """,
    # 6: one FTS5 index per project, so BM25's statistics (document frequencies, average length)
    # are the project's own and a project's ranking never depends on what else is indexed. The
    # indexes read their text from code_lexical as before; each is built from it on first use
    # (worker.code.index.unit_store), so nothing is re-read from disk. And each unit's name, looked up
    # directly when a query names a symbol (its text starts with the name, on a line of its own).
    """
    DROP TRIGGER code_lexical_insert;
    DROP TRIGGER code_lexical_delete;
    DROP TABLE code_fts;
    CREATE TABLE code_fts_tables (
        id INTEGER PRIMARY KEY,
        project TEXT NOT NULL UNIQUE
    );
    ALTER TABLE code_lexical ADD COLUMN name TEXT NOT NULL DEFAULT '';
    UPDATE code_lexical SET name = substr(text, 1, instr(text || char(10), char(10)) - 1);
    CREATE INDEX code_lexical_name ON code_lexical (project, name COLLATE NOCASE);
    """,
    # 7: a project is searchable once its rows are written; the transformer's vectors follow
    # (worker.code.index.filler). Each row carries its point's payload, for hits the keywords found
    # before the point exists, and whether its vector is written yet. Rows from before were
    # written with their points.
    """
    ALTER TABLE code_lexical ADD COLUMN payload TEXT;
    ALTER TABLE code_lexical ADD COLUMN embedded INTEGER NOT NULL DEFAULT 1;
    CREATE INDEX code_lexical_waiting ON code_lexical (project) WHERE embedded = 0;
    """,
    # 8: the embedding cache is bounded: each vector records when it was last written or read,
    # and the least recently used go first when the cache outgrows its limit.
    """
    ALTER TABLE embedding_cache ADD COLUMN used_at REAL NOT NULL DEFAULT 0;
    UPDATE embedding_cache SET used_at = created_at;
    CREATE INDEX embedding_cache_used ON embedding_cache (used_at);
    """,
    # 9: units looked up by name across every project (a search without a project names a
    # symbol): the (project, name) index serves that only once SQLite has statistics, which a
    # worker that has not closed its store yet lacks, and a scan of every row costs far more.
    """
    CREATE INDEX code_lexical_name_any ON code_lexical (name COLLATE NOCASE);
    """,
    # 10: with state shared through Redis (worker.code.index.shared_index), a project's rows, file
    # hashes and root here are a replica of its record there, at the version recorded here.
    """
    CREATE TABLE code_replicas (
        project TEXT PRIMARY KEY,
        version INTEGER NOT NULL
    );
    """,
    # 11: the keyword side of recall (worker.recall): one row per memory, value and experience
    # point with the words it is found by, and an FTS5 index per collection over them, so BM25's
    # statistics are each kind's own and a search reads only its kind. The indexes follow the
    # rows through triggers; collections written before are filled from the vector store on
    # first use.
    """
    CREATE TABLE recall_rows (
        id INTEGER PRIMARY KEY,
        collection TEXT NOT NULL,
        point_id TEXT NOT NULL,
        text TEXT NOT NULL,
        UNIQUE (collection, point_id)
    );
    """
    + "".join(
        f"""
    CREATE VIRTUAL TABLE recall_fts_{name} USING fts5(
        text, content='recall_rows', content_rowid='id', tokenize='porter unicode61'
    );
    CREATE TRIGGER recall_rows_insert_{name} AFTER INSERT ON recall_rows
    WHEN new.collection = '{name}' BEGIN
        INSERT INTO recall_fts_{name}(rowid, text) VALUES (new.id, new.text);
    END;
    CREATE TRIGGER recall_rows_delete_{name} AFTER DELETE ON recall_rows
    WHEN old.collection = '{name}' BEGIN
        INSERT INTO recall_fts_{name}(recall_fts_{name}, rowid, text) VALUES ('delete', old.id, old.text);
    END;
    """
        for name in _RECALL_COLLECTIONS
    ),
    # 12: the keyword side ranks in the worker's memory (worker.recall.postings); the FTS5 indexes
    # go, and every change of the rows is logged, so that an index in any process catches up.
    "".join(
        f"""
    DROP TRIGGER recall_rows_insert_{name};
    DROP TRIGGER recall_rows_delete_{name};
    DROP TABLE recall_fts_{name};
    """
        for name in _RECALL_COLLECTIONS
    )
    + """
    CREATE TABLE recall_log (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        collection TEXT NOT NULL,
        row_id INTEGER NOT NULL,
        added INTEGER NOT NULL
    );
    CREATE TRIGGER recall_rows_logged_insert AFTER INSERT ON recall_rows BEGIN
        INSERT INTO recall_log (collection, row_id, added) VALUES (new.collection, new.id, 1);
    END;
    CREATE TRIGGER recall_rows_logged_delete AFTER DELETE ON recall_rows BEGIN
        INSERT INTO recall_log (collection, row_id, added) VALUES (old.collection, old.id, 0);
    END;
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

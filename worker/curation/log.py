"""The curation log: every change a person made, with what it replaced, in its own SQLite file.

Its own file (``<data dir>/curation.sqlite3``), not the metadata store's: the metadata can be
rebuilt by re-indexing, this history cannot, so it is written with ``synchronous = FULL``, and
a re-index that drops the metadata never takes it along. Schema changes follow the metadata
store's way (``PRAGMA user_version``, append-only scripts, each in one transaction).

A change is written ``pending`` with its before-state *before* anything is applied, then marked
``applied``: a worker stopped in between leaves a pending entry whose job, run again with the
same change id, applies it again from the recorded before-state (never from what a half-applied
change left). Undo marks it ``undoing``, puts the before-state back, then marks it ``undone``.
Calls are rare (a person clicks): each opens its connection on a thread and closes it.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from learning_memory.shared.contracts.context import ContextKind
from learning_memory.shared.contracts.curation import ChangeKind, ChangeRecord, ChangeState
from learning_memory.shared.errors import StorageError
from learning_memory.worker.metadata.migrations import split_statements

T = TypeVar("T")
FILENAME = "curation.sqlite3"
BUSY_TIMEOUT_MS = 5_000
# Changes still in force (a later one of these on the same record must be undone first).
IN_FORCE: tuple[ChangeState, ...] = ("pending", "applied", "undoing")

MIGRATIONS: tuple[str, ...] = (
    # 1: the changes, in the order they were made (seq), and the records each touched.
    """
    CREATE TABLE changes (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        item_kind TEXT NOT NULL,
        summary TEXT NOT NULL,
        request TEXT NOT NULL,
        before TEXT NOT NULL,
        diff TEXT NOT NULL,
        state TEXT NOT NULL,
        created_at REAL NOT NULL,
        applied_at REAL,
        undone_at REAL
    );
    CREATE TABLE change_targets (
        change_seq INTEGER NOT NULL REFERENCES changes (seq),
        target TEXT NOT NULL,
        position INTEGER NOT NULL,
        PRIMARY KEY (change_seq, target)
    );
    CREATE INDEX change_targets_by_target ON change_targets (target, change_seq);
    """,
)


def log_path(data_dir: Path) -> Path:
    return data_dir / FILENAME


@dataclass(frozen=True)
class Change:
    """One logged change: its record as callers see it, and what undo and a retry need."""

    seq: int
    record: ChangeRecord
    request: dict[str, Any]
    before: list[dict[str, Any]]  # snapshots (worker.curation.snapshots)


@dataclass(frozen=True)
class NewChange:
    id: str
    kind: ChangeKind
    item_kind: ContextKind
    targets: list[str]
    summary: str
    diff: dict[str, list[Any]]
    request: dict[str, Any]
    before: list[dict[str, Any]]


class CurationLog:
    def __init__(self, path: Path) -> None:
        self.path = path

    async def add(self, change: NewChange) -> Change:
        """Record ``change`` as pending (the before-state first: nothing is applied yet). A change
        id already logged answers what was logged under it."""
        return await self._call(lambda conn: _add(conn, change))

    async def get(self, change_id: str) -> Change | None:
        return await self._call(lambda conn: _get(conn, change_id))

    async def set_state(self, change_id: str, state: ChangeState) -> Change:
        def write(conn: sqlite3.Connection) -> Change:
            now = time.time()
            column = {"applied": "applied_at", "undone": "undone_at"}.get(state)
            stamp = f", {column} = ?" if column else ""
            args: tuple[Any, ...] = (state, now, change_id) if column else (state, change_id)
            conn.execute(f"UPDATE changes SET state = ?{stamp} WHERE id = ?", args)
            found = _get(conn, change_id)
            if found is None:
                raise StorageError(f"Curation change {change_id} is not in the log {self.path}")
            return found

        return await self._call(write)

    async def later_in_force(self, change: Change) -> list[str]:
        """Changes made after ``change`` to any of its records and still in force, newest first."""

        def read(conn: sqlite3.Connection) -> list[str]:
            marks = ",".join("?" * len(change.record.targets))
            states = ",".join("?" * len(IN_FORCE))
            rows = conn.execute(
                "SELECT DISTINCT changes.id, changes.seq FROM change_targets JOIN changes "
                "ON changes.seq = change_targets.change_seq "
                f"WHERE change_targets.target IN ({marks}) AND changes.seq > ? "
                f"AND changes.state IN ({states}) "
                "ORDER BY changes.seq DESC",
                (*change.record.targets, change.seq, *IN_FORCE),
            ).fetchall()
            return [str(row[0]) for row in rows]

        return await self._call(read)

    async def listing(
        self, *, limit: int, offset: int, item_kind: str | None = None, targets: Sequence[str] = ()
    ) -> tuple[list[ChangeRecord], int]:
        """Changes newest first (of one kind of record, or touching any of ``targets``), and how
        many there are."""

        def read(conn: sqlite3.Connection) -> tuple[list[ChangeRecord], int]:
            where, args = ["1 = 1"], []
            if item_kind is not None:
                where.append("item_kind = ?")
                args.append(item_kind)
            if targets:
                marks = ",".join("?" * len(targets))
                where.append(f"seq IN (SELECT change_seq FROM change_targets WHERE target IN ({marks}))")
                args.extend(targets)
            clause = " AND ".join(where)
            total = int(conn.execute(f"SELECT count(*) FROM changes WHERE {clause}", args).fetchone()[0])
            rows = conn.execute(
                f"SELECT * FROM changes WHERE {clause} ORDER BY seq DESC LIMIT ? OFFSET ?",
                (*args, limit, offset),
            ).fetchall()
            return [_change(conn, row).record for row in rows], total

        return await self._call(read)

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def run() -> T:
            with _connect(self.path) as conn:
                return fn(conn)

        try:
            return await asyncio.to_thread(run)
        except sqlite3.Error as exc:
            raise StorageError(f"Curation log {self.path}: {exc}") from exc


@contextmanager
def _connect(path: Path) -> Iterator[sqlite3.Connection]:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = FULL")  # a history nothing can rebuild
        _migrate(conn, path)
        yield conn
    finally:
        conn.close()


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    found = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if found == len(MIGRATIONS):
        return
    if found > len(MIGRATIONS):
        raise StorageError(
            f"The curation log {path} has schema version {found}, newer than this code knows "
            f"({len(MIGRATIONS)}): it was written by a newer version of the server."
        )
    for version, script in enumerate(MIGRATIONS, start=1):
        if version <= found:
            continue
        # IMMEDIATE: of two processes opening a new log at once, the second finds it migrated.
        conn.execute("BEGIN IMMEDIATE")
        try:
            if int(conn.execute("PRAGMA user_version").fetchone()[0]) < version:
                for statement in split_statements(script):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {version}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


def _dt(stamp: float | None) -> datetime | None:
    return datetime.fromtimestamp(stamp, UTC) if stamp is not None else None


def _change(conn: sqlite3.Connection, row: sqlite3.Row) -> Change:
    targets = [
        str(t[0])
        for t in conn.execute(
            "SELECT target FROM change_targets WHERE change_seq = ? ORDER BY position", (row["seq"],)
        )
    ]
    record = ChangeRecord(
        id=row["id"],
        kind=row["kind"],
        item_kind=row["item_kind"],
        targets=targets,
        summary=row["summary"],
        diff=json.loads(row["diff"]),
        state=row["state"],
        created_at=_dt(row["created_at"]),
        undone_at=_dt(row["undone_at"]),
    )
    return Change(row["seq"], record, json.loads(row["request"]), json.loads(row["before"]))


def _get(conn: sqlite3.Connection, change_id: str) -> Change | None:
    row = conn.execute("SELECT * FROM changes WHERE id = ?", (change_id,)).fetchone()
    return _change(conn, row) if row is not None else None


def _add(conn: sqlite3.Connection, change: NewChange) -> Change:
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = _get(conn, change.id)
        if found is None:
            cursor = conn.execute(
                "INSERT INTO changes (id, kind, item_kind, summary, request, before, diff, state, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
                (
                    change.id,
                    change.kind,
                    change.item_kind,
                    change.summary,
                    json.dumps(change.request),
                    json.dumps(change.before),
                    json.dumps(change.diff),
                    time.time(),
                ),
            )
            conn.executemany(
                "INSERT OR IGNORE INTO change_targets (change_seq, target, position) VALUES (?, ?, ?)",
                [(cursor.lastrowid, target, n) for n, target in enumerate(change.targets)],
            )
            found = _get(conn, change.id)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    assert found is not None  # written above in this transaction
    return found

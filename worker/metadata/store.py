"""The worker's SQLite metadata store: bookkeeping tables and the embedding cache.

sqlite3 blocks, and a connection must stay on the thread that made it, so the store owns one
single-thread executor: the connection is created, used and closed there, and every public
method is a coroutine that hands its work to that thread. Calls are therefore serialised in
submission order, and the event loop never waits on the disk.

The connection runs in autocommit mode (``isolation_level=None``): a lone statement is its own
transaction, and anything that must be atomic (a batch insert, a migration, a caller's
:meth:`MetadataStore.transaction`) is wrapped in an explicit ``BEGIN IMMEDIATE``. WAL lets
readers in other processes (a status command, a second worker on a Qdrant server) proceed
while we write; ``busy_timeout`` makes a briefly locked database wait instead of failing.

:meth:`MetadataStore.read` runs on a second connection with a thread of its own (opened on first
use): the reads a search makes (keyword ranking, payloads) then neither wait behind an index
run's writes nor hold up the embedding cache a query's model call uses. WAL gives that reader
the last committed state; without WAL, reads share the writing connection.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from learning_memory.shared.errors import StorageError
from learning_memory.shared.log import get_logger
from learning_memory.worker.metadata.migrations import MIGRATIONS, split_statements

log = get_logger(__name__)

T = TypeVar("T")
Params = Sequence[Any] | Mapping[str, Any]
Vector = npt.NDArray[np.float32]

DB_FILENAME = "metadata.sqlite3"
BUSY_TIMEOUT_MS = 5000
# Below SQLite's historical limit of 999 host parameters, so a lookup never trips it.
_KEYS_PER_QUERY = 900
# Vectors are stored as raw little-endian float32, whatever the machine's byte order.
_VECTOR_DTYPE = np.dtype("<f4")


def metadata_path(data_dir: Path) -> Path:
    """Where the store lives under ``LMS_DATA_DIR``."""
    return data_dir / DB_FILENAME


class MetadataStore:
    """Open with ``await MetadataStore.open(path)``; ``await store.close()`` when done."""

    def __init__(
        self, path: Path, executor: ThreadPoolExecutor, conn: sqlite3.Connection, *, wal: bool = False
    ) -> None:
        # Use open(): the connection must have been made on ``executor``'s thread.
        self.path = path
        self._executor = executor
        self._conn = conn
        self._closed = False
        self._wal = wal  # a second connection reads beside the writer only in WAL mode
        self._reader: tuple[ThreadPoolExecutor, sqlite3.Connection] | None = None
        self._reader_lock = asyncio.Lock()
        # Rows in the embedding cache as far as this store knows (see put_embeddings).
        self._cache_rows: int | None = None

    @classmethod
    async def open(cls, path: Path | str) -> MetadataStore:
        """Open (creating if needed) the database at ``path`` and bring its schema up to date."""
        path = Path(path)
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lms-sqlite")
        loop = asyncio.get_running_loop()
        try:
            conn = await loop.run_in_executor(executor, _connect_and_migrate, path)
            mode = await loop.run_in_executor(executor, _journal_mode, conn)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(path, executor, conn, wal=mode == "wal")

    async def close(self) -> None:
        """Close the connection; later calls raise StorageError. Closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        async with self._reader_lock:
            reader, self._reader = self._reader, None
        try:
            if reader is not None:
                try:
                    await loop.run_in_executor(reader[0], reader[1].close)
                finally:
                    reader[0].shutdown(wait=False)
        finally:
            try:
                # Queued behind every call already submitted, so none of them is cut short.
                await loop.run_in_executor(self._executor, _close, self._conn)
            finally:
                self._executor.shutdown(wait=False)

    # -- generic helpers -------------------------------------------------------------------

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement (its own transaction); return the number of rows it changed."""
        return await self._call(_execute, sql, params)

    async def executemany(self, sql: str, rows: Iterable[Params]) -> int:
        """Run one statement for each row, all in one transaction; return rows changed."""
        rows = list(rows)
        if not rows:
            return 0
        return await self._call(_in_transaction, lambda conn: conn.executemany(sql, rows).rowcount)

    async def fetchall(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        """Rows support both ``row[0]`` and ``row["column"]``."""
        return await self._call(lambda conn: conn.execute(sql, params).fetchall())

    async def fetchone(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        row: sqlite3.Row | None = await self._call(lambda conn: conn.execute(sql, params).fetchone())
        return row

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` on the reading connection's thread: several reads that belong
        together, without a round trip to the event loop between them. ``fn`` must not write;
        it sees what was committed before it started."""
        if self._closed:
            raise StorageError(f"The metadata store {self.path} is closed")
        reader = self._reader or await self._open_reader()
        if reader is None:
            return await self._call(fn)
        executor, conn = reader
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(executor, fn, conn)
        except sqlite3.Error as exc:
            raise StorageError(f"Metadata store {self.path}: {exc}") from exc

    async def _open_reader(self) -> tuple[ThreadPoolExecutor, sqlite3.Connection] | None:
        async with self._reader_lock:
            if self._reader is not None or self._closed or not self._wal:
                return self._reader
            executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lms-sqlite-read")
            loop = asyncio.get_running_loop()
            try:
                conn = await loop.run_in_executor(executor, _connect_reader, self.path)
            except BaseException:
                executor.shutdown(wait=False)
                raise
            self._reader = (executor, conn)
            return self._reader

    async def transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` on the database thread inside one transaction (rolled back if it raises).

        For work that must be atomic across statements, e.g. replacing a file's bookkeeping.
        ``fn`` runs on another thread: it must only use ``conn``, never the event loop.
        """
        return await self._call(_in_transaction, fn)

    # -- embedding cache -------------------------------------------------------------------

    async def get_embeddings(self, model: str, keys: Sequence[bytes]) -> dict[bytes, Vector]:
        """The cached vectors among ``keys`` for ``model``, as read-only float32 arrays."""
        if not keys:
            return {}
        return await self._call(_get_embeddings, model, list(keys))

    async def put_embeddings(
        self, model: str, vectors: Mapping[bytes, Vector], *, max_entries: int | None = None
    ) -> None:
        """Store vectors under their keys (one transaction); an existing key is overwritten.
        With ``max_entries``, the least recently used vectors beyond it are dropped, down to
        nine tenths of it, so that pruning happens once in a while rather than on every write."""
        if not vectors:
            return
        now = time.time()
        rows = []
        for key, vector in vectors.items():
            flat = np.ascontiguousarray(vector, dtype=_VECTOR_DTYPE).reshape(-1)
            rows.append((key, model, int(flat.shape[0]), flat.tobytes(), now, now))

        def write(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT OR REPLACE INTO embedding_cache (key, model, dim, vector, created_at, used_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
            if max_entries is not None:
                self._bound_embeddings(conn, max_entries, len(rows))

        await self._call(_in_transaction, write)

    async def touch_embeddings(self, keys: Sequence[bytes]) -> None:
        """Mark cached vectors as used now, so that pruning keeps them."""
        if not keys:
            return
        now = time.time()

        def touch(conn: sqlite3.Connection) -> None:
            for start in range(0, len(keys), _KEYS_PER_QUERY):
                chunk = list(keys[start : start + _KEYS_PER_QUERY])
                marks = ",".join("?" * len(chunk))
                conn.execute(f"UPDATE embedding_cache SET used_at = ? WHERE key IN ({marks})", [now, *chunk])

        await self._call(_in_transaction, touch)

    def _bound_embeddings(self, conn: sqlite3.Connection, max_entries: int, written: int) -> None:
        # Counting the table on every write would cost a scan each time: the count is kept here,
        # counting a replaced key as new (so it can only be over), and made exact when pruning.
        if self._cache_rows is None:
            self._cache_rows = int(conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0])
        else:
            self._cache_rows += written
        if self._cache_rows <= max_entries:
            return
        total = int(conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0])
        excess = total - max_entries * 9 // 10
        if total > max_entries and excess > 0:
            conn.execute(
                "DELETE FROM embedding_cache WHERE rowid IN"
                " (SELECT rowid FROM embedding_cache ORDER BY used_at LIMIT ?)",
                (excess,),
            )
            total -= excess
            log.info("embedding_cache_pruned", dropped=excess, kept=total)
        self._cache_rows = total

    # -- plumbing --------------------------------------------------------------------------

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise StorageError(f"The metadata store {self.path} is closed")
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, functools.partial(fn, self._conn, *args))
        except sqlite3.Error as exc:
            raise StorageError(f"Metadata store {self.path}: {exc}") from exc


# Everything below runs on the store's own thread.


def _connect_and_migrate(path: Path) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise StorageError(f"Cannot open the metadata store {path}: {exc}") from exc
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            log.warning("sqlite_wal_unavailable", path=str(path), journal_mode=mode)
        # NORMAL is durable across a process crash in WAL mode; only a power cut can lose the
        # last transactions, and everything here can be rebuilt by re-indexing.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        _migrate(conn, path)
    except sqlite3.Error as exc:
        conn.close()
        raise StorageError(f"Cannot open the metadata store {path}: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _journal_mode(conn: sqlite3.Connection) -> str:
    return str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()


def _connect_reader(path: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA query_only = ON")
    except sqlite3.Error as exc:
        raise StorageError(f"Cannot open the metadata store {path} for reading: {exc}") from exc
    return conn


def _user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    found = _user_version(conn)
    if found > len(MIGRATIONS):
        raise StorageError(
            f"The metadata store {path} has schema version {found}, newer than this code knows "
            f"({len(MIGRATIONS)}): it was written by a newer version of the server. Upgrade, or "
            "point LMS_DATA_DIR elsewhere."
        )
    for version, script in enumerate(MIGRATIONS, start=1):
        if version <= found:
            continue
        # IMMEDIATE takes the write lock first, so two processes opening a fresh database at
        # once cannot both apply a migration: the second sees the new version and skips it.
        conn.execute("BEGIN IMMEDIATE")
        try:
            if _user_version(conn) < version:
                for statement in split_statements(script):
                    conn.execute(statement)
                # user_version lives in the database header and is rolled back with the rest.
                conn.execute(f"PRAGMA user_version = {version}")
                log.info("sqlite_migrated", path=str(path), version=version)
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise


def _rollback(conn: sqlite3.Connection) -> None:
    # Some errors (disk full, I/O) make SQLite roll back on its own; a second ROLLBACK would
    # then raise and hide the original error.
    if conn.in_transaction:
        conn.execute("ROLLBACK")


def _close(conn: sqlite3.Connection) -> None:
    try:
        # Cheap, and keeps query plans good for long-lived databases (SQLite's advice).
        conn.execute("PRAGMA optimize")
    except sqlite3.Error as exc:
        log.warning("sqlite_optimize_failed", error=str(exc))
    conn.close()


def _execute(conn: sqlite3.Connection, sql: str, params: Params) -> int:
    return conn.execute(sql, params).rowcount


def _in_transaction(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(conn)
    except BaseException:
        _rollback(conn)
        raise
    conn.execute("COMMIT")
    return result


def _get_embeddings(conn: sqlite3.Connection, model: str, keys: list[bytes]) -> dict[bytes, Vector]:
    found: dict[bytes, Vector] = {}
    for start in range(0, len(keys), _KEYS_PER_QUERY):
        chunk = keys[start : start + _KEYS_PER_QUERY]
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT key, dim, vector FROM embedding_cache WHERE model = ? AND key IN ({marks})",
            [model, *chunk],
        )
        for key, dim, blob in rows:
            vector = np.frombuffer(blob, dtype=_VECTOR_DTYPE)
            if vector.shape[0] != dim:
                # A damaged row is a miss: the text is embedded again and the row replaced.
                log.warning("embedding_cache_bad_row", model=model, dim=dim, size=vector.shape[0])
                continue
            found[bytes(key)] = vector.astype(np.float32, copy=False)
    return found

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import numpy as np
import pytest

from learning_memory.shared.errors import StorageError
from learning_memory.worker.metadata import MetadataStore, metadata_path
from learning_memory.worker.metadata import migrations as migrations_module
from learning_memory.worker.metadata.migrations import MIGRATIONS, SCHEMA_VERSION, split_statements


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return metadata_path(tmp_path / "data")


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[MetadataStore]:
    opened = await MetadataStore.open(db_path)
    yield opened
    await opened.close()


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


async def test_open_creates_the_file_and_applies_migrations(store: MetadataStore, db_path: Path) -> None:
    assert db_path.name == "metadata.sqlite3"
    assert await _schema_version(store) == SCHEMA_VERSION == len(MIGRATIONS)
    assert {"embedding_cache", "indexed_files", "commit_watermarks"} <= tables(db_path)


async def test_migrations_run_once_and_reopen_keeps_data(db_path: Path) -> None:
    first = await MetadataStore.open(db_path)
    await first.execute(
        "INSERT INTO commit_watermarks (repo, last_commit, indexed_at) VALUES (?, ?, ?)", ("r", "abc", 1.0)
    )
    await first.close()
    # A second open must not re-run migration 1 (it would fail: CREATE TABLE without IF NOT EXISTS).
    second = await MetadataStore.open(db_path)
    try:
        assert await _schema_version(second) == SCHEMA_VERSION
        row = await second.fetchone("SELECT last_commit FROM commit_watermarks WHERE repo = ?", ("r",))
        assert row is not None and row["last_commit"] == "abc"
    finally:
        await second.close()


async def test_missing_migrations_are_applied_in_order(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await (await MetadataStore.open(db_path)).close()
    extra = "CREATE TABLE later (x TEXT); INSERT INTO later VALUES ('a;b');"
    monkeypatch.setattr("learning_memory.worker.metadata.store.MIGRATIONS", (*MIGRATIONS, extra))
    upgraded = await MetadataStore.open(db_path)
    try:
        assert await _schema_version(upgraded) == len(MIGRATIONS) + 1
        assert [tuple(r) for r in await upgraded.fetchall("SELECT x FROM later")] == [("a;b",)]
    finally:
        await upgraded.close()


async def test_a_failing_migration_leaves_nothing_behind(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = "CREATE TABLE half_done (x TEXT); THIS IS NOT SQL;"
    monkeypatch.setattr("learning_memory.worker.metadata.store.MIGRATIONS", (*MIGRATIONS, broken))
    with pytest.raises(StorageError, match="Cannot open"):
        await MetadataStore.open(db_path)
    # Migration 1 committed on its own; the broken one rolled back with its version bump.
    assert "half_done" not in tables(db_path)
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


async def test_newer_database_is_a_clear_error(db_path: Path) -> None:
    store = await MetadataStore.open(db_path)
    await store.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 3}")
    await store.close()
    with pytest.raises(StorageError, match="newer"):
        await MetadataStore.open(db_path)


async def pragma(store: MetadataStore, name: str) -> object:
    row = await store.fetchone(f"PRAGMA {name}")
    assert row is not None
    return row[0]


async def test_wal_mode_and_pragmas(store: MetadataStore, db_path: Path) -> None:
    assert await pragma(store, "journal_mode") == "wal"
    assert await pragma(store, "synchronous") == 1  # NORMAL
    assert await pragma(store, "busy_timeout") == 5000
    # WAL is a property of the file: a plain connection sees it too.
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_generic_helpers(store: MetadataStore) -> None:
    sql = "INSERT INTO indexed_files (repo, path, content_hash, indexed_at) VALUES (?, ?, ?, ?)"
    assert await store.executemany(sql, [("r", f"f{i}.py", f"h{i}", 1.0) for i in range(5)]) == 5
    assert await store.executemany(sql, []) == 0
    changed = await store.execute(
        "UPDATE indexed_files SET content_hash = :h WHERE path = :p", {"h": "x", "p": "f1.py"}
    )
    assert changed == 1
    rows = await store.fetchall("SELECT path, content_hash FROM indexed_files ORDER BY path")
    assert [(r["path"], r["content_hash"]) for r in rows][:2] == [("f0.py", "h0"), ("f1.py", "x")]
    assert await store.fetchone("SELECT * FROM indexed_files WHERE path = ?", ("nope",)) is None


async def test_executemany_is_atomic(store: MetadataStore) -> None:
    sql = "INSERT INTO commit_watermarks (repo, last_commit) VALUES (?, ?)"
    with pytest.raises(StorageError, match="UNIQUE"):
        await store.executemany(sql, [("a", "1"), ("b", "2"), ("a", "3")])
    assert await store.fetchall("SELECT * FROM commit_watermarks") == []


async def test_transaction_commits_or_rolls_back(store: MetadataStore) -> None:
    def replace(conn: sqlite3.Connection) -> int:
        conn.execute("DELETE FROM indexed_files WHERE repo = 'r'")
        conn.execute("INSERT INTO indexed_files (repo, path) VALUES ('r', 'new.py')")
        return 7

    await store.execute("INSERT INTO indexed_files (repo, path) VALUES ('r', 'old.py')")
    assert await store.transaction(replace) == 7

    def fail(conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM indexed_files")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        await store.transaction(fail)
    assert [r["path"] for r in await store.fetchall("SELECT path FROM indexed_files")] == ["new.py"]


async def test_sql_errors_become_storage_errors(store: MetadataStore) -> None:
    with pytest.raises(StorageError, match="no such table"):
        await store.fetchall("SELECT * FROM nowhere")


async def test_closed_store_refuses_calls(db_path: Path) -> None:
    store = await MetadataStore.open(db_path)
    await store.close()
    await store.close()  # twice is harmless
    with pytest.raises(StorageError, match="closed"):
        await store.fetchone("SELECT 1")


async def test_unopenable_path_is_a_storage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StorageError, match="Cannot open"):
        await MetadataStore.open(blocker / "metadata.sqlite3")


async def test_concurrent_calls_all_run_on_one_thread(store: MetadataStore) -> None:
    threads: set[int] = set()

    def insert(i: int) -> Callable[[sqlite3.Connection], None]:
        def work(conn: sqlite3.Connection) -> None:
            threads.add(threading.get_ident())
            conn.execute("INSERT INTO indexed_files (repo, path) VALUES (?, ?)", ("r", f"{i}.py"))

        return work

    await asyncio.gather(
        *(store.transaction(insert(i)) for i in range(50)),
        *(store.fetchall("SELECT * FROM indexed_files") for _ in range(50)),
    )
    row = await store.fetchone("SELECT COUNT(*) FROM indexed_files")
    assert row is not None and row[0] == 50
    assert len(threads) == 1 and threading.get_ident() not in threads


async def test_reads_do_not_wait_behind_a_write_and_see_what_was_committed(store: MetadataStore) -> None:
    await store.execute("INSERT INTO commit_watermarks (repo, last_commit) VALUES ('r', 'c1')")
    writing, release = threading.Event(), threading.Event()

    def long_write(conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE commit_watermarks SET last_commit = 'c2'")
        writing.set()
        assert release.wait(10)

    write = asyncio.ensure_future(store.transaction(long_write))
    assert await asyncio.to_thread(writing.wait, 10)
    # The writer's thread is busy inside its transaction: the read answers all the same, from
    # the last commit.
    seen = await asyncio.wait_for(
        store.read(lambda conn: conn.execute("SELECT last_commit FROM commit_watermarks").fetchone()[0]), 5
    )
    assert seen == "c1"
    release.set()
    await write
    assert (
        await store.read(lambda conn: conn.execute("SELECT last_commit FROM commit_watermarks").fetchone()[0])
        == "c2"
    )
    with pytest.raises(StorageError, match=r"readonly|read-only|attempt to write"):
        await store.read(lambda conn: conn.execute("DELETE FROM commit_watermarks"))


async def test_two_stores_on_one_file_see_each_other(db_path: Path) -> None:
    # WAL: a second connection (another process, in real life) reads what the first committed.
    a = await MetadataStore.open(db_path)
    b = await MetadataStore.open(db_path)
    try:
        await a.execute("INSERT INTO commit_watermarks (repo, last_commit) VALUES ('r', 'c1')")
        row = await b.fetchone("SELECT last_commit FROM commit_watermarks")
        assert row is not None and row[0] == "c1"
    finally:
        await a.close()
        await b.close()


async def test_embedding_round_trip(store: MetadataStore) -> None:
    vectors = {b"k1": np.array([0.6, 0.8], dtype=np.float32), b"k2": np.array([1.0, 0.0], dtype=np.float32)}
    await store.put_embeddings("m", vectors)
    got = await store.get_embeddings("m", [b"k1", b"k2", b"missing"])
    assert set(got) == {b"k1", b"k2"}
    np.testing.assert_array_equal(got[b"k1"], vectors[b"k1"])
    assert got[b"k1"].dtype == np.float32 and not got[b"k1"].flags.writeable
    assert await store.get_embeddings("other-model", [b"k1"]) == {}
    assert await store.get_embeddings("m", []) == {}


async def test_embedding_lookup_of_many_keys(store: MetadataStore) -> None:
    # More keys than one query may bind: the store splits the lookup.
    keys = [i.to_bytes(4, "big") for i in range(2500)]
    await store.put_embeddings("m", {k: np.ones(3, dtype=np.float32) for k in keys[::2]})
    got = await store.get_embeddings("m", keys)
    assert len(got) == 1250


async def test_damaged_embedding_row_is_a_miss(store: MetadataStore) -> None:
    await store.execute(
        "INSERT INTO embedding_cache (key, model, dim, vector, created_at) VALUES (?, 'm', 4, ?, 0)",
        (b"k", np.ones(3, dtype=np.float32).tobytes()),
    )
    assert await store.get_embeddings("m", [b"k"]) == {}


def test_split_statements() -> None:
    script = """
    CREATE TABLE t (x TEXT);
    INSERT INTO t VALUES ('semi;colon');
    CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE t SET x = 'y'; END;
    """
    assert len(split_statements(script)) == 3
    with pytest.raises(ValueError, match="incomplete"):
        split_statements("CREATE TABLE t (x TEXT); INSERT INTO t VALUES ('unterminated")
    assert migrations_module.SCHEMA_VERSION == len(MIGRATIONS)


async def test_a_cache_from_before_its_bound_counts_each_vector_used_when_written(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("learning_memory.worker.metadata.store.MIGRATIONS", MIGRATIONS[:7])
    older = await MetadataStore.open(db_path)
    await older.execute(
        "INSERT INTO embedding_cache (key, model, dim, vector, created_at) VALUES (?, ?, ?, ?, ?)",
        (b"k", "m", 1, b"\0\0\0\0", 42.0),
    )
    await older.close()
    monkeypatch.setattr("learning_memory.worker.metadata.store.MIGRATIONS", MIGRATIONS)
    upgraded = await MetadataStore.open(db_path)
    try:
        row = await upgraded.fetchone("SELECT used_at FROM embedding_cache WHERE key = ?", (b"k",))
        assert row is not None and row["used_at"] == 42.0
    finally:
        await upgraded.close()


async def _schema_version(store: MetadataStore) -> int:
    row = await store.fetchone("PRAGMA user_version")
    assert row is not None
    return int(row[0])


async def test_units_are_looked_up_by_name_through_an_index_before_any_statistics(tmp_path: Path) -> None:
    store = await MetadataStore.open(tmp_path / "fresh.sqlite3")
    try:
        for sql in (
            "SELECT point_id FROM code_lexical WHERE name = ? COLLATE NOCASE AND ? IS NOT NULL LIMIT 5",
            "SELECT point_id FROM code_lexical WHERE name COLLATE NOCASE IN (?, ?) LIMIT 5",
            "SELECT point_id FROM code_lexical WHERE name = ? COLLATE NOCASE AND project = ? LIMIT 5",
        ):
            plan = await store.fetchall("EXPLAIN QUERY PLAN " + sql, ("a", "b"))
            assert any("USING INDEX" in str(row[3]) for row in plan), (sql, [tuple(r) for r in plan])
    finally:
        await store.close()

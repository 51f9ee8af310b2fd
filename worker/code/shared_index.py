"""A project's code index shared by every worker of the namespace, through Redis.

Each worker answers searches from its own SQLite (FTS5 for BM25, the name lookups, the rows'
payloads): fast, and ranked exactly as a single worker ranks. With shared state
(``LMS_SHARED_STATE``), what that SQLite holds for a project is a replica of the project's record
in Redis, written by whichever worker indexed it: per file, its content hash and its keyword rows,
and the project's root. The record's version moves on every write; a worker whose replica is at
another version rebuilds the project from the record, in one transaction, before it searches,
indexes or lists it. So a search answered by any worker sees every row, and an incremental index
on any worker skips the files another has indexed already.

Writers of one project take turns under its lock (``worker.locks``), so a write never races
another; a reader's snapshot of a record is one MULTI. A file's hash and rows are written
together, so a crash leaves either both or neither, as the indexer's own order requires.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from redis.asyncio import Redis

from learning_memory.shared.keys import Keys
from learning_memory.shared.log import get_logger
from learning_memory.worker.code import lexical
from learning_memory.worker.code.lexical import Row
from learning_memory.worker.metadata.store import MetadataStore

log = get_logger(__name__)

_VERSION = "version"


@dataclass(frozen=True)
class FileRecord:
    content_hash: str
    rows: list[Row]


@dataclass(frozen=True)
class ProjectRecord:
    version: int
    root: str | None
    recursive: bool
    files: dict[str, FileRecord]


class SharedCodeIndex:
    def __init__(self, redis: Redis, keys: Keys) -> None:
        self._redis = redis
        self._keys = keys

    async def versions(self, projects: Sequence[str]) -> dict[str, int]:
        """Each project's record version (0: none), in one round trip."""
        async with self._redis.pipeline(transaction=False) as pipe:
            for project in projects:
                pipe.hget(self._keys.code_meta(project), _VERSION)
            raw = await pipe.execute()
        return {project: int(value or 0) for project, value in zip(projects, raw, strict=True)}

    async def projects(self) -> list[str]:
        members = await cast(Awaitable[set[bytes]], self._redis.smembers(self._keys.code_projects))
        return sorted(member.decode() for member in members)

    async def write_files(self, project: str, files: Mapping[str, FileRecord]) -> int:
        """Record the files' hashes and rows (replacing what they had); returns the new version."""
        values = {
            path: json.dumps([f.content_hash, f.rows], separators=(",", ":")) for path, f in files.items()
        }
        return await self._write(
            project, lambda pipe: pipe.hset(self._keys.code_files(project), mapping=values)
        )

    async def remove_files(self, project: str, paths: Sequence[str]) -> int:
        return await self._write(project, lambda pipe: pipe.hdel(self._keys.code_files(project), *paths))

    async def set_root(self, project: str, root: Path, recursive: bool) -> int:
        """Record where the project lives; the version moves only when that changed, so that an
        index run that found nothing new sends no worker rebuilding."""
        meta = self._keys.code_meta(project)
        now = await cast(Awaitable[list[Any]], self._redis.hmget(meta, ["root", "recursive", _VERSION]))
        if now[0] is not None and now[0].decode() == str(root) and now[1] == str(int(recursive)).encode():
            return int(now[2] or 0)
        mapping = {"root": str(root), "recursive": int(recursive)}
        return await self._write(project, lambda pipe: pipe.hset(meta, mapping=mapping))

    async def drop(self, project: str) -> None:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._keys.code_files(project))
            # The version goes on counting rather than restarting: a replica at version 3 of the
            # dropped project must not take a new project's version 3 for its own.
            pipe.hdel(self._keys.code_meta(project), "root", "recursive")
            pipe.hincrby(self._keys.code_meta(project), _VERSION, 1)
            pipe.srem(self._keys.code_projects, project)
            await pipe.execute()

    async def read(self, project: str) -> ProjectRecord:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hgetall(self._keys.code_meta(project))
            pipe.hgetall(self._keys.code_files(project))
            meta, files = await pipe.execute()
        meta = {key.decode(): value.decode() for key, value in meta.items()}
        records = {}
        for path, value in files.items():
            content_hash, rows = json.loads(value)
            records[path.decode()] = FileRecord(content_hash, [cast(Row, tuple(row)) for row in rows])
        return ProjectRecord(
            version=int(meta.get(_VERSION, 0)),
            root=meta.get("root"),
            recursive=meta.get("recursive", "1") == "1",
            files=records,
        )

    async def _write(self, project: str, change: Any) -> int:
        async with self._redis.pipeline(transaction=True) as pipe:
            change(pipe)
            pipe.hincrby(self._keys.code_meta(project), _VERSION, 1)
            pipe.sadd(self._keys.code_projects, project)
            results = await pipe.execute()
        return int(results[-2])


class CodeIndexReplica:
    """Keeps this worker's SQLite rows of each project at its record's version in Redis."""

    def __init__(self, shared: SharedCodeIndex) -> None:
        self.shared = shared

    async def refresh(self, metadata: MetadataStore, project: str | None = None) -> None:
        """Bring ``project`` (or every shared project) up to date here."""
        projects = [project] if project is not None else await self._all(metadata)
        shared = await self.shared.versions(projects)
        local = await _local_versions(metadata)
        for name in projects:
            if shared[name] != local.get(name, 0):
                await self._rebuild(metadata, name)

    async def wrote(self, metadata: MetadataStore, project: str, version: int) -> None:
        """This worker wrote ``version`` of ``project`` (rows already here): only a replica that
        was current before the write is current after it; another rebuilds on its next refresh."""

        def advance(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE code_replicas SET version = ? WHERE project = ? AND version = ?",
                (version, project, version - 1),
            )
            if version == 1:
                conn.execute(
                    "INSERT OR IGNORE INTO code_replicas (project, version) VALUES (?, 1)", (project,)
                )

        await metadata.transaction(advance)

    async def _all(self, metadata: MetadataStore) -> list[str]:
        local = await metadata.fetchall("SELECT project FROM code_replicas")
        return sorted(set(await self.shared.projects()) | {str(row["project"]) for row in local})

    async def _rebuild(self, metadata: MetadataStore, project: str) -> None:
        record = await self.shared.read(project)

        def rebuild(conn: sqlite3.Connection) -> None:
            # Rows whose vectors this worker already wrote keep them: only what changed waits again.
            embedded = conn.execute(
                "SELECT point_id, text FROM code_lexical WHERE project = ? AND embedded = 1", (project,)
            ).fetchall()
            lexical.drop_project(conn, project)
            conn.execute("DELETE FROM indexed_files WHERE repo = ?", (project,))
            conn.execute("DELETE FROM project_roots WHERE project = ?", (project,))
            if not record.files and record.root is None:  # dropped, or never indexed
                conn.execute("DELETE FROM code_replicas WHERE project = ?", (project,))
                return
            rows = [row for file in record.files.values() for row in file.rows]
            lexical.replace_rows(conn, project, [], rows)
            conn.executemany(
                "UPDATE code_lexical SET embedded = 1 WHERE point_id = ? AND text = ? AND project = ?",
                [(point, text, project) for point, text in embedded],
            )
            conn.executemany(
                "INSERT INTO indexed_files (repo, path, content_hash) VALUES (?, ?, ?)",
                [(project, path, file.content_hash) for path, file in record.files.items()],
            )
            if record.root is not None:
                conn.execute(
                    "INSERT INTO project_roots (project, root, recursive) VALUES (?, ?, ?)",
                    (project, record.root, int(record.recursive)),
                )
            conn.execute(
                "INSERT OR REPLACE INTO code_replicas (project, version) VALUES (?, ?)",
                (project, record.version),
            )

        await metadata.transaction(rebuild)
        log.info("code_replica_rebuilt", project=project, version=record.version, files=len(record.files))


async def _local_versions(metadata: MetadataStore) -> dict[str, int]:
    rows = await metadata.fetchall("SELECT project, version FROM code_replicas")
    return {str(row["project"]): int(row["version"]) for row in rows}

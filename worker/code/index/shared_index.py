"""A project's code index shared by every worker of the namespace, through Redis.

Each worker answers searches from its own SQLite (FTS5 for BM25, the name lookups, the rows'
payloads): fast, and ranked exactly as a single worker ranks. With shared state
(``LMS_SHARED_STATE``), what that SQLite holds for a project is a replica of the project's record
in Redis, written by whichever worker indexed it: per file, its content hash and its keyword rows,
and the project's root. Every write moves the record's version and notes, per file it touched,
the version that touched it; a worker whose replica is at another version applies what changed
since (or the whole record, the first time or after the project was deleted), in one
transaction, before it searches, indexes or lists the project. So a search answered by any worker
sees every row, and an incremental index on any worker skips the files another has indexed.

Writers of one project take turns under its lock (``worker.locks``); each write, and each read a
replica makes, is one Lua script, so a reader never sees a version without its changes. A file's
hash and rows are written together, so a crash leaves either both or neither, as the indexer's
own order requires.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from redis.asyncio import Redis

from learning_memory.shared.keys import Keys
from learning_memory.shared.log import get_logger
from learning_memory.worker.code.index import unit_store
from learning_memory.worker.code.index.unit_store import Row
from learning_memory.worker.metadata.store import MetadataStore

log = get_logger(__name__)

_VERSION = "version"
# One write of a project's files, atomic with its version: each path's change is recorded at the
# version that made it, so a replica at version v reads only what changed since v.
# KEYS: meta, files, changes, projects. ARGV: project, "set" (then path, value pairs) or "del"
# (then paths).
_WRITE = """
local v = redis.call('hincrby', KEYS[1], 'version', 1)
redis.call('sadd', KEYS[4], ARGV[1])
if ARGV[2] == 'set' then
    for i = 3, #ARGV, 2 do
        redis.call('hset', KEYS[2], ARGV[i], ARGV[i + 1])
        redis.call('zadd', KEYS[3], v, ARGV[i])
    end
else
    for i = 3, #ARGV do
        redis.call('hdel', KEYS[2], ARGV[i])
        redis.call('zadd', KEYS[3], v, ARGV[i])
    end
end
return v
"""
# Where the project lives; the version moves (and the project is listed) only when that changed,
# so that an index run that found nothing new sends no worker reading. ARGV: project, root,
# recursive ("0" or "1").
_SET_ROOT = """
local now = redis.call('hmget', KEYS[1], 'root', 'recursive', 'version')
if now[1] == ARGV[2] and now[2] == ARGV[3] then
    return tonumber(now[3] or '0')
end
redis.call('hset', KEYS[1], 'root', ARGV[2], 'recursive', ARGV[3])
redis.call('sadd', KEYS[4], ARGV[1])
return redis.call('hincrby', KEYS[1], 'version', 1)
"""
# The project's record goes; its version goes on counting, and "reset" says from which version
# on a replica must be rebuilt whole (its recorded changes went with it).
_DROP = """
local v = redis.call('hincrby', KEYS[1], 'version', 1)
redis.call('hset', KEYS[1], 'reset', v)
redis.call('hdel', KEYS[1], 'root', 'recursive')
redis.call('del', KEYS[2], KEYS[3])
redis.call('srem', KEYS[4], ARGV[1])
return v
"""
# What a replica at version ARGV[1] needs, as one snapshot: version, reset, root, recursive,
# "full" or "changes", then path, value pairs (value "" for a file gone).
_READ = """
local meta = redis.call('hmget', KEYS[1], 'version', 'reset', 'root', 'recursive')
local out = {meta[1] or '0', meta[2] or '0', meta[3] or '', meta[4] or '1'}
local since = tonumber(ARGV[1])
local paths
if since == 0 or since < tonumber(meta[2] or '0') then
    paths = redis.call('hkeys', KEYS[2])
    out[5] = 'full'
else
    paths = redis.call('zrangebyscore', KEYS[3], '(' .. ARGV[1], '+inf')
    out[5] = 'changes'
end
for _, path in ipairs(paths) do
    out[#out + 1] = path
    out[#out + 1] = redis.call('hget', KEYS[2], path) or ''
end
return out
"""


@dataclass(frozen=True)
class FileRecord:
    content_hash: str
    rows: list[Row]


@dataclass(frozen=True)
class ProjectChanges:
    """What changed in a project's record since a replica's version (everything, when ``full``)."""

    version: int
    root: str | None
    recursive: bool
    full: bool
    files: dict[str, FileRecord | None]  # None: the file left the project


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
        pairs: list[str] = []
        for path, file in files.items():
            pairs += [path, json.dumps([file.content_hash, file.rows], separators=(",", ":"))]
        return int(await self._eval(_WRITE, project, project, "set", *pairs))

    async def remove_files(self, project: str, paths: Sequence[str]) -> int:
        return int(await self._eval(_WRITE, project, project, "del", *paths))

    async def set_root(self, project: str, root: Path, recursive: bool) -> int:
        return int(await self._eval(_SET_ROOT, project, project, str(root), str(int(recursive))))

    async def drop(self, project: str) -> None:
        await self._eval(_DROP, project, project)

    async def changes(self, project: str, since: int) -> ProjectChanges:
        raw = await self._eval(_READ, project, str(since))
        version, _, root, recursive, mode, *pairs = [value.decode() for value in raw]
        files: dict[str, FileRecord | None] = {}
        for path, value in zip(pairs[::2], pairs[1::2], strict=True):
            if value:
                content_hash, rows = json.loads(value)
                files[path] = FileRecord(content_hash, [cast(Row, tuple(row)) for row in rows])
            else:
                files[path] = None
        return ProjectChanges(int(version), root or None, recursive == "1", mode == "full", files)

    async def _eval(self, script: str, project: str, *args: str) -> Any:
        """Run one of the scripts above on ``project``'s keys."""
        keys = (
            self._keys.code_meta(project),
            self._keys.code_files(project),
            self._keys.code_changes(project),
            self._keys.code_projects,
        )
        return await cast(Awaitable[Any], self._redis.eval(script, len(keys), *keys, *args))


class CodeIndexReplica:
    """Keeps this worker's SQLite rows of each project at its record's version in Redis."""

    def __init__(self, shared: SharedCodeIndex, metadata: Callable[[], Awaitable[MetadataStore]]) -> None:
        self.shared = shared
        self._metadata = metadata

    async def refresh(self, project: str | None = None) -> None:
        """Bring ``project`` (or every shared project) up to date here."""
        metadata = await self._metadata()
        projects = [project] if project is not None else await self._all(metadata)
        shared = await self.shared.versions(projects)
        local = await _local_versions(metadata)
        for name in projects:
            if shared[name] != local.get(name, 0):
                await self._catch_up(metadata, name, local.get(name, 0))

    @contextlib.asynccontextmanager
    async def writing(
        self, project: str, write: Callable[[SharedCodeIndex], Awaitable[int]]
    ) -> AsyncIterator[None]:
        """``write`` the record, then (in the block) this worker's own rows: a worker that dies in
        between is behind its record, never ahead of it, and catches up on next use."""
        version = await write(self.shared)
        yield
        await self._wrote(await self._metadata(), project, version)

    async def _wrote(self, metadata: MetadataStore, project: str, version: int) -> None:
        """This worker wrote ``version`` of ``project`` (rows already here): only a replica that
        was current before the write is current after it; another catches up on its next refresh."""

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

    async def _catch_up(self, metadata: MetadataStore, project: str, since: int) -> None:
        found = await self.shared.changes(project, since)
        await metadata.transaction(lambda conn: _apply(conn, project, found))
        log.info(
            "code_replica_updated",
            project=project,
            version=found.version,
            files=len(found.files),
            whole=found.full,
        )


def _apply(conn: sqlite3.Connection, project: str, found: ProjectChanges) -> None:
    """Inside one transaction: this worker's rows, hashes and root of ``project`` become the
    record's. Rows whose vectors this worker already wrote keep them when their id and text are
    unchanged: only what changed waits for its vector again."""
    paths = list(found.files)
    embedded = unit_store.embedded_rows(conn, project, None if found.full else paths)
    if found.full:
        unit_store.drop_project(conn, project)
        conn.execute("DELETE FROM indexed_files WHERE repo = ?", (project,))
    rows = [row for file in found.files.values() if file is not None for row in file.rows]
    unit_store.replace_rows(conn, project, [] if found.full else paths, rows)
    unit_store.keep_embedded(conn, project, embedded)
    conn.executemany(
        "DELETE FROM indexed_files WHERE repo = ? AND path = ?",
        [(project, path) for path, file in found.files.items() if file is None],
    )
    conn.executemany(
        "INSERT OR REPLACE INTO indexed_files (repo, path, content_hash) VALUES (?, ?, ?)",
        [(project, path, file.content_hash) for path, file in found.files.items() if file is not None],
    )
    conn.execute("DELETE FROM project_roots WHERE project = ?", (project,))
    if found.root is not None:
        conn.execute(
            "INSERT INTO project_roots (project, root, recursive) VALUES (?, ?, ?)",
            (project, found.root, int(found.recursive)),
        )
    has_files = conn.execute("SELECT 1 FROM indexed_files WHERE repo = ? LIMIT 1", (project,)).fetchone()
    if has_files is None and found.root is None:  # dropped, or never indexed
        conn.execute("DELETE FROM code_replicas WHERE project = ?", (project,))
        return
    conn.execute(
        "INSERT OR REPLACE INTO code_replicas (project, version) VALUES (?, ?)", (project, found.version)
    )


async def _local_versions(metadata: MetadataStore) -> dict[str, int]:
    rows = await metadata.fetchall("SELECT project, version FROM code_replicas")
    return {str(row["project"]): int(row["version"]) for row in rows}

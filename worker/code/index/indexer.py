"""Incremental, idempotent indexing of one directory into one project.

A file's sha256 (of the parser's version and its bytes) is compared with its ``indexed_files``
row: unchanged files are not parsed again; new or changed ones are parsed and their units
replaced; rows whose file is gone from disk (or is now skipped) lose their units and their row.

Indexing makes a project searchable: each unit's keyword row is written with its point's payload
and marked as waiting for its vector, which ``worker.code.index.filler`` computes afterwards, in the
background. The transformer is the slow part by far, so search answers from the keywords and the
code-aware ranking seconds after the index starts, and gains the dense side as vectors land.

Replacing a group of files runs in this order: delete the files' points by filter, replace their
keyword rows, record the hashes. A crash at any step leaves the hashes unrecorded, so the retried
job redoes those files: nothing is missing, nothing duplicated. With shared state, the files'
record in Redis (hashes and rows together, ``worker.code.index.shared_index``) is written before this
worker's replica: a crash in between leaves the replica behind its record, rebuilt on next use.

A producer task reads, hashes and parses files in a thread, a batch at a time, into a bounded
queue, while the consumer writes what was parsed before. The thread keeps the event loop free
(heartbeats, progress, searches) meanwhile; the vector filler waits until the run is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from learning_memory.shared.contracts.code import COLLECTION, CodeUnit, FileError, IndexCodebaseResponse
from learning_memory.shared.jobs import ProgressReporter, no_progress
from learning_memory.shared.log import get_logger
from learning_memory.worker.code.index import parser, unit_store
from learning_memory.worker.code.index.discover import Discovery, discover, discover_one
from learning_memory.worker.code.index.shared_index import FileRecord, SharedCodeIndex
from learning_memory.worker.services import WorkerServices
from learning_memory.worker.vectors.base import Filter, MatchAny, MatchValue, VectorStore

log = get_logger(__name__)

FILES_PER_READ = 16  # files read and parsed per trip to the thread
QUEUE_READS = 8  # parsed batches waiting for the model, at most: bounds the memory held
WRITE_BATCH = 256  # units per group written (and files per group when files have few units)
PATHS_PER_FILTER = 256  # file paths per delete-by-filter call
MAX_ERRORS = 100
PROGRESS_EVERY_S = 0.5


@dataclass
class FileWork:
    path: str
    content_hash: str | None  # None: unreadable now (io_error), nothing to record, retried next run
    unchanged: bool = False
    units: list[CodeUnit] = field(default_factory=list)
    error: FileError | None = None


@dataclass
class Stats:
    indexed: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: int = 0
    units: int = 0
    errors: list[FileError] = field(default_factory=list)

    def add_error(self, error: FileError) -> None:
        self.failed += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(error)


def read_and_parse(
    root: Path, paths: list[PurePosixPath], known: dict[str, str], project: str
) -> list[FileWork]:
    """Runs in a thread: read, hash and (if new or changed) parse each file."""
    return [_read_and_parse_one(root, rel, known.get(str(rel)), project) for rel in paths]


def _read_and_parse_one(root: Path, rel: PurePosixPath, known_hash: str | None, project: str) -> FileWork:
    path = str(rel)
    try:
        source = (root / rel).read_bytes()
    except OSError as exc:
        return FileWork(path, None, error=FileError(file_path=path, error_type="io_error", message=str(exc)))
    digest = hashlib.sha256(parser.PARSE_VERSION + source).hexdigest()
    if digest == known_hash:
        return FileWork(path, digest, unchanged=True)
    language = parser.language_for(rel)
    if language is None:  # discovery only lists files with a language; a parser change could differ
        return FileWork(path, digest)
    try:
        result = parser.parse_source(source, language=language, project=project, file_path=path)
    except Exception as exc:
        # A parser bug on one file must not stop the index; the error names the file.
        log.warning("code_parse_crashed", file=path, error=repr(exc))
        message = f"parser failed: {exc!r}"
        return FileWork(
            path, digest, error=FileError(file_path=path, error_type="parse_error", message=message)
        )
    return FileWork(path, digest, units=result.units, error=result.error)


class CodeIndexer:
    """One run: ``await CodeIndexer(services, root, project).run()``."""

    def __init__(
        self,
        services: WorkerServices,
        root: Path,
        project: str,
        *,
        recursive: bool = True,
        report: ProgressReporter = no_progress,
    ) -> None:
        self.services = services
        self.root = root.resolve()
        self.project = project
        self.recursive = recursive
        self.report = report
        self.stats = Stats()
        self._total = 0
        self._last_report = 0.0

    async def run(self, only: PurePosixPath | None = None) -> IndexCodebaseResponse:
        """Index the whole directory, or with ``only`` that one file (relative to the root): read
        again if it changed, dropped if it is gone or no longer wanted, the rest untouched."""
        started = time.perf_counter()
        if only is None:
            discovery = await asyncio.to_thread(discover, self.root, self.recursive)
        else:
            wanted = await asyncio.to_thread(discover_one, self.root, only, self.recursive)
            discovery = Discovery(files=[only] if wanted else [], skipped=0 if wanted else 1)
        self._total = len(discovery.files)
        await self.services.current_code_index(self.project)
        metadata = await self.services.metadata()
        rows = await metadata.fetchall(
            "SELECT path, content_hash FROM indexed_files WHERE repo = ?", (self.project,)
        )
        known = {str(row["path"]): str(row["content_hash"]) for row in rows}
        if only is not None:
            known = {path: digest for path, digest in known.items() if path == str(only)}
        await self._remove(sorted(set(known) - {str(rel) for rel in discovery.files}))
        await self._report(force=True)

        filler = self.services.vector_filler()
        with filler.paused() if filler is not None else contextlib.nullcontext():
            await self._parse_and_write(discovery.files, known)
        await self._report(force=True)

        stats = self.stats
        duration_ms = int((time.perf_counter() - started) * 1000)
        log.info(
            "code_indexed",
            project=self.project,
            root=str(self.root),
            indexed=stats.indexed,
            unchanged=stats.unchanged,
            removed=stats.removed,
            skipped=discovery.skipped,
            failed=stats.failed,
            units=stats.units,
            duration_ms=duration_ms,
        )
        return IndexCodebaseResponse(
            project=self.project,
            files_indexed=stats.indexed,
            files_unchanged=stats.unchanged,
            files_removed=stats.removed,
            files_skipped=discovery.skipped,
            units_indexed=stats.units,
            errors=stats.errors,
            duration_ms=duration_ms,
        )

    async def _parse_and_write(self, files: list[PurePosixPath], known: dict[str, str]) -> None:
        queue: asyncio.Queue[list[FileWork] | None] = asyncio.Queue(maxsize=QUEUE_READS)
        producer = asyncio.create_task(self._produce(files, known, queue), name="code-parse")
        try:
            await self._consume(queue)
            await producer  # raises what the producer raised
        finally:
            # After a failure of the consumer: stop parsing, and collect the task so nothing leaks.
            producer.cancel()
            await asyncio.gather(producer, return_exceptions=True)

    async def _produce(
        self, files: list[PurePosixPath], known: dict[str, str], queue: asyncio.Queue[list[FileWork] | None]
    ) -> None:
        try:
            for start in range(0, len(files), FILES_PER_READ):
                chunk = files[start : start + FILES_PER_READ]
                await queue.put(
                    await asyncio.to_thread(read_and_parse, self.root, chunk, known, self.project)
                )
        except Exception:
            await queue.put(None)  # wakes the consumer; run() then re-raises this
            raise
        await queue.put(None)

    async def _consume(self, queue: asyncio.Queue[list[FileWork] | None]) -> None:
        group: list[FileWork] = []
        group_units = 0
        while (batch := await queue.get()) is not None:
            for work in batch:
                if work.unchanged:
                    self.stats.unchanged += 1
                    continue
                if work.error is not None:
                    self.stats.add_error(work.error)
                if work.content_hash is not None:
                    group.append(work)
                    group_units += len(work.units)
            if group_units >= WRITE_BATCH or len(group) >= WRITE_BATCH:
                await self._write(group)
                group, group_units = [], 0
            await self._report()
        await self._write(group)

    async def _write(self, group: list[FileWork]) -> None:
        """Replace the units of ``group``'s files, then record their hashes (last: see the docstring)."""
        if not group:
            return
        # One row per id: a parser emitting the same name at the same line twice must not inflate counts.
        units = list({unit.id: unit for work in group for unit in work.units}.values())
        # Also for files new to us: a crashed earlier run may have left points for an older version.
        paths = [work.path for work in group]
        store = await self.services.vectors()
        if await store.collection_exists(COLLECTION):
            await self._delete_points(store, paths)
        metadata = await self.services.metadata()
        async with self.services.writing_code_index(
            self.project, lambda shared: self._share(shared, group, units)
        ):
            await unit_store.replace_files(metadata, self.project, paths, units)
            now = time.time()
            await metadata.executemany(
                "INSERT OR REPLACE INTO indexed_files (repo, path, content_hash, indexed_at)"
                " VALUES (?, ?, ?, ?)",
                [(self.project, work.path, work.content_hash, now) for work in group],
            )
        self.stats.indexed += sum(1 for work in group if work.error is None)
        self.stats.units += len(units)
        await self._report(force=True)

    async def _remove(self, gone: list[str]) -> None:
        if not gone:
            return
        store = await self.services.vectors()
        if await store.collection_exists(COLLECTION):
            await self._delete_points(store, gone)
        metadata = await self.services.metadata()
        async with self.services.writing_code_index(
            self.project, lambda shared: shared.remove_files(self.project, gone)
        ):
            await unit_store.remove_files(metadata, self.project, gone)
            await metadata.executemany(
                "DELETE FROM indexed_files WHERE repo = ? AND path = ?",
                [(self.project, path) for path in gone],
            )
        self.stats.removed += len(gone)

    async def _share(self, shared: SharedCodeIndex, group: list[FileWork], units: list[CodeUnit]) -> int:
        """Record the group's files (hash and rows) in the shared index; the new version."""
        by_file: dict[str, list[CodeUnit]] = {}
        for unit in units:
            by_file.setdefault(unit.file_path, []).append(unit)
        files = {
            work.path: FileRecord(work.content_hash or "", unit_store.rows_for(by_file.get(work.path, [])))
            for work in group
        }
        return await shared.write_files(self.project, files)

    async def _delete_points(self, store: VectorStore, paths: list[str]) -> None:
        for start in range(0, len(paths), PATHS_PER_FILTER):
            chunk = tuple(paths[start : start + PATHS_PER_FILTER])
            where = Filter((MatchValue("project", self.project), MatchAny("file_path", chunk)))
            await store.delete_by_filter(COLLECTION, where)

    async def _report(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_report < PROGRESS_EVERY_S:
            return
        self._last_report = now
        done = self.stats.indexed + self.stats.unchanged + self.stats.failed
        await self.report(min(done, self._total), self._total, f"{self.stats.units} units indexed")

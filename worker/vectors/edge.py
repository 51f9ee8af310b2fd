"""Qdrant Edge, the embedded default: one EdgeShard per collection under ``<LMS_DATA_DIR>/vectors``.

What qdrant-edge-py 0.9 does that shaped this module (measured on 2 busy cores with ``python -m
bench vectors``; docs/benchmarks.md has the figures):

- **Every EdgeShard call holds the GIL for its whole duration** (a thread ticking beside it
  stalls as long as the call): ``asyncio.to_thread`` frees nothing and adds its own cost. Reads
  (query, count, retrieve: milliseconds) are direct calls. Writes run in a thread, one engine
  call per 256 points; building the points is Python-level, so the event loop gets turns
  throughout.
- **optimize() holds the GIL throughout**: an HNSW build over a large segment takes seconds with
  no search or heartbeat meanwhile (the engine would let queries run beside it; Python cannot).
  Small segments do not help: below ``full_scan_threshold`` Edge searches a segment exactly even
  with an HNSW index, so small builds bought nothing but time frozen. HNSW paid off only on the
  largest segments, and then little.
- So by default vectors are **not HNSW-indexed**: search is exact (collections far beyond the
  benchmark's size want a Qdrant server, ``LMS_QDRANT_URL``), filters use the payload indexes,
  and ``optimize()`` only vacuums and merges. It runs in the background once 4096 writes have
  come and writes pause for ``QUIET_S``, one pass at a time per collection, never inside a search
  or a bulk load. ``hnsw_threshold`` turns HNSW on for segments holding more vector bytes than
  it, at the cost above.
- **Memory**: vectors, payloads and the id tracker are ``Memory.Cold`` (mapped, read when
  touched; ``Cached`` reads every file in full when a shard loads, the unused tail of each
  vector chunk included). The write-ahead log cannot be configured: the shard reads all of it
  on load and every write passes through it, so its mapped pages, and those of the payload
  indexes (read whole on load too), are handed back to the page cache after a load and every
  ``PAGE_OUT_EVERY`` points written (``mapped_pages``).
- The shard locks its WAL ("WouldBlock" on a second load), per collection and cryptically: the
  store takes one ``flock`` on ``<root>/.lock``, with a clear message for a second process.
- ``MatchValue(True)`` becomes the integer 1 and matches nothing: bools go as ``numpy.bool_``.
- A query-less ``QueryRequest`` pages by id with a numeric ``offset``; with ``OrderBy`` it pages
  by a payload field, which needs an integer or float index; points lacking the field are left
  out, as on a Qdrant server. Cosine vectors are stored normalised; ids come back as UUIDs.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import qdrant_edge as qe

from learning_memory.shared.errors import StorageError
from learning_memory.shared.log import get_logger
from learning_memory.worker.vectors import base, mapped_pages
from learning_memory.worker.vectors.base import (
    CollectionSpec,
    Filter,
    PointData,
    Record,
    ScoredRecord,
    Vector,
    point_id,
)
from learning_memory.worker.vectors.edge_convert import edge_filter, matrix, to_record

log = get_logger(__name__)

T = TypeVar("T")
LOCK_FILE = ".lock"
CONFIG_FILE = "edge_config.json"
WRITE_CHUNK = 256
OPTIMIZE_EVERY = 4096
PAGE_OUT_EVERY = 2048
WAL = "wal"
# What the store maps but a search reads little of: handed back after a load and as writes go.
HANDED_BACK = (WAL, "payload_index")
# Writes must pause this long before a background optimisation starts.
QUIET_S = 1.0
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_SCHEMA = {k: getattr(qe.PayloadSchemaType, k.title()) for k in ("keyword", "integer", "float", "bool")}


def lock_folder(root: Path) -> int:
    """Take an exclusive ``flock`` on ``<root>/.lock`` and write our pid in it; the open descriptor."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StorageError(f"Cannot open the vector store folder {root}: {exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        if not isinstance(exc, BlockingIOError):
            raise StorageError(f"Cannot lock the vector store folder {root}: {exc}") from exc
        raise StorageError(
            f"The vector store folder {root} is in use: pid {holder} holds its lock. "
            "The embedded store (Qdrant Edge) allows one process: one worker serves all sessions. "
            "To run more workers, point every one at a Qdrant server with LMS_QDRANT_URL."
        ) from None
    # Only the holder writes: a loser must not truncate the pid it is about to report.
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


@dataclass(eq=False)
class _Collection:
    name: str
    shard: qe.EdgeShard
    dimension: int
    optimize_every: int | None
    write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    pending: int = 0  # points written or deleted since the last optimisation started
    unreleased: int = 0  # points written or deleted since the WAL's pages were last paged out
    last_write: float = 0.0  # time.monotonic() of the last write
    optimizer: asyncio.Task[None] | None = None

    def call(self, what: str, fn: Callable[..., T], *args: Any) -> T:
        return _engine(f"{what} in collection '{self.name}'", fn, *args)

    def wrote(self, count: int, folder: Path) -> None:
        """Count writes (under the write lock); every PAGE_OUT_EVERY, hand the WAL's and the
        payload indexes' pages back."""
        self.unreleased += count
        if self.unreleased >= PAGE_OUT_EVERY:
            self.unreleased = 0
            mapped_pages.page_out(folder, HANDED_BACK)

    def query(
        self,
        what: str,
        limit: int,
        offset: int,
        q: Any,
        flt: Filter | None,
        with_vectors: bool = False,
        *,
        with_payload: bool | list[str] = True,
    ) -> list[qe.ScoredPoint]:
        request = qe.QueryRequest(
            limit=max(limit, 0),
            offset=max(offset, 0),
            query=q,
            filter=edge_filter(flt),
            with_payload=with_payload,
            with_vector=with_vectors,
        )
        return self.call(what, self.shard.query, request)


class EdgeVectorStore:
    """The VectorStore on Qdrant Edge: the constructor takes the folder lock, :meth:`open` also loads
    the collections. Reads call the engine directly, writes go to a thread (see the module docstring)."""

    def __init__(
        self,
        root: Path | str,
        *,
        optimize_every: int | None = OPTIMIZE_EVERY,
        hnsw_threshold: int | None = None,
    ) -> None:
        self.root = Path(root)
        self._lock_fd = lock_folder(self.root)
        self._optimize_every = optimize_every  # None: only when asked, with optimize()
        self._hnsw_threshold = hnsw_threshold
        self._collections: dict[str, _Collection] = {}
        self._open_lock = asyncio.Lock()
        self._closed = False

    @classmethod
    async def open(cls, root: Path | str, **options: Any) -> EdgeVectorStore:
        store = cls(root, **options)
        try:
            for path in sorted(store.root.iterdir()):
                if _NAME.match(path.name) and (path / CONFIG_FILE).is_file():
                    await store._collection(path.name)
        except BaseException:
            await store.close()
            raise
        return store

    async def ensure_collection(self, spec: CollectionSpec) -> None:
        async with self._open_lock:
            coll = self._collections.get(spec.name) or await self._load(spec.name)
            if coll is None:
                coll = await self._create(spec)
            elif coll.dimension != spec.dimension:
                raise StorageError(
                    f"Collection '{spec.name}' holds {coll.dimension}-dimensional vectors, but "
                    f"{spec.dimension} were asked for (another embedding model?). To re-index with this "
                    f"model: stop the worker, delete the folder {self.root / spec.name}, and store or "
                    "index again; later jobs re-embed what they need."
                )
        async with coll.write_lock:
            await asyncio.to_thread(_ensure_indexes, coll, spec.indexes)

    async def collection_exists(self, name: str) -> bool:
        on_disk = bool(_NAME.match(name)) and (self.root / name / CONFIG_FILE).is_file()
        return name in self._collections or on_disk

    async def upsert(self, collection: str, points: Sequence[PointData]) -> None:
        coll = await self._collection(collection)
        if points:
            async with coll.write_lock:
                await asyncio.to_thread(_write_points, coll, points)
                coll.wrote(len(points), self._path(coll.name))
            self._note_writes(coll, len(points))

    async def delete(self, collection: str, ids: Sequence[str]) -> None:
        coll = await self._collection(collection)
        point_ids = [point_id(i) for i in ids]
        async with coll.write_lock:
            for start in range(0, len(point_ids), WRITE_CHUNK * 4):
                operation = qe.UpdateOperation.delete_points(list(point_ids[start : start + WRITE_CHUNK * 4]))
                await asyncio.to_thread(coll.call, "delete points", coll.shard.update, operation)
            coll.wrote(len(point_ids), self._path(coll.name))
        self._note_writes(coll, len(point_ids))

    async def delete_by_filter(self, collection: str, filter: Filter) -> None:
        coll = await self._collection(collection)
        # edge_filter gives None for an empty filter; the engine wants a filter, and an empty one matches all.
        operation = qe.UpdateOperation.delete_points_by_filter(edge_filter(filter) or qe.Filter(must=[]))
        async with coll.write_lock:
            await asyncio.to_thread(coll.call, "delete points by filter", coll.shard.update, operation)
        # How many went is unknown; one write is enough to mark the collection for a later vacuum.
        self._note_writes(coll, 1)

    async def get(self, collection: str, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:
        coll = await self._collection(collection)
        wanted = list(dict.fromkeys(point_id(i) for i in ids))
        found = coll.call("get points", coll.shard.retrieve, wanted, True, with_vectors) if wanted else []
        by_id = {str(r.id): r for r in found}
        return [to_record(by_id[pid], with_vectors) for pid in wanted if pid in by_id]

    async def search(
        self,
        collection: str,
        vector: Vector,
        *,
        limit: int,
        filter: Filter | None = None,
        with_payload: bool = True,
    ) -> list[ScoredRecord]:
        coll = await self._collection(collection)
        query = qe.Query.Nearest(cast(list[float], matrix([vector], coll.name, coll.dimension)[0].tolist()))
        found = coll.query("search", limit, 0, query, filter, with_payload=with_payload)
        return [
            ScoredRecord(id=str(p.id), score=float(p.score), payload=dict(p.payload or {})) for p in found
        ]

    async def scroll(
        self,
        collection: str,
        *,
        limit: int,
        offset: int = 0,
        filter: Filter | None = None,
        order_by: str | None = None,
        descending: bool = True,
        with_vectors: bool = False,
        payload_fields: Sequence[str] | None = None,
    ) -> list[Record]:
        coll = await self._collection(collection)
        payload = True if payload_fields is None else list(payload_fields)
        if order_by is None:  # a query-less request pages by id
            found = coll.query("scroll", limit, offset, None, filter, with_vectors, with_payload=payload)
        else:
            order = qe.OrderBy(order_by, qe.Direction.Desc if descending else qe.Direction.Asc)
            what = f"scroll ordered by '{order_by}' (it needs an integer or float index)"
            found = coll.query(what, limit, offset, order, filter, with_vectors, with_payload=payload)
        return [to_record(p, with_vectors) for p in found]

    async def pages(
        self,
        collection: str,
        *,
        size: int,
        filter: Filter | None = None,
        with_vectors: bool = False,
        payload_fields: Sequence[str] | None = None,
    ) -> AsyncIterator[list[Record]]:
        coll = await self._collection(collection)
        payload: bool | list[str] = True if payload_fields is None else list(payload_fields)
        cursor: Any = None
        while True:
            request = qe.ScrollRequest(
                offset=cursor,
                limit=size,
                filter=edge_filter(filter),
                with_payload=payload,
                with_vector=with_vectors,
            )
            found, cursor = coll.call("scroll", coll.shard.scroll, request)
            if found:
                yield [to_record(p, with_vectors) for p in found]
            if cursor is None or not found:
                return

    async def count(self, collection: str, filter: Filter | None = None) -> int:
        coll = await self._collection(collection)
        request = qe.CountRequest(exact=True, filter=edge_filter(filter))
        return int(coll.call("count", coll.shard.count, request))

    async def optimize(self, collection: str) -> None:
        """Optimise now (vacuum, merge, HNSW if on); the event loop stalls meanwhile (see the docstring)."""
        coll = await self._collection(collection)
        await self.wait_for_background()
        coll.pending = 0
        await self._optimize_once(coll)

    async def wait_for_background(self) -> None:
        """Wait for the background optimisations under way (tests, benchmarks, close)."""
        tasks = [c.optimizer for c in self._collections.values() if c.optimizer is not None]
        await asyncio.gather(*tasks, return_exceptions=True)

    def _due(self, coll: _Collection) -> bool:
        return coll.optimize_every is not None and coll.pending >= coll.optimize_every and not self._closed

    def _note_writes(self, coll: _Collection, count: int) -> None:
        coll.pending += count
        coll.last_write = time.monotonic()
        # One pass at a time per collection: writes made meanwhile are picked up by its loop.
        if self._due(coll) and (coll.optimizer is None or coll.optimizer.done()):
            coll.optimizer = asyncio.create_task(self._optimize_while_due(coll), name=f"optimize-{coll.name}")

    async def _optimize_while_due(self, coll: _Collection) -> None:
        while self._due(coll):
            # A pass holds the GIL throughout: run it when writes pause, not in the middle of a
            # bulk load, where it would stall the writes and every search around them.
            quiet_for = time.monotonic() - coll.last_write
            if quiet_for < QUIET_S:
                await asyncio.sleep(QUIET_S - quiet_for)
                continue
            coll.pending = 0
            try:
                await self._optimize_once(coll)
            except StorageError as exc:  # nobody awaits this task: log it; the next writes try again
                log.warning("edge_optimize_failed", collection=coll.name, error=exc.message)
                return

    async def _optimize_once(self, coll: _Collection) -> None:
        started = time.perf_counter()
        changed = await asyncio.to_thread(coll.call, "optimize", coll.shard.optimize)
        seconds = round(time.perf_counter() - started, 3)
        log.info("edge_optimized", collection=coll.name, changed=changed, seconds=seconds)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # An optimisation cannot be interrupted: wait for it, so the shard is not closed under it.
        await self.wait_for_background()
        failures: list[str] = []
        for coll in self._collections.values():
            async with coll.write_lock:
                try:
                    await asyncio.to_thread(coll.shard.flush)
                    coll.shard.close()
                except Exception as exc:  # a shard left open is closed when it is dropped
                    failures.append(f"{coll.name}: {exc}")
        self._collections.clear()
        os.close(self._lock_fd)  # releases the flock
        if failures:
            raise StorageError("Qdrant Edge failed to flush on close: " + "; ".join(failures))

    async def _collection(self, name: str) -> _Collection:
        if self._closed:
            raise StorageError("The vector store is closed")
        coll = self._collections.get(name)
        if coll is None:
            async with self._open_lock:
                coll = self._collections.get(name) or await self._load(name)
        if coll is None:
            raise StorageError(f"Collection '{name}' does not exist (ensure_collection creates it)")
        return coll

    def _config(self, dimension: int, half_precision: bool) -> qe.EdgeConfig:
        # An indexing threshold of 0 turns HNSW off (see the module docstring).
        threshold_kb = 0 if self._hnsw_threshold is None else max(self._hnsw_threshold // 1024, 1)
        datatype = qe.VectorStorageDatatype.Float16 if half_precision else qe.VectorStorageDatatype.Float32
        cold = qe.Memory.Cold
        vectors = qe.EdgeVectorParams(
            size=dimension, distance=qe.Distance.Cosine, datatype=datatype, memory=cold
        )
        return qe.EdgeConfig(
            vectors=vectors,
            optimizers=qe.EdgeOptimizersConfig(indexing_threshold=threshold_kb),
            payload_memory=cold,
            id_tracker_memory=cold,
        )

    async def _load(self, name: str) -> _Collection | None:
        """The collection from disk, or None if it was never created (the caller holds _open_lock)."""
        path = self._path(name)
        if not (path / CONFIG_FILE).is_file():
            return None
        dimension, half_precision = _stored_vectors(path)
        # Passing our config applies today's optimiser settings to shards made by older versions
        # (with the stored vectors' size and type: Edge refuses a shard of another type).
        load = qe.EdgeShard.load
        config = self._config(dimension, half_precision)
        shard = await asyncio.to_thread(_engine, f"load '{name}'", load, str(path), config)
        coll = self._collections[name] = _Collection(name, shard, dimension, self._optimize_every)
        mapped_pages.page_out(path, HANDED_BACK)  # read in full to load; little read again
        info = coll.call("read info", shard.info)
        # A first pass after loading: vacuums, and indexes what an earlier run left (with HNSW on).
        self._note_writes(coll, max(info.points_count - info.indexed_vectors_count, 0))
        log.info("edge_collection_loaded", collection=name, points=info.points_count, dimension=dimension)
        return coll

    async def _create(self, spec: CollectionSpec) -> _Collection:
        if spec.dimension <= 0:
            raise StorageError(f"Collection '{spec.name}': dimension must be positive, got {spec.dimension}")
        path, config = self._path(spec.name), self._config(spec.dimension, spec.half_precision)
        create = qe.EdgeShard.create
        shard = await asyncio.to_thread(_engine, f"create '{spec.name}'", create, str(path), config)
        log.info("edge_collection_created", collection=spec.name, dimension=spec.dimension, path=str(path))
        self._collections[spec.name] = _Collection(spec.name, shard, spec.dimension, self._optimize_every)
        return self._collections[spec.name]

    def _path(self, name: str) -> Path:
        if not _NAME.match(name):
            raise StorageError(f"Invalid collection name {name!r}: use letters, digits, '_', '-' and '.'")
        return self.root / name


def _ensure_indexes(coll: _Collection, indexes: Mapping[str, base.PayloadIndexType]) -> None:
    existing = coll.call("read info", coll.shard.info).payload_schema
    for key, kind in indexes.items():
        schema = _SCHEMA[kind]
        if key not in existing:
            operation = qe.UpdateOperation.create_field_index(key, schema)
            coll.call(f"index payload field '{key}'", coll.shard.update, operation)
        elif existing[key].data_type != schema:
            stored = str(existing[key].data_type)
            log.warning("edge_index_differs", collection=coll.name, field=key, wanted=kind, stored=stored)


def _write_points(coll: _Collection, points: Sequence[PointData]) -> None:
    """Runs in a thread: one engine call per chunk, so the event loop gets turns in between."""
    for start in range(0, len(points), WRITE_CHUNK):
        chunk = points[start : start + WRITE_CHUNK]
        # Memoryview rows are read as float sequences; building float lists took a third of the time.
        rows = [
            cast(list[float], memoryview(row))
            for row in matrix([p.vector for p in chunk], coll.name, coll.dimension)
        ]
        batch = [qe.Point(point_id(p.id), row, dict(p.payload)) for p, row in zip(chunk, rows, strict=True)]
        coll.call("upsert points", coll.shard.update, qe.UpdateOperation.upsert_points(batch))


def _engine(what: str, fn: Callable[..., T], *args: Any) -> T:
    try:
        return fn(*args)
    except Exception as exc:
        raise StorageError(f"Qdrant Edge failed to {what}: {exc}") from exc


def _stored_vectors(path: Path) -> tuple[int, bool]:
    """The stored vectors' size, and whether they are 16-bit floats (no datatype: 32-bit)."""
    try:
        vectors = json.loads((path / CONFIG_FILE).read_text())["vectors"][""]
        return int(vectors["size"]), vectors.get("datatype") == "float16"
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StorageError(f"Cannot read the vector size of {path} from {CONFIG_FILE}: {exc}") from exc

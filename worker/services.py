"""The worker's long-lived services, built once on first need, and what each job function gets: a
:class:`JobRun`, those services plus this run's id, try and progress reporter."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from learning_memory.shared import __version__
from learning_memory.shared.jobs import ProgressReporter, WorkerIdentity, no_progress
from learning_memory.shared.log import get_logger
from learning_memory.shared.settings import Settings
from learning_memory.worker.git.watermarks import Watermarks
from learning_memory.worker.lazy import Lazy
from learning_memory.worker.learning.cache import AxisVersions, ClusteringCache
from learning_memory.worker.locks import Locks

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from learning_memory.shared.keys import Keys
    from learning_memory.worker.code.index.filler import VectorFiller
    from learning_memory.worker.code.index.shared_index import CodeIndexReplica, SharedCodeIndex
    from learning_memory.worker.embedding.base import Embedder
    from learning_memory.worker.metadata.store import MetadataStore
    from learning_memory.worker.vectors.base import CollectionSpec, VectorStore

log = get_logger(__name__)


def new_identity() -> WorkerIdentity:
    host = socket.gethostname()
    pid = os.getpid()
    return WorkerIdentity(
        id=f"{host}-{pid}-{uuid.uuid4().hex[:6]}",
        host=host,
        pid=pid,
        version=__version__,
        started_at=datetime.now(UTC),
    )


class WorkerServices:
    """The worker's long-lived services, each built once on first need.

    Heavy libraries (torch, the vector engine) are imported inside the factories, so the
    server's inline mode pays for them only when a job first needs them. The worker calls
    :meth:`start` to open the stores at once (a locked embedded store must fail at start-up)
    and to load the model in the background while it already takes jobs.
    """

    def __init__(self, settings: Settings, identity: WorkerIdentity | None = None) -> None:
        self.settings = settings
        self.identity = identity or new_identity()
        self._metadata: Lazy[MetadataStore] = Lazy(self._open_metadata)
        self._embedder: Lazy[Embedder] = Lazy(self._open_embedder)
        self._vectors: Lazy[VectorStore] = Lazy(self._open_vectors)
        self._collections: set[str] = set()
        self._filler: VectorFiller | None = None
        self._warming: asyncio.Task[None] | None = None
        # Per project and repository; shared with other workers once connected to Redis.
        self.locks = Locks()
        # Each experience axis's clustering, and the versions it is kept by (shared likewise).
        self.clusterings = ClusteringCache()
        self.axis_versions = AxisVersions(self.metadata)
        # Each repository's commit index watermark (shared too, with shared state).
        self.watermarks = Watermarks(self.metadata)
        # With shared state (once connected): where the embedding cache lives, and this worker's
        # code index rows as a replica of the records in Redis.
        self._shared_redis: tuple[Redis, Keys] | None = None
        self.code_replica: CodeIndexReplica | None = None

    def connect(self, redis: Redis, keys: Keys) -> None:
        """Coordinate with the namespace's other workers through Redis: index locks, the
        experience versions that say when a cached clustering is stale, and, when settings share
        state, the embedding cache, the code index and the commit watermarks."""
        self.locks.connect(redis, keys, owner=self.identity.id)
        self.axis_versions.connect(redis, keys)
        if self.settings.shares_state:
            from learning_memory.worker.code.index.shared_index import CodeIndexReplica, SharedCodeIndex

            self._shared_redis = (redis, keys)
            self.watermarks.connect(redis, keys)
            self.code_replica = CodeIndexReplica(SharedCodeIndex(redis, keys), self.metadata)

    async def current_code_index(self, project: str | None = None) -> None:
        """With shared state, bring this worker's rows of ``project`` (or of every project) to
        their version in Redis before reading or writing them; else nothing to do."""
        if self.code_replica is not None:
            await self.code_replica.refresh(project)

    def writing_code_index(
        self, project: str, write: Callable[[SharedCodeIndex], Awaitable[int]]
    ) -> contextlib.AbstractAsyncContextManager[None]:
        """Around a write of ``project``'s rows here: with shared state, ``write`` records it in
        Redis first (see ``worker.code.index.shared_index``); else nothing more to do."""
        if self.code_replica is None:
            return contextlib.nullcontext()
        return self.code_replica.writing(project, write)

    async def _open_metadata(self) -> MetadataStore:
        from learning_memory.worker.metadata.store import MetadataStore

        self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        return await MetadataStore.open(self.settings.data_dir / "metadata.sqlite3")

    async def _open_embedder(self) -> Embedder:
        from learning_memory.worker.embedding.cache_store import EmbeddingStore
        from learning_memory.worker.embedding.factory import open_embedder

        store = EmbeddingStore(self.metadata)
        if self._shared_redis is not None:
            store.connect(*self._shared_redis)
        embedder = await open_embedder(self.settings, store)
        log.info("embedder.ready", model=embedder.model_name, dimension=embedder.dimension)
        return embedder

    async def _open_vectors(self) -> VectorStore:
        from learning_memory.worker.recall.mirror import KeywordMirror
        from learning_memory.worker.vectors.factory import open_vector_store

        # Memories, values and experiences are found by their words too (worker.recall).
        return KeywordMirror(await open_vector_store(self.settings), self.metadata)

    async def start(self) -> None:
        await self._metadata.get()
        await self._vectors.get()
        self._embedder.start()
        # The keyword indexes the hooks search are read into memory now, not by the first
        # prompt after a start, which would outlast its budget and quieten the hooks.
        from learning_memory.worker.recall.keywords import warm

        self._warming = asyncio.create_task(warm(await self.metadata()), name="keyword-warm-up")
        # Units a previous worker left without vectors (killed mid-fill) are filled now.
        filler = self.vector_filler()
        if filler is not None:
            filler.wake()
        # hdbscan (with scikit-learn and scipy) is imported by the first clustering, not here:
        # over a second of that clustering, but well over 100 MiB the worker does not hold
        # until someone clusters.

    async def metadata(self) -> MetadataStore:
        return await self._metadata.get()

    def vector_filler(self) -> VectorFiller | None:
        """What computes indexed code units' vectors in the background; None when
        ``LMS_CODE_VECTORS`` is off."""
        if not self.settings.code_vectors:
            return None
        if self._filler is None:
            from learning_memory.worker.code.index.filler import VectorFiller

            self._filler = VectorFiller(self)
        return self._filler

    def filling_vectors(self) -> bool:
        """Whether code units are being given their vectors in the background."""
        return self._filler is not None and self._filler.busy

    async def embedder(self) -> Embedder:
        return await self._embedder.get()

    async def vectors(self) -> VectorStore:
        return await self._vectors.get()

    async def collection(self, spec: CollectionSpec) -> VectorStore:
        """The vector store, with ``spec``'s collection created (checked once per process)."""
        store = await self.vectors()
        if spec.name not in self._collections:
            await store.ensure_collection(spec)
            self._collections.add(spec.name)
        return store

    async def close(self) -> None:
        """Release what the services hold; called once at shutdown."""
        if self._warming is not None:
            self._warming.cancel()
            await asyncio.gather(self._warming, return_exceptions=True)
        if self._filler is not None:
            await self._filler.close()
        for lazy in (self._vectors, self._metadata):
            value = lazy.ready
            if value is not None:
                await value.close()


@dataclass
class JobRun:
    """One try of one job: the first argument of every job function."""

    services: WorkerServices
    job_id: str
    job_try: int
    report: ProgressReporter = field(default=no_progress)

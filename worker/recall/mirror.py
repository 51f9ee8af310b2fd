"""The vector store with its recall collections' writes mirrored into the keyword rows.

Every job that stores, replaces or deletes a memory, a value or an experience goes through the
vector store; wrapping it keeps the keyword side in step without each job having to remember
it. The vector write comes first: a worker stopped between the two leaves a point without its
row, which :func:`sync` finds (the counts differ) and writes on the next search.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from learning_memory.shared.log import get_logger
from learning_memory.worker.metadata.store import MetadataStore
from learning_memory.worker.recall import keywords
from learning_memory.worker.recall.texts import COLLECTIONS, keyword_text
from learning_memory.worker.vectors.base import (
    CollectionSpec,
    Filter,
    PointData,
    Record,
    ScoredRecord,
    Vector,
    VectorStore,
)

log = get_logger(__name__)
PAGE = 1_000
# Other workers on a shared Qdrant server write too: counts are compared again after this long.
CHECK_EVERY_S = 5.0


class KeywordMirror:
    """A :class:`VectorStore` that writes the keyword rows of what it stores in recall collections."""

    def __init__(self, inner: VectorStore, metadata: Callable[[], Awaitable[MetadataStore]]) -> None:
        self.inner = inner
        self._metadata = metadata
        self._checked: dict[str, float] = {}  # collection: time.monotonic() of its last check

    def __getattr__(self, name: str) -> Any:  # what a particular store offers beyond the protocol
        return getattr(self.inner, name)

    async def ensure_collection(self, spec: CollectionSpec) -> None:
        await self.inner.ensure_collection(spec)

    async def collection_exists(self, name: str) -> bool:
        return await self.inner.collection_exists(name)

    async def upsert(self, collection: str, points: Sequence[PointData]) -> None:
        await self.inner.upsert(collection, points)
        if collection in COLLECTIONS and points:
            rows = [(p.id, keyword_text(collection, dict(p.payload))) for p in points]
            await keywords.put(await self._metadata(), collection, rows)

    async def get(self, collection: str, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:
        return await self.inner.get(collection, ids, with_vectors=with_vectors)

    async def delete(self, collection: str, ids: Sequence[str]) -> None:
        await self.inner.delete(collection, ids)
        if collection in COLLECTIONS:
            await keywords.drop(await self._metadata(), collection, ids)

    async def delete_by_filter(self, collection: str, filter: Filter) -> None:
        await self.inner.delete_by_filter(collection, filter)
        # Which points went is unknown here: the next search compares and catches up.
        self._checked.pop(collection, None)

    async def search(
        self,
        collection: str,
        vector: Vector,
        *,
        limit: int,
        filter: Filter | None = None,
        with_payload: bool = True,
    ) -> list[ScoredRecord]:
        return await self.inner.search(
            collection, vector, limit=limit, filter=filter, with_payload=with_payload
        )

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
        return await self.inner.scroll(
            collection,
            limit=limit,
            offset=offset,
            filter=filter,
            order_by=order_by,
            descending=descending,
            with_vectors=with_vectors,
            payload_fields=payload_fields,
        )

    def pages(
        self,
        collection: str,
        *,
        size: int,
        filter: Filter | None = None,
        with_vectors: bool = False,
        payload_fields: Sequence[str] | None = None,
    ) -> AsyncIterator[list[Record]]:
        return self.inner.pages(
            collection, size=size, filter=filter, with_vectors=with_vectors, payload_fields=payload_fields
        )

    async def count(self, collection: str, filter: Filter | None = None) -> int:
        return await self.inner.count(collection, filter)

    async def close(self) -> None:
        await self.inner.close()

    async def sync(self, collection: str) -> int:
        """Bring ``collection``'s keyword rows in step with its points when their counts differ
        (a collection stored before the keyword side existed, a write cut short, another worker's
        writes on a shared Qdrant server); the rows written or dropped."""
        metadata = await self._metadata()
        stored = await self.inner.count(collection)
        if stored == await keywords.count(metadata, collection):
            return 0
        have = await keywords.point_ids(metadata, collection)
        seen: set[str] = set()
        written = 0
        async for page in self.inner.pages(collection, size=PAGE):
            seen.update(record.id for record in page)
            rows = [(r.id, keyword_text(collection, r.payload)) for r in page if r.id not in have]
            await keywords.put(metadata, collection, rows)
            written += len(rows)
        gone = have - seen
        await keywords.drop(metadata, collection, gone)
        log.info("recall.keywords_synced", collection=collection, written=written, dropped=len(gone))
        return written + len(gone)

    async def synced(self, collection: str) -> None:
        """:meth:`sync`, at most every CHECK_EVERY_S per collection (at once after a delete by
        filter): two counts when nothing changed, so a search can afford it."""
        now = time.monotonic()
        if now - self._checked.get(collection, -CHECK_EVERY_S) < CHECK_EVERY_S:
            return
        self._checked[collection] = now
        if await self.inner.collection_exists(collection):
            await self.sync(collection)

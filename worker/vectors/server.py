"""A Qdrant server (``LMS_QDRANT_URL``) through ``AsyncQdrantClient``: the store for several workers.

The same URL ``":memory:"`` gives qdrant-client's in-process local mode, which is how the contract
tests run this class (no Qdrant server can run on these machines). Local mode shares the server's
API but not all of its behaviour, and the differences are made up here, in local mode only:

- payload indexes are no-ops there (``create_payload_index`` only warns), so they are not sent;
  the store remembers them instead, because
- ordering by a payload field needs an integer or float index on a server ("No range index for
  order_by key"), while local mode orders by any field: we refuse an unindexed ``order_by`` too.

Everything else (Query API paging by id with a numeric offset, ``OrderByQuery``, exact counts,
MatchValue/MatchAny on list-valued fields, cosine scores) behaves the same in both.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

import numpy as np
from qdrant_client import AsyncQdrantClient, models

from learning_memory.shared.errors import StorageError
from learning_memory.shared.log import get_logger
from learning_memory.worker.vectors import base
from learning_memory.worker.vectors.base import (
    CollectionSpec,
    Filter,
    PointData,
    Record,
    ScoredRecord,
    Vector,
    point_id,
)

log = get_logger(__name__)

T = TypeVar("T")
LOCAL = ":memory:"
WRITE_CHUNK = 256
_SCHEMA = {
    "keyword": models.PayloadSchemaType.KEYWORD,
    "integer": models.PayloadSchemaType.INTEGER,
    "float": models.PayloadSchemaType.FLOAT,
    "bool": models.PayloadSchemaType.BOOL,
}
_ORDERABLE = ("integer", "float")


class QdrantServerStore:
    """The VectorStore on a Qdrant server (``http(s)://...``) or, for tests, ``":memory:"``."""

    def __init__(self, url: str, *, api_key: str | None = None, timeout_s: int = 30) -> None:
        self.url = url
        self._local = url == LOCAL
        if self._local:
            self._client = AsyncQdrantClient(location=LOCAL)
        else:
            # The version check is a blocking request at construction: open() checks reachability instead.
            self._client = AsyncQdrantClient(
                url=url, api_key=api_key, timeout=timeout_s, check_compatibility=False
            )
        self._local_indexes: dict[str, dict[str, base.PayloadIndexType]] = {}
        self._ensure_lock = asyncio.Lock()

    @classmethod
    async def open(cls, url: str, **options: Any) -> QdrantServerStore:
        """A store whose server answered, so a wrong LMS_QDRANT_URL stops a worker at start-up."""
        store = cls(url, **options)
        try:
            await store._run(
                "list collections (is LMS_QDRANT_URL right and the server up?)", store._client.get_collections
            )
        except StorageError:
            await store.close()
            raise
        return store

    async def ensure_collection(self, spec: CollectionSpec) -> None:
        # One at a time in this process; other workers creating it at the same moment are handled below.
        async with self._ensure_lock:
            if not await self.collection_exists(spec.name):
                vectors = models.VectorParams(
                    size=spec.dimension,
                    distance=models.Distance.COSINE,
                    datatype=models.Datatype.FLOAT16 if spec.half_precision else None,
                )
                try:
                    await self._run(
                        f"create collection '{spec.name}'",
                        lambda: self._client.create_collection(spec.name, vectors_config=vectors),
                    )
                    log.info("qdrant_collection_created", collection=spec.name, dimension=spec.dimension)
                except StorageError:
                    if not await self.collection_exists(spec.name):
                        raise
            info = await self._run(
                f"read collection '{spec.name}'", lambda: self._client.get_collection(spec.name)
            )
            stored = info.config.params.vectors
            size = stored.size if isinstance(stored, models.VectorParams) else None
            if size != spec.dimension:
                raise StorageError(
                    f"Collection '{spec.name}' on the Qdrant server {self.url} holds {size}-dimensional "
                    f"vectors, but {spec.dimension} were asked for (another embedding model?). To re-index "
                    f"with this model: delete the collection (DELETE {self.url}/collections/{spec.name}) "
                    "and store or index again; later jobs re-embed what they need."
                )
            await self._ensure_indexes(spec.name, spec.indexes, info.payload_schema)

    async def collection_exists(self, name: str) -> bool:
        return await self._run(f"look up collection '{name}'", lambda: self._client.collection_exists(name))

    async def upsert(self, collection: str, points: Sequence[PointData]) -> None:
        for start in range(0, len(points), WRITE_CHUNK):
            chunk = points[start : start + WRITE_CHUNK]
            await self._run(
                f"upsert points into collection '{collection}'", partial(self._upsert, collection, chunk)
            )

    async def _upsert(self, collection: str, chunk: Sequence[PointData]) -> None:
        structs = [
            models.PointStruct(id=point_id(p.id), vector=_vector(p.vector), payload=dict(p.payload))
            for p in chunk
        ]
        await self._client.upsert(collection, structs, wait=True)

    async def delete(self, collection: str, ids: Sequence[str]) -> None:
        point_ids: list[models.ExtendedPointId] = [point_id(i) for i in ids]
        if point_ids:
            selector = models.PointIdsList(points=point_ids)
            await self._run(
                f"delete points from collection '{collection}'",
                lambda: self._client.delete(collection, points_selector=selector, wait=True),
            )

    async def delete_by_filter(self, collection: str, filter: Filter) -> None:
        selector = models.FilterSelector(filter=_qdrant_filter(filter) or models.Filter())
        await self._run(
            f"delete points by filter from collection '{collection}'",
            lambda: self._client.delete(collection, points_selector=selector, wait=True),
        )

    async def get(self, collection: str, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:
        wanted = list(dict.fromkeys(point_id(i) for i in ids))
        if not wanted:
            return []
        found = await self._run(
            f"get points from collection '{collection}'",
            lambda: self._client.retrieve(
                collection, list(wanted), with_payload=True, with_vectors=with_vectors
            ),
        )
        by_id = {str(r.id): r for r in found}
        return [_record(by_id[pid], with_vectors) for pid in wanted if pid in by_id]

    async def search(
        self,
        collection: str,
        vector: Vector,
        *,
        limit: int,
        filter: Filter | None = None,
        with_payload: bool = True,
    ) -> list[ScoredRecord]:
        if limit <= 0:
            return []
        query = _vector(vector)
        what = f"search collection '{collection}'"
        found = await self._query(what, collection, query, limit, 0, filter, with_payload=with_payload)
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
        if limit <= 0:
            return []
        query: models.OrderByQuery | None = None
        what = f"scroll collection '{collection}'"
        if order_by is not None:
            what += f" ordered by '{order_by}' (it needs an integer or float index)"
            if self._local and self._local_indexes.get(collection, {}).get(order_by) not in _ORDERABLE:
                raise StorageError(f"Qdrant failed to {what}: no range index for order_by key '{order_by}'")
            direction = models.Direction.DESC if descending else models.Direction.ASC
            query = models.OrderByQuery(order_by=models.OrderBy(key=order_by, direction=direction))
        payload = True if payload_fields is None else list(payload_fields)
        found = await self._query(
            what, collection, query, limit, offset, filter, with_vectors, with_payload=payload
        )
        return [_record(p, with_vectors) for p in found]

    async def pages(
        self,
        collection: str,
        *,
        size: int,
        filter: Filter | None = None,
        with_vectors: bool = False,
        payload_fields: Sequence[str] | None = None,
    ) -> AsyncIterator[list[Record]]:
        payload: bool | list[str] = True if payload_fields is None else list(payload_fields)
        cursor: Any = None
        while True:

            async def page(start: Any = cursor) -> tuple[list[models.Record], Any]:
                return await self._client.scroll(
                    collection,
                    scroll_filter=_qdrant_filter(filter),
                    limit=size,
                    offset=start,
                    with_payload=payload,
                    with_vectors=with_vectors,
                )

            found, cursor = await self._run(f"scroll collection '{collection}'", page)
            if found:
                yield [_record(p, with_vectors) for p in found]
            if cursor is None or not found:
                return

    async def count(self, collection: str, filter: Filter | None = None) -> int:
        result = await self._run(
            f"count collection '{collection}'",
            lambda: self._client.count(collection, count_filter=_qdrant_filter(filter), exact=True),
        )
        return result.count

    async def close(self) -> None:
        await self._client.close()

    async def _query(
        self,
        what: str,
        collection: str,
        query: Any,
        limit: int,
        offset: int,
        flt: Filter | None,
        with_vectors: bool = False,
        *,
        with_payload: bool | list[str] = True,
    ) -> list[models.ScoredPoint]:
        response = await self._run(
            what,
            lambda: self._client.query_points(
                collection,
                query=query,
                query_filter=_qdrant_filter(flt),
                limit=limit,
                offset=max(offset, 0),
                with_payload=with_payload,
                with_vectors=with_vectors,
            ),
        )
        return response.points

    async def _ensure_indexes(
        self,
        name: str,
        indexes: Mapping[str, base.PayloadIndexType],
        existing: Mapping[str, models.PayloadIndexInfo],
    ) -> None:
        if self._local:
            self._local_indexes.setdefault(name, {}).update(indexes)
            return
        for key, kind in indexes.items():
            if key not in existing:
                index = partial(
                    self._client.create_payload_index, name, key, field_schema=_SCHEMA[kind], wait=True
                )
                await self._run(f"index payload field '{key}' of collection '{name}'", index)
            elif existing[key].data_type != _SCHEMA[kind]:
                log.warning(
                    "qdrant_index_differs",
                    collection=name,
                    field=key,
                    wanted=kind,
                    stored=str(existing[key].data_type),
                )

    async def _run(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        try:
            return await call()
        except StorageError:
            raise
        except Exception as exc:
            where = "in-memory Qdrant" if self._local else f"Qdrant at {self.url}"
            raise StorageError(f"{where} failed to {what}: {exc}") from exc


def _vector(value: Vector) -> list[float]:
    array = np.asarray(value, dtype=np.float32)
    if array.ndim != 1:
        raise StorageError(f"A vector must be one-dimensional, got shape {array.shape}")
    return [float(x) for x in array]


def _record(point: models.Record | models.ScoredPoint, with_vectors: bool) -> Record:
    vector: Any = point.vector if with_vectors else None
    if isinstance(vector, dict):  # named vectors: ours is the default one, ""
        vector = vector.get("")
    floats = None if vector is None else [float(x) for x in vector]
    return Record(id=str(point.id), payload=dict(point.payload or {}), vector=floats)


def _qdrant_filter(flt: Filter | None) -> models.Filter | None:
    if flt is None or not flt.must:
        return None
    conditions: list[models.Condition] = [_qdrant_condition(c) for c in flt.must]
    return models.Filter(must=conditions)


def _qdrant_condition(cond: base.Condition) -> models.FieldCondition:
    if isinstance(cond, base.MatchValue):
        return models.FieldCondition(key=cond.key, match=models.MatchValue(value=cond.value))
    if isinstance(cond, base.MatchAny):
        values = list(cond.values)
        if not (all(isinstance(v, str) for v in values) or all(type(v) is int for v in values)):
            raise StorageError(f"MatchAny on '{cond.key}' takes only strings or only integers: {values!r}")
        return models.FieldCondition(key=cond.key, match=models.MatchAny(any=values))
    bounds = models.Range(gte=cond.gte, gt=cond.gt, lte=cond.lte, lt=cond.lt)
    return models.FieldCondition(key=cond.key, range=bounds)

"""Where the embedding cache keeps vectors beyond the process: the worker's SQLite, or Redis.

One worker keeps them in its metadata store, beside the rest of its bookkeeping. Several workers
(on a Qdrant server, each with a data folder of its own) keep them in Redis instead, where every
worker of the namespace finds them: a project indexed by one worker and re-indexed by another is
embedded once. Both bound the cache the same way, dropping the least recently used vectors
beyond ``max_entries`` down to nine tenths of it.

:class:`EmbeddingStore` is what the caching embedder holds: SQLite until :meth:`connect` points
it at Redis, so the choice can be made after the embedder is built.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt
from redis.asyncio import Redis
from redis.exceptions import RedisError

from learning_memory.shared.errors import StorageError
from learning_memory.shared.keys import Keys
from learning_memory.shared.log import get_logger
from learning_memory.worker.metadata.store import MetadataStore

log = get_logger(__name__)

Vector = npt.NDArray[np.float32]
T = TypeVar("T")
_VECTOR_DTYPE = np.dtype("<f4")
# Keys per Redis command: big enough to make a code index's batch one round trip, small enough
# that one command never holds Redis for long.
_KEYS_PER_COMMAND = 500


class VectorCache(Protocol):
    async def get_embeddings(self, model: str, keys: Sequence[bytes]) -> dict[bytes, Vector]:
        """The cached vectors among ``keys``, as read-only float32 arrays."""

    async def put_embeddings(
        self, model: str, vectors: Mapping[bytes, Vector], *, max_entries: int | None = None
    ) -> None:
        """Store vectors under their keys, then bound the cache to ``max_entries``."""

    async def touch_embeddings(self, keys: Sequence[bytes]) -> None:
        """Mark cached vectors as used now, so that bounding keeps them."""


class RedisVectors:
    """The cache in Redis: a string per vector and a sorted set of when each was last used.

    A cache key already names the model (see ``worker.embedding.cache.cache_key``), so vectors of
    several models live side by side under one bound. Writes by several workers at once are
    fine: a vector is the same whoever computed it, and bounding may drop a few more than needed.
    """

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self._redis = redis
        self._keys = keys

    async def get_embeddings(self, model: str, keys: Sequence[bytes]) -> dict[bytes, Vector]:
        found: dict[bytes, Vector] = {}
        try:
            for chunk in _chunks(keys):
                values = await self._redis.mget([self._keys.embedding(key) for key in chunk])
                for key, value in zip(chunk, values, strict=True):
                    if value:
                        vector = np.frombuffer(value, dtype=_VECTOR_DTYPE).astype(np.float32)
                        vector.setflags(write=False)
                        found[key] = vector
        except RedisError as exc:
            raise StorageError(f"Redis embedding cache unreadable: {exc}") from exc
        return found

    async def put_embeddings(
        self, model: str, vectors: Mapping[bytes, Vector], *, max_entries: int | None = None
    ) -> None:
        if not vectors:
            return
        now = time.time()
        try:
            for chunk in _chunks(list(vectors.items())):
                pipe = self._redis.pipeline(transaction=False)
                pipe.mset(
                    {
                        self._keys.embedding(key): np.ascontiguousarray(vector, dtype=_VECTOR_DTYPE).tobytes()
                        for key, vector in chunk
                    }
                )
                pipe.zadd(self._keys.embeddings_used, {key.hex(): now for key, _ in chunk})
                await pipe.execute()
            if max_entries is not None:
                await self._bound(max_entries)
        except RedisError as exc:
            raise StorageError(f"Redis embedding cache unwritable: {exc}") from exc

    async def touch_embeddings(self, keys: Sequence[bytes]) -> None:
        if not keys:
            return
        now = time.time()
        try:
            for chunk in _chunks(keys):
                # XX: a vector dropped meanwhile is not brought back into the count.
                await self._redis.zadd(self._keys.embeddings_used, {key.hex(): now for key in chunk}, xx=True)
        except RedisError as exc:
            raise StorageError(f"Redis embedding cache untouchable: {exc}") from exc

    async def _bound(self, max_entries: int) -> None:
        total = int(await self._redis.zcard(self._keys.embeddings_used))
        if total <= max_entries:
            return
        excess = total - max_entries * 9 // 10
        dropped = await self._redis.zpopmin(self._keys.embeddings_used, excess)
        # Members come back as bytes: the namespace's clients never decode responses.
        names = [self._keys.embedding(bytes.fromhex(member.decode())) for member, _ in dropped]
        for chunk in _chunks(names):
            await self._redis.delete(*chunk)
        log.info("embedding_cache_pruned", dropped=len(names), kept=total - len(names), store="redis")


class EmbeddingStore:
    """The caching embedder's store: the worker's SQLite, or Redis once :meth:`connect` says so."""

    def __init__(self, metadata: Callable[[], Awaitable[MetadataStore]]) -> None:
        self._metadata = metadata
        self._redis: RedisVectors | None = None

    def connect(self, redis: Redis, keys: Keys) -> None:
        self._redis = RedisVectors(redis, keys)

    @property
    def shared(self) -> bool:
        return self._redis is not None

    async def _store(self) -> VectorCache:
        return self._redis if self._redis is not None else await self._metadata()

    async def get_embeddings(self, model: str, keys: Sequence[bytes]) -> dict[bytes, Vector]:
        return await (await self._store()).get_embeddings(model, keys)

    async def put_embeddings(
        self, model: str, vectors: Mapping[bytes, Vector], *, max_entries: int | None = None
    ) -> None:
        await (await self._store()).put_embeddings(model, vectors, max_entries=max_entries)

    async def touch_embeddings(self, keys: Sequence[bytes]) -> None:
        await (await self._store()).touch_embeddings(keys)


def _chunks(items: Sequence[T]) -> list[Sequence[T]]:
    return [items[start : start + _KEYS_PER_COMMAND] for start in range(0, len(items), _KEYS_PER_COMMAND)]

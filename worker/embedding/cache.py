"""An embedder that never embeds the same text twice, even across worker restarts.

Lookups go: in-process LRU, then the store (the worker's SQLite, or Redis shared by every worker:
``worker.embedding.cache_store``; one query for the whole batch), then the model (one call for
all the misses, each distinct text once). New vectors go back to both caches. The store is
bounded: vectors read from it are marked used, and the least recently used go when it outgrows
``max_entries``.
Concurrent calls share work too: a text already being embedded by another call is awaited,
not embedded again.

The cache is an optimisation, never a reason to fail: if the store cannot be read or written, the
call still returns the model's vectors and the failure is logged.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from learning_memory.shared.errors import EmbeddingError, StorageError
from learning_memory.shared.log import get_logger
from learning_memory.worker.embedding.base import Embedder, Embeddings
from learning_memory.worker.embedding.cache_store import VectorCache
from learning_memory.worker.lru import Recent

log = get_logger(__name__)

Vector = npt.NDArray[np.float32]


def cache_key(model_name: str, text: str) -> bytes:
    return hashlib.sha256(f"{model_name}\0{text}".encode()).digest()


class CachingEmbedder:
    def __init__(
        self,
        inner: Embedder,
        store: VectorCache,
        memory_items: int = 10_000,
        *,
        max_entries: int | None = None,
    ) -> None:
        self._inner = inner
        self._store = store
        self._max_entries = max_entries  # on disk; None: unbounded
        self._lru: Recent[bytes, Vector] = Recent(memory_items)
        # Keys some call is resolving right now (SQLite or model); other calls await these.
        self._pending: dict[bytes, asyncio.Future[Vector]] = {}

    @property
    def inner(self) -> Embedder:
        return self._inner

    @property
    def model_name(self) -> str:
        return self._inner.model_name

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def head(self, text: str, max_tokens: int) -> str:
        return self._inner.head(text, max_tokens)

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        model = self.model_name
        keys = [cache_key(model, text) for text in texts]
        found: dict[bytes, Vector] = {}
        todo: dict[bytes, str] = {}  # distinct keys still to resolve, with their text
        for key, text in zip(keys, texts, strict=True):
            if key in found or key in todo:
                continue
            hit = self._lru.get(key)
            if hit is None:
                todo[key] = text
            else:
                found[key] = hit
        while todo:
            todo = await self._resolve(todo, found)
        return np.stack([found[key] for key in keys])

    async def _resolve(self, todo: dict[bytes, str], found: dict[bytes, Vector]) -> dict[bytes, str]:
        """Resolve what we can into ``found``; return what is left to retry."""
        waiting = {key: self._pending[key] for key in todo if key in self._pending}
        owned = {key: text for key, text in todo.items() if key not in waiting}
        if owned:
            await self._fill(owned, found)
        if waiting:
            await asyncio.wait(waiting.values())
        retry: dict[bytes, str] = {}
        for key, future in waiting.items():
            if future.cancelled():
                # The call that owned it failed or was cancelled: try again ourselves.
                retry[key] = todo[key]
            else:
                found[key] = future.result()
        return retry

    async def _fill(self, owned: dict[bytes, str], found: dict[bytes, Vector]) -> None:
        loop = asyncio.get_running_loop()
        futures = {key: loop.create_future() for key in owned}
        self._pending.update(futures)
        try:
            vectors = await self._read_store(list(owned))
            stored = list(vectors)
            misses = [key for key in owned if key not in vectors]
            fresh: dict[bytes, Vector] = {}
            if misses:
                fresh = await self._embed_inner([owned[key] for key in misses], misses)
                vectors.update(fresh)
            for key, vector in vectors.items():
                self._lru.put(key, vector)
                found[key] = vector
                futures[key].set_result(vector)
            # Waiters already have their vectors; the disk writes happen after.
            await self._write_store(fresh)
            await self._touch_store(stored)
        finally:
            for key, future in futures.items():
                if self._pending.get(key) is future:
                    del self._pending[key]
                if not future.done():
                    future.cancel()

    async def _embed_inner(self, texts: list[str], keys: list[bytes]) -> dict[bytes, Vector]:
        log.debug("embedding.computed", texts=len(texts), model=self.model_name)
        out = await self._inner.embed(texts)
        if out.shape != (len(texts), self.dimension):
            raise EmbeddingError(
                f"Embedder {self.model_name!r} returned shape {out.shape}, "
                f"expected ({len(texts)}, {self.dimension})"
            )
        fresh: dict[bytes, Vector] = {}
        for key, row in zip(keys, out, strict=True):
            # A copy per row: a view would pin the whole batch array in the LRU.
            vector = np.array(row, dtype=np.float32)
            vector.setflags(write=False)
            fresh[key] = vector
        return fresh

    async def _read_store(self, keys: list[bytes]) -> dict[bytes, Vector]:
        try:
            return await self._store.get_embeddings(self.model_name, keys)
        except StorageError as exc:
            log.warning("embedding_cache_read_failed", error=str(exc), texts=len(keys))
            return {}

    async def _write_store(self, vectors: dict[bytes, Vector]) -> None:
        if not vectors:
            return
        try:
            await self._store.put_embeddings(self.model_name, vectors, max_entries=self._max_entries)
        except StorageError as exc:
            log.warning("embedding_cache_write_failed", error=str(exc), texts=len(vectors))

    async def _touch_store(self, keys: list[bytes]) -> None:
        if not keys or self._max_entries is None:
            return
        try:
            await self._store.touch_embeddings(keys)
        except StorageError as exc:
            log.warning("embedding_cache_touch_failed", error=str(exc), texts=len(keys))

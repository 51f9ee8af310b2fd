from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from learning_memory.shared.errors import EmbeddingError, StorageError
from learning_memory.shared.settings import load_settings
from learning_memory.worker.embedding.base import Embeddings
from learning_memory.worker.embedding.cache import CachingEmbedder, cache_key
from learning_memory.worker.embedding.factory import open_embedder
from learning_memory.worker.embedding.hashing import HashingEmbedder
from learning_memory.worker.metadata import MetadataStore


class Spy:
    """A HashingEmbedder that records every batch it is asked to embed."""

    def __init__(self, dimension: int = 32, name: str | None = None) -> None:
        self._inner = HashingEmbedder(dimension)
        self._name = name or self._inner.model_name
        self.calls: list[list[str]] = []
        self.gate: asyncio.Event | None = None  # when set, embed waits for it
        self.fail_next = False
        self._called = asyncio.Condition()

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    @property
    def embedded(self) -> list[str]:
        return [text for call in self.calls for text in call]

    def head(self, text: str, max_tokens: int) -> str:
        return self._inner.head(text, max_tokens)

    async def wait_calls(self, count: int) -> None:
        async with self._called:
            await asyncio.wait_for(self._called.wait_for(lambda: len(self.calls) >= count), timeout=10)

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        self.calls.append(list(texts))
        async with self._called:
            self._called.notify_all()
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_next:
            self.fail_next = False
            raise EmbeddingError("model failed")
        return await self._inner.embed(texts)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[MetadataStore]:
    opened = await MetadataStore.open(tmp_path / "metadata.sqlite3")
    yield opened
    await opened.close()


async def expected(texts: Sequence[str], dimension: int = 32) -> Embeddings:
    return await HashingEmbedder(dimension).embed(texts)


async def cached_rows(store: MetadataStore) -> int:
    row = await store.fetchone("SELECT COUNT(*) FROM embedding_cache")
    assert row is not None
    return int(row[0])


async def test_misses_are_embedded_once_then_served_from_memory(store: MetadataStore) -> None:
    spy = Spy()
    cache = CachingEmbedder(spy, store)
    assert cache.model_name == "hashing-32" and cache.dimension == 32
    first = await cache.embed(["a", "b"])
    np.testing.assert_array_equal(first, await expected(["a", "b"]))
    second = await cache.embed(["b", "c", "a"])
    np.testing.assert_array_equal(second, await expected(["b", "c", "a"]))
    assert spy.calls == [["a", "b"], ["c"]]
    assert await cached_rows(store) == 3


async def test_memory_hits_do_not_touch_sqlite(store: MetadataStore) -> None:
    spy = Spy()
    cache = CachingEmbedder(spy, store)
    await cache.embed(["a"])
    await store.close()  # a SQLite lookup would now fail, and the model be asked again
    np.testing.assert_array_equal(await cache.embed(["a"]), await expected(["a"]))
    assert spy.calls == [["a"]]


async def test_restart_is_served_from_sqlite(store: MetadataStore, tmp_path: Path) -> None:
    await CachingEmbedder(Spy(), store).embed(["x", "y"])
    await store.close()
    reopened = await MetadataStore.open(tmp_path / "metadata.sqlite3")
    try:
        spy = Spy()
        out = await CachingEmbedder(spy, reopened).embed(["y", "z", "x"])
        np.testing.assert_array_equal(out, await expected(["y", "z", "x"]))
        assert spy.calls == [["z"]]
    finally:
        await reopened.close()


async def test_duplicates_in_a_batch_are_embedded_once_and_order_is_kept(store: MetadataStore) -> None:
    spy = Spy()
    texts = ["q", "p", "q", "r", "p", "q"]
    out = await CachingEmbedder(spy, store).embed(texts)
    assert spy.calls == [["q", "p", "r"]]
    np.testing.assert_array_equal(out, await expected(texts))
    assert out.dtype == np.float32


async def test_model_names_do_not_share_entries(store: MetadataStore) -> None:
    one, two = Spy(name="model-one"), Spy(name="model-two")
    await CachingEmbedder(one, store).embed(["same text"])
    await CachingEmbedder(two, store).embed(["same text"])
    assert one.embedded == two.embedded == ["same text"]
    assert cache_key("model-one", "same text") != cache_key("model-two", "same text")
    assert await cached_rows(store) == 2


async def test_empty_input(store: MetadataStore) -> None:
    spy = Spy(dimension=16)
    out = await CachingEmbedder(spy, store).embed([])
    assert out.shape == (0, 16) and out.dtype == np.float32
    assert spy.calls == []


async def test_results_are_copies(store: MetadataStore) -> None:
    cache = CachingEmbedder(Spy(), store)
    out = await cache.embed(["a"])
    out[0, :] = 0
    np.testing.assert_array_equal(await cache.embed(["a"]), await expected(["a"]))


async def test_lru_evicts_to_sqlite(store: MetadataStore) -> None:
    spy = Spy()
    cache = CachingEmbedder(spy, store, memory_items=2)
    await cache.embed(["a", "b", "c"])
    await cache.embed(["a"])  # evicted from memory, found in SQLite
    assert spy.embedded == ["a", "b", "c"]


async def test_concurrent_calls_share_one_embedding(store: MetadataStore) -> None:
    spy = Spy()
    spy.gate = asyncio.Event()
    cache = CachingEmbedder(spy, store)
    first = asyncio.create_task(cache.embed(["shared", "one"]))
    second = asyncio.create_task(cache.embed(["shared", "two"]))
    await spy.wait_calls(2)  # both calls are at the model, each with its own misses
    spy.gate.set()
    a, b = await asyncio.wait_for(asyncio.gather(first, second), timeout=10)
    assert sorted(spy.embedded) == ["one", "shared", "two"]
    np.testing.assert_array_equal(a[0], b[0])


async def test_a_failed_owner_lets_waiters_retry(store: MetadataStore) -> None:
    spy = Spy()
    spy.gate = asyncio.Event()
    spy.fail_next = True
    cache = CachingEmbedder(spy, store)
    owner = asyncio.create_task(cache.embed(["t"]))
    await spy.wait_calls(1)
    waiter = asyncio.create_task(cache.embed(["t"]))
    # One turn of the loop runs the new task until it blocks: on the owner's pending entry,
    # not on the model.
    await asyncio.sleep(0)
    assert not waiter.done() and len(spy.calls) == 1
    spy.gate.set()
    with pytest.raises(EmbeddingError, match="model failed"):
        await asyncio.wait_for(owner, timeout=10)
    out = await asyncio.wait_for(waiter, timeout=10)
    np.testing.assert_array_equal(out, await expected(["t"]))
    assert spy.embedded == ["t", "t"]


async def test_a_broken_sqlite_store_degrades_to_the_model(store: MetadataStore) -> None:
    spy = Spy()
    cache = CachingEmbedder(spy, store)
    await store.close()
    out = await cache.embed(["a", "b"])
    np.testing.assert_array_equal(out, await expected(["a", "b"]))
    assert spy.calls == [["a", "b"]]


async def test_wrong_shape_from_the_model_is_an_embedding_error(store: MetadataStore) -> None:
    class Liar(Spy):
        async def embed(self, texts: Sequence[str]) -> Embeddings:
            return np.zeros((len(texts) + 1, self.dimension), dtype=np.float32)

    with pytest.raises(EmbeddingError, match="shape"):
        await CachingEmbedder(Liar(), store).embed(["a"])


async def test_factory_hashing_model(store: MetadataStore, tmp_path: Path) -> None:
    settings = load_settings(embedding_model="hashing:48", data_dir=tmp_path)
    embedder = await open_embedder(settings, store)
    assert isinstance(embedder, CachingEmbedder) and isinstance(embedder.inner, HashingEmbedder)
    assert embedder.dimension == 48 and embedder.model_name == "hashing-48"
    assert (await embedder.embed(["hello"])).shape == (1, 48)


@pytest.mark.parametrize("name", ["hashing:", "hashing:abc", "hashing:1", "hashing:-4"])
async def test_factory_rejects_bad_hashing_dimension(store: MetadataStore, name: str) -> None:
    with pytest.raises(EmbeddingError, match="hashing:<dimension>"):
        await open_embedder(load_settings(embedding_model=name), store)


async def used_keys(store: MetadataStore) -> set[bytes]:
    return {bytes(row[0]) for row in await store.fetchall("SELECT key FROM embedding_cache")}


async def test_the_cache_keeps_the_most_recently_used_within_its_bound(store: MetadataStore) -> None:
    name = HashingEmbedder(32).model_name
    old = await CachingEmbedder(Spy(), store, max_entries=1_000).embed([f"old {i}" for i in range(600)])
    assert old.shape == (600, 32) and await cached_rows(store) == 600
    # A fresh process reads the first 100 old texts back from SQLite: that marks them as used.
    reader = CachingEmbedder(Spy(), store, max_entries=1_000)
    spy = Spy()
    await reader.embed([f"old {i}" for i in range(100)])
    # 500 new texts, in batches as the indexer writes them, take the cache past its bound at
    # 1,050 rows: it is cut to nine tenths of it (150 go, all among the old texts not read
    # again), and the last batch brings it to 950.
    writer = CachingEmbedder(spy, store, max_entries=1_000)
    for start in range(0, 500, 50):
        await writer.embed([f"new {i}" for i in range(start, start + 50)])
    assert await cached_rows(store) <= 1_000
    kept = await used_keys(store)
    assert {cache_key(name, f"new {i}") for i in range(500)} <= kept
    assert {cache_key(name, f"old {i}") for i in range(100)} <= kept
    assert len(kept) == 950
    assert len(spy.embedded) == 500


async def test_an_unbounded_cache_marks_nothing(store: MetadataStore) -> None:
    await CachingEmbedder(Spy(), store).embed(["a"])
    before = await store.fetchone("SELECT used_at FROM embedding_cache")
    await CachingEmbedder(Spy(), store).embed(["a"])
    after = await store.fetchone("SELECT used_at FROM embedding_cache")
    assert before is not None and after is not None and before[0] == after[0]


async def test_a_store_that_cannot_mark_use_still_answers(store: MetadataStore) -> None:
    await CachingEmbedder(Spy(), store).embed(["a"])

    async def broken(keys: Sequence[bytes]) -> None:
        raise StorageError("disk full")

    store.touch_embeddings = broken  # type: ignore[method-assign]
    out = await CachingEmbedder(Spy(), store, max_entries=1_000).embed(["a"])
    np.testing.assert_array_equal(out, await expected(["a"]))

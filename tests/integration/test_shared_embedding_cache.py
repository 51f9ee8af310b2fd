"""The embedding cache in Redis, shared by the namespace's workers (real Redis): what one worker
embedded, another finds, within one bound; a Redis that fails costs vectors nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest
from redis.asyncio import Redis

from learning_memory.shared.keys import Keys
from learning_memory.shared.settings import load_settings
from learning_memory.worker.embedding.cache import CachingEmbedder, cache_key
from learning_memory.worker.embedding.cache_store import EmbeddingStore, RedisVectors
from learning_memory.worker.embedding.hashing import HashingEmbedder
from learning_memory.worker.metadata import MetadataStore
from learning_memory.worker.services import WorkerServices
from tests.conftest import REDIS_URL
from tests.unit.test_embedding_cache import Spy, cached_rows, expected

pytestmark = pytest.mark.redis


@pytest.fixture
async def metadata(tmp_path: Path) -> AsyncIterator[MetadataStore]:
    opened = await MetadataStore.open(tmp_path / "metadata.sqlite3")
    yield opened
    await opened.close()


def _store(metadata: MetadataStore, redis: Redis, keys: Keys) -> EmbeddingStore:
    async def opened() -> MetadataStore:
        return metadata

    store = EmbeddingStore(opened)
    store.connect(redis, keys)
    return store


async def test_what_one_worker_embedded_another_does_not_embed_again(
    namespace: str, redis: Redis, metadata: MetadataStore, tmp_path: Path
) -> None:
    keys = Keys(namespace)
    other_client = Redis.from_url(REDIS_URL)  # as a second worker process has
    other_metadata = await MetadataStore.open(tmp_path / "other.sqlite3")
    try:
        first, second = Spy(), Spy()
        texts = [f"def handler_{i}(request): return {i}" for i in range(40)]
        await CachingEmbedder(first, _store(metadata, redis, keys), max_entries=1_000).embed(texts)
        out = await CachingEmbedder(second, _store(other_metadata, other_client, keys)).embed(
            [*texts[:10], "a new text"]
        )
        assert len(first.embedded) == 40 and second.embedded == ["a new text"]
        np.testing.assert_array_equal(out, await expected([*texts[:10], "a new text"]))
        # Nothing went to either worker's own SQLite.
        assert await cached_rows(metadata) == 0 and await cached_rows(other_metadata) == 0
        assert await redis.zcard(keys.embeddings_used) == 41
    finally:
        await other_client.aclose()
        await other_metadata.close()


async def test_the_shared_cache_keeps_the_most_recently_used_within_its_bound(
    namespace: str, redis: Redis, metadata: MetadataStore
) -> None:
    keys = Keys(namespace)
    name = HashingEmbedder(32).model_name
    store = _store(metadata, redis, keys)
    await CachingEmbedder(Spy(), store, max_entries=1_000).embed([f"old {i}" for i in range(600)])
    # Read back by a fresh process: the first 100 old texts become the most recently used.
    await CachingEmbedder(Spy(), store, max_entries=1_000).embed([f"old {i}" for i in range(100)])
    spy = Spy()
    writer = CachingEmbedder(spy, store, max_entries=1_000)
    for start in range(0, 500, 50):
        await writer.embed([f"new {i}" for i in range(start, start + 50)])
    kept = {bytes.fromhex(m.decode()) for m in await redis.zrange(keys.embeddings_used, 0, -1)}
    assert len(kept) == 950  # past 1,000 at 1,050: cut to 900, then the last batch
    assert {cache_key(name, f"new {i}") for i in range(500)} <= kept
    assert {cache_key(name, f"old {i}") for i in range(100)} <= kept
    # Each dropped vector left with its entry in the sorted set.
    stored = [key async for key in redis.scan_iter(match=f"{namespace}:embedding:*", count=1000)]
    assert len(stored) == 950 and len(spy.embedded) == 500


async def test_a_redis_that_fails_costs_the_vectors_nothing(namespace: str, metadata: MetadataStore) -> None:
    unreachable = Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.5)
    try:
        spy = Spy()
        out = await CachingEmbedder(spy, _store(metadata, unreachable, Keys(namespace))).embed(["a", "b"])
        np.testing.assert_array_equal(out, await expected(["a", "b"]))
        assert spy.embedded == ["a", "b"]
        with pytest.raises(Exception, match="Redis embedding cache"):
            await RedisVectors(unreachable, Keys(namespace)).get_embeddings("m", [b"k"])
    finally:
        await unreachable.aclose()


@pytest.mark.parametrize(
    ("overrides", "shared"),
    [
        ({}, False),
        ({"qdrant_url": ":memory:"}, True),
        ({"qdrant_url": ":memory:", "shared_state": "local"}, False),
        ({"shared_state": "redis"}, True),
    ],
)
async def test_workers_share_the_cache_when_their_vectors_are_shared_or_when_told(
    namespace: str, redis: Redis, tmp_path: Path, overrides: dict[str, str], shared: bool
) -> None:
    settings = load_settings(data_dir=tmp_path, embedding_model="hashing:32", **overrides)
    assert settings.shares_state is shared
    services = WorkerServices(settings)
    services.connect(redis, Keys(namespace))
    try:
        await (await services.embedder()).embed(["some text"])
        in_redis = await redis.zcard(Keys(namespace).embeddings_used)
        assert in_redis == (1 if shared else 0)
        assert await cached_rows(await services.metadata()) == (0 if shared else 1)
    finally:
        await services.close()

from __future__ import annotations

import numpy as np
import pytest

from learning_memory.shared.errors import EmbeddingError
from learning_memory.worker.embedding.base import Embedder
from learning_memory.worker.embedding.hashing import HashingEmbedder

TEXTS = [
    "How do I undo the last git commit?",
    "undo a git commit",
    "The weather in Paris is sunny today",
    "",
    "!!!",
    "calculateRetryDelay",
    "Привет, мир",
]


async def test_shape_dtype_and_name() -> None:
    embedder = HashingEmbedder(dimension=64)
    out = await embedder.embed(TEXTS)
    assert out.shape == (len(TEXTS), 64) and out.dtype == np.float32
    assert embedder.dimension == 64 and embedder.model_name == "hashing-64"
    assert (await embedder.embed([])).shape == (0, 64)


async def test_rows_are_normalised() -> None:
    out = await HashingEmbedder().embed(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)


async def test_deterministic_across_instances_and_batches() -> None:
    a = await HashingEmbedder(128).embed(TEXTS)
    b = await HashingEmbedder(128).embed(list(reversed(TEXTS)))
    np.testing.assert_array_equal(a, b[::-1])
    # Fixed vectors, not just self-consistent ones: str hashes are salted per process, ours are not.
    assert float(a[0] @ (await HashingEmbedder(128).embed([TEXTS[0]]))[0]) == pytest.approx(1.0)


async def test_large_batches_match_small_ones() -> None:
    embedder = HashingEmbedder(32)
    texts = [f"text number {i}" for i in range(200)]  # large enough to leave the event loop
    big = await embedder.embed(texts)
    np.testing.assert_array_equal(big[:3], await embedder.embed(texts[:3]))


async def test_related_texts_are_closer_than_unrelated() -> None:
    query, related, unrelated = await HashingEmbedder().embed(
        ["retry delay after a 429 response", "compute the delay before a retry", "render the sidebar menu"]
    )
    assert float(query @ related) > float(query @ unrelated) + 0.2


async def test_identifiers_share_words_with_prose() -> None:
    ident, prose, other = await HashingEmbedder().embed(
        ["calculateRetryDelay", "calculate retry delay", "parse_config_file"]
    )
    assert float(ident @ prose) > 0.5 > float(ident @ other)


async def test_distinct_texts_without_words_differ() -> None:
    empty, bang = await HashingEmbedder().embed(["", "!!!"])
    assert float(empty @ bang) < 0.99


def test_satisfies_the_protocol() -> None:
    embedder: Embedder = HashingEmbedder()
    assert embedder.dimension == 384


def test_rejects_tiny_dimension() -> None:
    with pytest.raises(EmbeddingError):
        HashingEmbedder(1)


def test_head_counts_words_as_tokens() -> None:
    embedder = HashingEmbedder()
    assert embedder.head("a b  c\nd", 2) == "a b"
    assert embedder.head("a b", 5) == "a b"

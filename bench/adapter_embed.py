"""The adapter's training pairs embedded by the worker's own model and runtime, cached on disk.

Embedding ~32,000 code units twice (as indexed, and without their docstrings) takes most of an
hour on 2 cores, so the vectors are kept in a ``.npz`` named after the pairs' texts and the model,
and each chunk is kept as it is done: an interrupted run goes on where it stopped.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from bench.adapter_pairs import Pair
from bench.common import progress

CHUNK = 1_000
SIDES = ("questions", "targets", "indexed")


def pairs_digest(pairs: list[Pair], model: str) -> str:
    digest = hashlib.sha256(model.encode())
    for pair in pairs:
        for text in (pair.question, pair.target, pair.indexed):
            digest.update(text.encode())
            digest.update(b"\0")
    return digest.hexdigest()[:16]


async def open_model(model: str, models_dir: Path) -> Any:
    from learning_memory.worker.embedding.onnx_embedder import OnnxEmbedder

    return await OnnxEmbedder.open(model, models_dir)


def _texts(pair: Pair) -> tuple[str, str, str]:
    return pair.question, pair.target, pair.indexed


def embed_pairs(embedder: Any, pairs: list[Pair], cache_dir: Path, model: str) -> dict[str, np.ndarray]:
    """Vectors of the questions, the docstring-less codes and the indexed codes of ``pairs``
    (rows L2-normalised, keyed by SIDES), from ``cache_dir`` when the same pairs were embedded by
    the same model before."""
    digest = pairs_digest(pairs, model)
    final = cache_dir / f"pairs-{digest}.npz"
    if final.is_file():
        data = np.load(final)
        return {side: data[side] for side in SIDES}
    chunks = cache_dir / f"chunks-{digest}"
    chunks.mkdir(parents=True, exist_ok=True)
    parts: dict[str, list[np.ndarray]] = {side: [] for side in SIDES}
    for start in range(0, len(pairs), CHUNK):
        path = chunks / f"{start:06d}.npz"
        if not path.is_file():
            part = pairs[start : start + CHUNK]
            vectors = {side: embedder.encode([_texts(p)[i] for p in part]) for i, side in enumerate(SIDES)}
            np.savez(
                path, questions=vectors["questions"], targets=vectors["targets"], indexed=vectors["indexed"]
            )
            progress(f"adapter: embedded {min(start + CHUNK, len(pairs))}/{len(pairs)} pairs")
        data = np.load(path)
        for side in SIDES:
            parts[side].append(data[side])
    out = {side: np.vstack(parts[side]).astype(np.float32) for side in SIDES}
    np.savez(final, questions=out["questions"], targets=out["targets"], indexed=out["indexed"])
    (cache_dir / f"pairs-{digest}.json").write_text(
        json.dumps({"model": model, "pairs": [asdict(pair) for pair in pairs]}, indent=0)
    )
    return out

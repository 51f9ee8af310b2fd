"""The embedder interface."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

Embeddings = npt.NDArray[np.float32]  # shape (len(texts), dimension), each row L2-normalised


class Embedder(Protocol):
    @property
    def model_name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        """Embed a batch, off the event loop; raises shared.errors.EmbeddingError on failure."""

    def head(self, text: str, max_tokens: int) -> str:
        """The start of ``text`` that fits in ``max_tokens`` of the model's tokens: the model's
        cost grows with length, so a caller can bound it before embedding."""

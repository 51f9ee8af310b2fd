"""A deterministic, dependency-free embedder (numpy only), for tests and benchmarks without torch.

Feature hashing: every word (lower-cased, identifiers also split into their parts, so
``calculateRetryDelay`` shares words with "calculate the retry delay") and every character
trigram of each word is hashed to a bucket and a sign; the counts are L2-normalised. Texts that
share words or word pieces land close together, unrelated texts near-orthogonal. It knows no
synonyms: it is a stand-in with the right shape, not a semantic model.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import re
from collections.abc import Sequence

import numpy as np

from learning_memory.shared.errors import EmbeddingError
from learning_memory.worker.embedding.base import Embeddings

# Letters and digits of any script; "_" separates, so snake_case splits into its words.
_WORD = re.compile(r"[^\W_]+")
# Splits "HTTPServerError2" into "HTTP", "Server", "Error", "2".
_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_WORD_WEIGHT = 1.0
_TRIGRAM_WEIGHT = 0.5
# Above this many texts, hashing (pure Python per token) moves off the event loop.
_INLINE_BATCH = 64


class HashingEmbedder:
    def __init__(self, dimension: int = 384) -> None:
        if dimension < 2:
            raise EmbeddingError(f"A hashing embedder needs at least 2 dimensions, got {dimension}")
        self._dimension = dimension

    @property
    def model_name(self) -> str:
        return f"hashing-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def head(self, text: str, max_tokens: int) -> str:
        """Words count as tokens here."""
        words = list(re.finditer(r"\S+", text))
        return text if len(words) <= max_tokens else text[: words[max_tokens - 1].end()]

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        if len(texts) > _INLINE_BATCH:
            return await asyncio.to_thread(self.embed_sync, texts)
        return self.embed_sync(texts)

    def embed_sync(self, texts: Sequence[str]) -> Embeddings:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in _features(text):
                bucket, sign = self._slot(feature)
                out[row, bucket] += sign * weight
            norm = float(np.linalg.norm(out[row]))
            if norm == 0.0:
                # Only when every feature cancelled out: any fixed unit vector keeps rows normalised.
                out[row, self._slot("\0empty")[0]] = 1.0
            else:
                out[row] /= norm
        return out

    def _slot(self, feature: str) -> tuple[int, float]:
        value = _hash64(feature)
        return (value >> 1) % self._dimension, 1.0 if value & 1 else -1.0


@functools.lru_cache(maxsize=1 << 16)
def _hash64(feature: str) -> int:
    # blake2b, not hash(): Python salts str hashes per process, and vectors must be stable.
    return int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")


def _words(text: str) -> list[str]:
    words: list[str] = []
    for token in _WORD.findall(text):
        words.append(token.lower())
        parts = _PART.findall(token)
        if len(parts) > 1:
            words.extend(part.lower() for part in parts)
    return words


def _features(text: str) -> list[tuple[str, float]]:
    words = _words(text)
    if not words:
        # Punctuation-only or empty text still needs a stable, distinct vector.
        return [("\0raw:" + text, _WORD_WEIGHT)]
    features: list[tuple[str, float]] = []
    for word in words:
        features.append(("w:" + word, _WORD_WEIGHT))
        padded = f"#{word}#"
        features.extend(("t:" + padded[i : i + 3], _TRIGRAM_WEIGHT) for i in range(len(padded) - 2))
    return features

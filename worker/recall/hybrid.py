"""Hybrid recall for one collection: the dense side and the BM25 side, fused and reordered.

Both sides look ``Fusion.depth`` deep. The keyword side knows nothing of the caller's filter:
what it finds beyond the dense side's list is read from the vector store (payload and vector),
filtered here, and given its cosine, so every candidate has both scores.

A record's relevance mixes the two on one absolute scale: its cosine, and its keyword
strength (its BM25 score over what a record holding every known word of the query would
score), ``dense_share`` of the first and the rest of the second. Absolute, not rank-based, so
that records of different collections compare (the prompt hook ranks three together) and a
collection's best answer to an unrelated query stays low. Then what a person would expect: a
record holding the names the query writes as code (``worker.recall.names``) comes first, a
stored question holds no answer (it ranks below a statement), a query naming a period prefers
records of it, and the caller's ``adjust`` weighs what only it knows (source, tier, feedback,
staleness, importance). ``fused`` is plain reciprocal rank fusion, kept as the baseline.

Each record also gets a bearing, the same relevance with each of the query's words counted once:
what a gate deciding whether to speak at all reads (``worker.jobs.context``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from learning_memory.worker.metadata.store import MetadataStore
from learning_memory.worker.recall import keywords, names
from learning_memory.worker.recall.texts import keyword_text
from learning_memory.worker.recall.timeframe import EVENT_POINT_WEIGHT, Period
from learning_memory.worker.vectors.base import (
    Filter,
    MatchAny,
    MatchValue,
    Range,
    Vector,
    VectorStore,
)

Mode = Literal["dense", "keyword", "fused", "hybrid"]
MODES: tuple[Mode, ...] = ("dense", "keyword", "fused", "hybrid")


@dataclass(frozen=True)
class Fusion:
    """How the two rankings are fused and reordered. Measured in docs/recall.md."""

    depth: int = 50  # taken from each side, deeper than any answer
    dense_share: float = 0.5  # of the relevance; the keyword strength has the rest
    question: float = 0.8  # a stored question's weight: it asks, it does not tell
    rrf_k: int = 60  # plain fusion's: a rank weighs 1 / (rrf_k + rank)
    name: float = 0.25  # a record holding every name the query writes as code weighs 1 + this


FUSION = Fusion()


@dataclass
class Candidate:
    id: str
    payload: dict[str, Any]
    cosine: float
    dense_rank: int | None = None  # 1-based; None: the dense side did not list it
    lexical_rank: int | None = None
    lexical: float = 0.0  # keyword strength in [0, 1]
    held: float = 0.0  # the share of the query's word weight the record holds, each word once
    named: float = 0.0  # the share of the names the query writes as code that the record holds
    score: float = 0.0  # what the list is ordered by, in [0, 1] once ranked
    # The share of ``score`` that stands with the keyword strength no more than ``held``.
    unrepeated: float = 1.0

    @property
    def bearing(self) -> float:
        """How far the query bears on the record, for a gate: its relevance with each of the
        query's words counted once. A record repeating a word of the query is more about that
        word, which orders records, but it holds no more of the query. A share of ``score``, so
        whatever later scales the score (feedback, neighbours) scales it too."""
        return self.score * self.unrepeated


def cosine(row: Vector, query: Vector) -> float:
    """The cosine of a stored vector the dense side did not score, as the dense side would."""
    a, b = np.asarray(row, dtype=np.float32), np.asarray(query, dtype=np.float32)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) or 1.0))


def matches(where: Filter | None, payload: dict[str, Any]) -> bool:
    """Whether a payload passes a filter as the vector store would apply it."""
    for condition in where.must if where is not None else ():
        value = payload.get(condition.key)
        values = value if isinstance(value, list) else [value]
        if isinstance(condition, MatchValue):
            if condition.value not in values:
                return False
        elif isinstance(condition, MatchAny):
            if not set(condition.values) & set(values):
                return False
        elif isinstance(condition, Range):
            if not isinstance(value, int | float) or isinstance(value, bool):
                return False
            bounds = (condition.gte, condition.gt, condition.lte, condition.lt)
            gte, gt, lte, lt = bounds
            if (gte is not None and value < gte) or (gt is not None and value <= gt):
                return False
            if (lte is not None and value > lte) or (lt is not None and value >= lt):
                return False
    return True


async def candidates(
    store: VectorStore,
    metadata: MetadataStore,
    collection: str,
    query: str,
    vector: Vector,
    *,
    where: Filter | None = None,
    mode: Mode = "hybrid",
    fusion: Fusion = FUSION,
) -> list[Candidate]:
    """Every record either side finds for ``query`` that passes ``where``, with both scores."""
    found: dict[str, Candidate] = {}
    if mode != "keyword":
        dense = await store.search(collection, vector, limit=fusion.depth, filter=where)
        for rank, hit in enumerate(dense, start=1):
            found[hit.id] = Candidate(hit.id, hit.payload, float(hit.score), dense_rank=rank)
    if mode != "dense":
        synced = getattr(store, "synced", None)  # a KeywordMirror catches up first
        if synced is not None:
            await synced(collection)
        lexical = await keywords.search(metadata, collection, keywords.terms(query), fusion.depth)
        missing = [point for point, _ in lexical.hits if point not in found]
        for record in await store.get(collection, missing, with_vectors=True) if missing else []:
            if record.vector is not None and matches(where, record.payload):
                found[record.id] = Candidate(record.id, record.payload, cosine(record.vector, vector))
        rank = 0
        for point, score in lexical.hits:
            if point in found:  # a point the filter leaves out, or gone from the store, takes no rank
                rank += 1
                matched = found[point]
                matched.lexical_rank, matched.lexical = rank, lexical.strength(score)
                matched.held = lexical.share_held(point)
    wanted = names.names_in(query) if mode == "hybrid" else []  # only the hybrid order weighs them
    if wanted:
        for candidate in found.values():
            candidate.named = names.held(wanted, keyword_text(collection, candidate.payload))
    return list(found.values())


def _asks(payload: dict[str, Any]) -> bool:
    text = payload.get("content") or payload.get("text") or payload.get("goal")
    return isinstance(text, str) and text.rstrip().endswith("?")


def _single(candidate: Candidate, mode: Mode, fusion: Fusion) -> float:
    """A record's score in one of the baseline modes."""
    if mode == "dense":
        return max(candidate.cosine, 0.0) if candidate.dense_rank is not None else 0.0
    if mode == "keyword":
        return candidate.lexical if candidate.lexical_rank is not None else 0.0
    return sum(
        1.0 / (fusion.rrf_k + place)
        for place in (candidate.dense_rank, candidate.lexical_rank)
        if place is not None
    ) / (2.0 / (fusion.rrf_k + 1))


def _hybrid(
    candidate: Candidate,
    fusion: Fusion,
    period: Period | None,
    adjust: Callable[[dict[str, Any]], float] | None,
) -> tuple[float, float]:
    """A record's relevance, and the share of it that stands with each word counted once."""
    dense = fusion.dense_share * max(candidate.cosine, 0.0)
    relevance = dense + (1.0 - fusion.dense_share) * candidate.lexical
    unrepeated = dense + (1.0 - fusion.dense_share) * min(candidate.lexical, candidate.held)
    share = unrepeated / relevance if relevance > 0 else 1.0
    weight = 1.0 + fusion.name * candidate.named
    if _asks(candidate.payload):
        weight *= fusion.question
    if period is not None and period.holds(candidate.payload):
        weight *= period.weight
    if period is not None and candidate.id == period.event_point:
        weight *= EVENT_POINT_WEIGHT
    if adjust is not None:
        weight *= adjust(candidate.payload)
    return relevance * weight, share


def rank(
    found: Sequence[Candidate],
    *,
    mode: Mode = "hybrid",
    fusion: Fusion = FUSION,
    period: Period | None = None,
    adjust: Callable[[dict[str, Any]], float] | None = None,
) -> list[Candidate]:
    """``found`` ordered best first, each with its relevance in [0, 1]."""
    ranked: list[Candidate] = []
    for candidate in found:
        score, share = (
            _hybrid(candidate, fusion, period, adjust)
            if mode == "hybrid"
            else (_single(candidate, mode, fusion), 1.0)
        )
        ranked.append(replace(candidate, score=score, unrepeated=share))
    ranked.sort(key=lambda c: (c.score, c.cosine), reverse=True)
    for candidate in ranked:  # boosts order the list; the relevance told stays in [0, 1]
        candidate.score = min(max(candidate.score, 0.0), 1.0)
    return ranked

"""Hybrid candidates: the dense search and the BM25 search over the same filters, fused.

The two rankings are fused by reciprocal rank fusion (RRF): a unit's fused score is the sum, over
the lists it appears in, of ``weight / (k + rank)``. RRF needs no calibration between cosine
scores and BM25 scores, which live on unrelated scales. A unit's relevance is that sum divided by
its maximum (first in every list asked), so 1.0 means "top of both".

The dense side runs when code vectors are on and some exist (a project is searchable from its
keyword rows before its vectors are filled in); the BM25 side always runs. Payloads come from
the unit store's rows, not the vector store, whose decoding costs more than its search.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from learning_memory.shared.contracts.code import COLLECTION, CodeHit
from learning_memory.worker.code.index import unit_store
from learning_memory.worker.code.index.units import UnitPayload, collection_spec
from learning_memory.worker.code.search import bm25
from learning_memory.worker.code.search.candidate import Candidate
from learning_memory.worker.code.search.query import Query, query_text, without_project_name
from learning_memory.worker.metadata.store import MetadataStore
from learning_memory.worker.services import WorkerServices
from learning_memory.worker.vectors.base import Condition, Filter, MatchValue, Record, VectorStore


@dataclass(frozen=True)
class Fusion:
    """How the two rankings are fused. Measured in docs/ranking.md."""

    # A rank in one list weighs weight / (rrf_k + rank). A large K flattens the lists' heads, so
    # agreement between the two sides counts for more than either side's first place.
    rrf_k: int = 100
    # BM25 weighs a little more than the dense side: the words a developer types are often the
    # code's own words.
    lexical_weight: float = 1.25
    # Taken from each list before fusing, deeper than any answer: the reranking lifts units that
    # neither ranking put near the top (a file the question names, a class it spells in words).
    candidates: int = 80


FUSION = Fusion()


@dataclass(frozen=True)
class Scope:
    """Where a search looks: one project (all when None), one language (all when None)."""

    project: str | None = None
    language: str | None = None

    def filter(self) -> Filter:
        conditions: list[Condition] = []
        if self.project is not None:
            conditions.append(MatchValue("project", self.project))
        if self.language is not None:
            conditions.append(MatchValue("language", self.language))
        return Filter(tuple(conditions))


@dataclass(frozen=True)
class HybridCandidates:
    """Both rankings of one query, fused; :meth:`load` their payloads, :meth:`hits` the answer."""

    fused: dict[str, float]  # RRF score per point id, dense side's first
    dense: dict[str, float]  # cosine similarity of each unit the dense side found
    best: float  # the fused score of a unit first in every ranking asked
    query_vector: np.ndarray | None
    metadata: MetadataStore
    store: VectorStore

    def top(self, depth: int) -> list[str]:
        """The ``depth`` best point ids by fused score."""
        return sorted(self.fused, key=lambda pid: self.fused[pid], reverse=True)[:depth]

    async def load(
        self, point_ids: Sequence[str], *, with_file_sizes: bool = False
    ) -> tuple[list[Candidate], dict[tuple[str, str], int]]:
        """The candidates of ``point_ids`` (in that order, relevance = fused / best) and, with
        ``with_file_sizes``, the units of each of their files. A row whose unit has no payload
        anywhere (its point gone in a crashed delete) is skipped."""
        found, sizes = await payloads(self.metadata, self.store, point_ids, with_file_sizes=with_file_sizes)
        candidates = [
            Candidate(pid, self.fused.get(pid, 0.0) / self.best, found[pid])
            for pid in point_ids
            if pid in found
        ]
        return candidates, sizes

    async def hits(self, answered: Sequence[Candidate]) -> list[CodeHit]:
        """The answer: each unit's hit with its cosine similarity to the query (None without a
        dense side), from the dense search or, for the units only BM25 found, their vectors."""
        unmeasured = [c.point_id for c in answered if c.point_id not in self.dense]
        vectors = {}
        if self.query_vector is not None and unmeasured:
            vectors = {record.id: record.vector for record in await _records(self.store, unmeasured, True)}
        return [
            c.hit(
                self.dense[c.point_id]
                if c.point_id in self.dense
                else _cosine(self.query_vector, vectors.get(c.point_id))
            )
            for c in answered
        ]


async def hybrid_candidates(
    services: WorkerServices,
    query: Query,
    scope: Scope,
    *,
    depth: int,
    dense: bool = True,
    fusion: Fusion = FUSION,
) -> HybridCandidates:
    """Both rankings of ``query``, ``depth`` deep, fused. ``dense=False`` asks BM25 alone."""
    await services.current_code_index(scope.project)
    store = await services.vectors()
    # No collection yet: nothing has a vector (the keywords may already answer, see the indexer).
    dense_side = dense and services.settings.code_vectors and await store.collection_exists(COLLECTION)
    metadata = await services.metadata()
    # The BM25 query runs on the SQLite thread while the model embeds the query on its own.
    keywords = asyncio.ensure_future(
        bm25.search(metadata, query.terms, limit=depth, project=scope.project, language=scope.language)
    )
    try:
        similarity: dict[str, float] = {}
        query_vector: np.ndarray | None = None
        if dense_side:
            query_vector, store = await _embed_query(services, query, scope)
            found = await store.search(
                COLLECTION, query_vector, limit=depth, filter=scope.filter(), with_payload=False
            )
            similarity = {hit.id: hit.score for hit in found}
        words = await keywords
    finally:
        if not keywords.done():
            keywords.cancel()
    fused = _fuse([(list(similarity), 1.0), (words, fusion.lexical_weight)], fusion.rrf_k)
    best = ((1.0 if dense else 0.0) + fusion.lexical_weight) / (fusion.rrf_k + 1)
    return HybridCandidates(fused, similarity, best, query_vector, metadata, store)


async def _embed_query(
    services: WorkerServices, query: Query, scope: Scope
) -> tuple[np.ndarray, VectorStore]:
    embedder = await services.embedder()
    vector = (await embedder.embed([query_text(without_project_name(query.text, scope.project))]))[0]
    # Checks the dimension against the model's, with the message that says how to re-index.
    store = await services.collection(collection_spec(embedder.dimension))
    return vector, store


def _fuse(rankings: list[tuple[list[str], float]], k: int) -> dict[str, float]:
    fused: dict[str, float] = {}
    for ranking, weight in rankings:
        for rank, pid in enumerate(ranking, start=1):
            fused[pid] = fused.get(pid, 0.0) + weight / (k + rank)
    return fused


async def payloads(
    metadata: MetadataStore, store: VectorStore, ids: Sequence[str], *, with_file_sizes: bool = False
) -> tuple[dict[str, UnitPayload], dict[tuple[str, str], int]]:
    """The payloads of ``ids`` from their keyword rows (rows written before payloads were kept
    there: from the points) and, ``with_file_sizes``, the units of each of their files."""
    found, sizes = await unit_store.payloads(metadata, ids, with_file_sizes=with_file_sizes)
    older = [pid for pid in ids if pid not in found]
    if older and await store.collection_exists(COLLECTION):
        from_points = {
            record.id: UnitPayload.model_validate(record.payload)
            for record in await _records(store, older, False)
        }
        found |= from_points
        if with_file_sizes:
            sizes |= await unit_store.file_sizes(metadata, (unit.file for unit in from_points.values()))
    return found, sizes


async def _records(store: VectorStore, ids: list[str], with_vectors: bool) -> list[Record]:
    return await store.get(COLLECTION, ids, with_vectors=with_vectors) if ids else []


def _cosine(query: np.ndarray | None, vector: list[float] | None) -> float | None:
    if query is None or vector is None:
        return None
    other = np.asarray(vector, dtype=np.float32)
    norms = float(np.linalg.norm(query) * np.linalg.norm(other))
    return float(np.dot(query, other) / norms) if norms else 0.0

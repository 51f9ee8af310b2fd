"""search_code and find_similar_code: dense vectors, BM25, or both fused.

``hybrid`` (search_code) runs the dense search and the BM25 search over the same filters and
fuses the two rankings by reciprocal rank fusion (RRF): a unit's fused score is the sum over the
lists it appears in of ``weight / (RRF_K + rank)``. RRF needs no calibration between cosine scores
and BM25 scores, which live on unrelated scales. The reported ``score`` is that sum divided by
its maximum (first in both lists), so 1.0 means "top of both"; ``similarity`` is the plain
cosine similarity to the query, for judging how close the best match really is. The fused
candidates are then reordered knowing what code is (``worker.code.rerank``: the definition of a
named symbol first, tests and examples only when asked for); ``score`` is that relevance, capped
at 1.0. ``fused`` is the same without the reordering, for the benchmarks.

``semantic`` (find_similar_code) is the dense search alone: a snippet is compared by meaning.
``lexical`` is BM25 alone, and needs no model; the benchmark uses it to show what each side buys.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from learning_memory.shared.contracts.code import COLLECTION, CodeHit, SearchCodeRequest
from learning_memory.worker.code import lexical
from learning_memory.worker.code.rerank import read_query, rerank, without_project_name
from learning_memory.worker.code.units import code_hit, collection_spec, file_of, query_text
from learning_memory.worker.metadata.store import MetadataStore
from learning_memory.worker.services import WorkerServices
from learning_memory.worker.vectors.base import (
    Condition,
    Filter,
    MatchValue,
    Record,
    VectorStore,
)

# Measured with search_code's reordering (worker.code.rerank) on both our labelled questions
# (bench/code_quality.py, where BM25 alone beats the dense vectors alone) and the public benchmark
# of bench/semble.py (where the dense side alone beats the fusion): K 100-120 with BM25 weighted
# 1.25-1.5, and K 80 with 1.25, beat the former 60 and 2.0 on both; 100 and 1.25 sit inside that
# region.
RRF_K = 100
LEXICAL_WEIGHT = 1.25
# Taken from each list before fusing, deeper than any limit: the reordering lifts units that
# neither ranking put near the top (a file named by the question, a class spelled in words), and
# 50 cut some of them off; 65 to 120 scored alike on both quality sets.
CANDIDATES = 80
NAMED_CANDIDATES = 20  # units defining a queried name, added to the candidates
# A pasted snippet is compared by its first 128 tokens (~500 characters of code): the model's
# cost grows with length, and the head of a unit (its signature and first lines) says what it is.
# bench/code_quality.py measures what the cut costs: a unit pasted whole comes out first 96% of
# the time, cut at ~500 characters 93%, at 250 84%.
MAX_SNIPPET_EMBED_TOKENS = 128


async def search_units(services: WorkerServices, request: SearchCodeRequest) -> list[CodeHit]:
    await services.current_code_index(request.project)
    store = await services.vectors()
    # No collection yet: nothing has a vector (the keywords may already answer, see the indexer).
    dense_side = (
        request.mode != "lexical"
        and services.settings.code_vectors
        and await store.collection_exists(COLLECTION)
    )
    if request.mode == "semantic" and not dense_side:
        return []
    # Fusion wants deeper lists than the answer; the dense search alone needs only the answer.
    candidates = request.limit if request.mode == "semantic" else max(CANDIDATES, request.limit)
    metadata = await services.metadata()
    # The BM25 query runs on the SQLite thread while the model embeds the query on its own.
    keywords = None
    if request.mode != "semantic":
        keywords = asyncio.ensure_future(
            lexical.search(
                metadata, request.query, limit=candidates, project=request.project, language=request.language
            )
        )
    try:
        dense: dict[str, float] = {}
        query_vector: np.ndarray | None = None
        if dense_side:
            query_vector, store = await _embed_query(services, request)
            # Payloads come from the keyword rows below: decoding them from the store costs more
            # than the nearest-neighbour scan itself.
            hits = await store.search(
                COLLECTION, query_vector, limit=candidates, filter=_filter(request), with_payload=False
            )
            dense = {hit.id: hit.score for hit in hits}
        words = await keywords if keywords is not None else []
    finally:
        if keywords is not None and not keywords.done():
            keywords.cancel()
    if request.mode == "semantic":
        ranked = sorted(dense.items(), key=lambda item: item[1], reverse=True)[: request.limit]
        payloads, _ = await _payloads(metadata, store, [pid for pid, _ in ranked])
        return [
            code_hit(pid, payloads[pid], score, similarity=score) for pid, score in ranked if pid in payloads
        ]

    fused = _fuse([(list(dense), 1.0), (words, LEXICAL_WEIGHT)])
    best = (LEXICAL_WEIGHT if request.mode == "lexical" else 1.0 + LEXICAL_WEIGHT) / (RRF_K + 1)
    # search_code reorders the fused candidates knowing what code is (see rerank); the other
    # modes stay plain rankings, the baselines the benchmarks compare against.
    depth = CANDIDATES if request.mode == "hybrid" else request.limit
    candidates_ids = sorted(fused, key=lambda pid: fused[pid], reverse=True)[:depth]
    query = read_query(request.query)
    symbol = query.symbol if request.mode == "hybrid" else None
    named: list[str] = []
    modules: list[str] = []
    if symbol is not None:
        # The units that define the name join the candidates even when the word is too common in
        # the project for either ranking to reach them (Headers in an HTTP client).
        named = await lexical.definitions(
            metadata,
            symbol,
            limit=NAMED_CANDIDATES,
            project=request.project,
            language=request.language,
        )
        found = await lexical.defining_modules(
            metadata, symbol, limit=NAMED_CANDIDATES, project=request.project, language=request.language
        )
        # A value bound at a module's top level (flask's g) is defined there, in the module unit.
        # Defined nowhere in the project, a name may still be offered by it: a module re-exporting
        # it (axum's extract/mod.rs: pub use axum_core::extract::FromRequest) answers.
        modules = found.binding or ([] if named else found.reexporting)
        candidates_ids += [pid for pid in [*named, *modules] if pid not in candidates_ids]
    elif request.mode == "hybrid" and query.phrases:
        # A type a question spells in words (JSON object: JsonObject) joins the candidates too.
        spelled = await lexical.named(
            metadata,
            query.phrases,
            limit=NAMED_CANDIDATES,
            project=request.project,
            language=request.language,
        )
        candidates_ids += [pid for pid in spelled if pid not in candidates_ids]
    # The candidates' payloads, from their rows (a unit the keywords alone found may have no point
    # yet), and for the reordering how many units their files hold; vectors later, for the few
    # answered.
    payloads, sizes = await _payloads(
        metadata, store, candidates_ids, with_file_sizes=request.mode == "hybrid"
    )
    # A lexical row whose point is gone (a crashed delete) is skipped.
    scored = [(pid, fused.get(pid, 0.0) / best) for pid in candidates_ids if pid in payloads]
    if request.mode == "hybrid":
        scored = rerank(
            request.query,
            [(pid, score, payloads[pid]) for pid, score in scored],
            file_sizes=sizes,
            defined=symbol is None or bool(named or modules),
            defining_modules=frozenset(modules),
        )
    answered = scored[: request.limit]
    unmeasured = [pid for pid, _ in answered if pid not in dense]
    vectors = {}
    if query_vector is not None and unmeasured:
        vectors = {record.id: record.vector for record in await _records(store, unmeasured, True)}
    return [
        code_hit(
            pid,
            payloads[pid],
            min(1.0, score),
            similarity=dense[pid] if pid in dense else _cosine(query_vector, vectors.get(pid)),
        )
        for pid, score in answered
    ]


async def _embed_query(
    services: WorkerServices, request: SearchCodeRequest
) -> tuple[np.ndarray, VectorStore]:
    embedder = await services.embedder()
    if request.mode == "semantic":
        text = embedder.head(query_text(request.query), MAX_SNIPPET_EMBED_TOKENS)
    else:
        text = query_text(without_project_name(request.query, request.project))
    vector = (await embedder.embed([text]))[0]
    # Checks the dimension against the model's, with the message that says how to re-index.
    store = await services.collection(collection_spec(embedder.dimension))
    return vector, store


def _filter(request: SearchCodeRequest) -> Filter:
    conditions: list[Condition] = []
    if request.project is not None:
        conditions.append(MatchValue("project", request.project))
    if request.language is not None:
        conditions.append(MatchValue("language", request.language))
    return Filter(tuple(conditions))


def _fuse(rankings: list[tuple[list[str], float]]) -> dict[str, float]:
    fused: dict[str, float] = {}
    for ranking, weight in rankings:
        for rank, pid in enumerate(ranking, start=1):
            fused[pid] = fused.get(pid, 0.0) + weight / (RRF_K + rank)
    return fused


async def _payloads(
    metadata: MetadataStore, store: VectorStore, ids: list[str], *, with_file_sizes: bool = False
) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], int]]:
    """The payloads of ``ids`` from their keyword rows (rows written before payloads were kept
    there: from the points) and, ``with_file_sizes``, the units of each of their files."""
    payloads, sizes = await lexical.payloads(metadata, ids, with_file_sizes=with_file_sizes)
    older = [pid for pid in ids if pid not in payloads]
    if older and await store.collection_exists(COLLECTION):
        from_points = {record.id: record.payload for record in await _records(store, older, False)}
        payloads |= from_points
        if with_file_sizes:
            sizes |= await lexical.file_sizes(metadata, map(file_of, from_points.values()))
    return payloads, sizes


async def _records(store: VectorStore, ids: list[str], with_vectors: bool) -> list[Record]:
    return await store.get(COLLECTION, ids, with_vectors=with_vectors) if ids else []


def _cosine(query: np.ndarray | None, vector: list[float] | None) -> float | None:
    if query is None or vector is None:
        return None
    other = np.asarray(vector, dtype=np.float32)
    norms = float(np.linalg.norm(query) * np.linalg.norm(other))
    return float(np.dot(query, other) / norms) if norms else 0.0

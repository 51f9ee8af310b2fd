"""Memory jobs: embed and store, semantic retrieve, filtered list, delete.

The vector store holds the whole memory (vector and payload): one write per store,
so there is nothing to keep consistent across two stores.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from learning_memory.shared.anchored_items import drop_items, put_item
from learning_memory.shared.context_lines import one_line
from learning_memory.shared.contracts.context import item_id
from learning_memory.shared.contracts.memory import (
    COLLECTION,
    DELETE_MEMORY,
    LIST_MEMORIES,
    RETRIEVE_MEMORIES,
    STORE_MEMORY,
    DeleteMemoryRequest,
    DeleteMemoryResponse,
    ListMemoriesRequest,
    ListMemoriesResponse,
    MemoryRecord,
    RetrieveMemoriesRequest,
    RetrieveMemoriesResponse,
    ScoredMemory,
    StoreMemoryRequest,
)
from learning_memory.shared.fix_index import fix_index_path
from learning_memory.worker.capture.text_anchors import anchors_in_text
from learning_memory.worker.recall.search import collapse, query_vector, recall, standing
from learning_memory.worker.registry import job
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import (
    CollectionSpec,
    Condition,
    Filter,
    MatchAny,
    MatchValue,
    PayloadIndexType,
    PointData,
    Range,
    Record,
    VectorStore,
)

# created_ts orders list_memories; the others are what filters use (the anchors' files and
# project: the staleness check finds the memories a session's edits may have outdated).
INDEXES: dict[str, PayloadIndexType] = {
    "category": "keyword",
    "tags": "keyword",
    "importance": "float",
    "created_ts": "float",
    "project": "keyword",
    "anchor_files": "keyword",
    "thread": "keyword",
    "seq": "integer",
}
ANCHORED_TEXT_CHARS = 160  # of a memory, in what a file read shows
# How far importance moves a memory's rank: 0.5 (the default) leaves it, 1.0 adds half of this.
IMPORTANCE_SHARE = 0.3


async def _store(run: JobRun) -> VectorStore:
    """The store with the memories collection, created for the model's dimension if new."""
    embedder = await run.services.embedder()
    return await run.services.collection(CollectionSpec(COLLECTION, embedder.dimension, INDEXES))


async def _existing_store(run: JobRun) -> VectorStore | None:
    """The store if the collection exists: listing and deleting need no model, so no waiting for it."""
    store = await run.services.vectors()
    return store if await store.collection_exists(COLLECTION) else None


def _payload(memory: MemoryRecord, thread: str | None = None, seq: int | None = None) -> dict[str, Any]:
    payload = memory.model_dump(mode="json", exclude={"id"})
    payload["created_ts"] = memory.created_at.timestamp()
    payload["anchor_files"] = sorted({anchor.file for anchor in memory.anchors})
    if thread is not None and seq is not None:
        payload["thread"], payload["seq"] = thread, seq
    return payload


def _record(point_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    # Only the record's own fields: created_ts, or anything a later version stores, stays behind.
    fields = {key: value for key, value in payload.items() if key in MemoryRecord.model_fields}
    return {**fields, "id": point_id}


async def _anchored(run: JobRun, request: StoreMemoryRequest) -> MemoryRecord:
    """The memory with the anchors its text names in the checkout it was stored from (a retried
    job finds the same ones), and the fix index told, so that reading those files brings it."""
    memory = request.memory
    if request.worktree is None or memory.project is None or memory.anchors:
        return memory
    anchors = await asyncio.to_thread(anchors_in_text, memory.content, Path(request.worktree))
    if not anchors:
        return memory
    text = one_line(memory.content, ANCHORED_TEXT_CHARS)
    index = fix_index_path(run.services.settings.data_dir)
    item = item_id("memory", memory.id)
    await asyncio.to_thread(put_item, index, memory.project, item, anchors, text, memory.created_at)
    return memory.model_copy(update={"anchors": anchors})


@job(STORE_MEMORY)
async def store_memory(run: JobRun, request: StoreMemoryRequest) -> MemoryRecord:
    memory = await _anchored(run, request)
    vector = (await (await run.services.embedder()).embed([memory.content]))[0]
    store = await _store(run)
    # The id came with the request, so a retried job replaces the point it already wrote.
    payload = _payload(memory, request.thread, request.seq)
    await store.upsert(COLLECTION, [PointData(memory.id, vector, payload)])
    return memory


def _weight(payload: dict[str, Any]) -> float:
    """An important memory ranks above an ordinary one that bears on the query as much; one whose
    code changed since, below."""
    importance = payload.get("importance")
    return (
        1.0 + IMPORTANCE_SHARE * ((importance if isinstance(importance, int | float) else 0.5) - 0.5)
    ) * standing(payload)


def _content(payload: dict[str, Any]) -> str:
    return str(payload.get("content", ""))


@job(RETRIEVE_MEMORIES)
async def retrieve_memories(run: JobRun, request: RetrieveMemoriesRequest) -> RetrieveMemoriesResponse:
    vector = await query_vector(run, request.query)
    await _store(run)
    conditions: list[Condition] = []
    if request.category is not None:
        conditions.append(MatchValue("category", request.category))
    if request.min_importance > 0:
        conditions.append(Range("importance", gte=request.min_importance))
    where = Filter(tuple(conditions))
    ranked = await recall(run, COLLECTION, request.query, vector, where=where, adjust=_weight)
    # The score is the hybrid relevance (1.0: first by meaning and by words), not a cosine.
    results = [
        ScoredMemory(**_record(hit.id, hit.payload), score=hit.score)
        for hit in collapse(ranked, _content, request.limit)
    ]
    return RetrieveMemoriesResponse(results=results)


@job(LIST_MEMORIES)
async def list_memories(run: JobRun, request: ListMemoriesRequest) -> ListMemoriesResponse:
    store = await _existing_store(run)
    if store is None:
        return ListMemoriesResponse(results=[], total=0)
    conditions: list[Condition] = []
    if request.category is not None:
        conditions.append(MatchValue("category", request.category))
    if request.tags:
        conditions.append(MatchAny("tags", tuple(request.tags)))
    where = Filter(tuple(conditions))
    page: list[Record] = await store.scroll(
        COLLECTION, limit=request.limit, offset=request.offset, filter=where, order_by="created_ts"
    )
    total = await store.count(COLLECTION, where)
    return ListMemoriesResponse(
        results=[MemoryRecord(**_record(point.id, point.payload)) for point in page], total=total
    )


@job(DELETE_MEMORY)
async def delete_memory(run: JobRun, request: DeleteMemoryRequest) -> DeleteMemoryResponse:
    store = await _existing_store(run)
    if store is None:
        return DeleteMemoryResponse(deleted=False)
    found = await store.get(COLLECTION, [request.id])
    if found:
        await store.delete(COLLECTION, [request.id])
        index = fix_index_path(run.services.settings.data_dir)
        await asyncio.to_thread(drop_items, index, [item_id("memory", request.id)])
    return DeleteMemoryResponse(deleted=bool(found))

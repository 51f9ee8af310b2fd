"""Memories: semantic store, retrieve, list and delete of facts and preferences.

The server validates and normalises input (clamps, truncation); these contracts carry
what is already valid. The memory id and creation time are chosen by the server, so a
retried store job writes the very same point.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, get_args

from pydantic import Field

from learning_memory.shared.contracts.experiences import Anchor, Stale
from learning_memory.shared.jobs import Contract, JobSpec
from learning_memory.shared.keys import Queue

Category = Literal["preference", "fact", "event", "workflow", "context"]
CATEGORIES: tuple[str, ...] = get_args(Category)
MAX_CONTENT_CHARS = 10_000
COLLECTION = "memories"


class MemoryRecord(Contract):
    id: str
    content: str
    category: Category
    importance: float = Field(ge=0.0, le=1.0)
    tags: list[str]
    created_at: datetime
    # The repository's files (and their functions) the memory names, when it was stored in one
    # (worker.capture.text_anchors); with defaults, so memories stored before still read.
    anchors: list[Anchor] = Field(default_factory=list)
    # That repository's identity (the same in every clone and worktree), and what became of the
    # anchored code since; both left out of an answer while unknown.
    project: str | None = Field(default=None, exclude_if=lambda value: value is None)
    stale: Stale | None = Field(default=None, exclude_if=lambda value: value is None)


class ScoredMemory(MemoryRecord):
    score: float = Field(ge=0.0, le=1.0)


class StoreMemoryRequest(Contract):
    memory: MemoryRecord
    # The checkout the memory was stored from: the files it names are looked for there.
    worktree: str | None = None
    # The session that stored it and its place among that session's memories: recall reads a
    # memory beside the ones stored next to it (worker.recall.threads).
    thread: str | None = None
    seq: int | None = Field(default=None, ge=0)


class RetrieveMemoriesRequest(Contract):
    query: str = Field(min_length=1)
    limit: int = Field(ge=1, le=100)
    category: Category | None = None
    min_importance: float = Field(default=0.0, ge=0.0, le=1.0)


class RetrieveMemoriesResponse(Contract):
    results: list[ScoredMemory]


class ListMemoriesRequest(Contract):
    category: Category | None = None
    tags: list[str] = Field(default_factory=list)
    limit: int = Field(ge=1, le=200)
    offset: int = Field(ge=0)


class ListMemoriesResponse(Contract):
    results: list[MemoryRecord]
    total: int


class DeleteMemoryRequest(Contract):
    id: str


class DeleteMemoryResponse(Contract):
    deleted: bool


# The first job after a worker starts may wait for the model to finish loading.
STORE_MEMORY: JobSpec[StoreMemoryRequest, MemoryRecord] = JobSpec(
    "store_memory", StoreMemoryRequest, MemoryRecord, Queue.INTERACTIVE, timeout_s=120
)
RETRIEVE_MEMORIES: JobSpec[RetrieveMemoriesRequest, RetrieveMemoriesResponse] = JobSpec(
    "retrieve_memories", RetrieveMemoriesRequest, RetrieveMemoriesResponse, Queue.INTERACTIVE, timeout_s=120
)
LIST_MEMORIES: JobSpec[ListMemoriesRequest, ListMemoriesResponse] = JobSpec(
    "list_memories", ListMemoriesRequest, ListMemoriesResponse, Queue.INTERACTIVE, timeout_s=60
)
DELETE_MEMORY: JobSpec[DeleteMemoryRequest, DeleteMemoryResponse] = JobSpec(
    "delete_memory", DeleteMemoryRequest, DeleteMemoryResponse, Queue.INTERACTIVE, timeout_s=60
)

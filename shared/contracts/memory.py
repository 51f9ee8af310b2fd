"""Memories: semantic store, retrieve, list and delete of facts and preferences.

The server validates and normalises input (clamps, truncation); these contracts carry
what is already valid. The memory id and creation time are chosen by the server, so a
retried store job writes the very same point.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, get_args

from pydantic import Field

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


class ScoredMemory(MemoryRecord):
    score: float = Field(ge=0.0, le=1.0)


class StoreMemoryRequest(Contract):
    memory: MemoryRecord


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

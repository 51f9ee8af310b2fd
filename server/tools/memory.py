"""Memory tools: store_memory, retrieve_memories, list_memories, delete_memory.

A memory is worth keeping even when a detail is off, so these tools forgive what they can:
over-long content is truncated, and importance, limits and offsets are clamped, each with a logged
warning; only an invalid category (or a wrong type) is refused. Every call runs as a job on the
worker.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import uuid
import weakref
from datetime import UTC, datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from learning_memory.server.services import AppServices, app_services, await_job
from learning_memory.server.services.inputs import clamp, utf8_safe
from learning_memory.server.tool_answers import Results
from learning_memory.server.tool_registry import tool
from learning_memory.shared.contracts.memory import (
    CATEGORIES,
    DELETE_MEMORY,
    LIST_MEMORIES,
    MAX_CONTENT_CHARS,
    RETRIEVE_MEMORIES,
    STORE_MEMORY,
    Category,
    DeleteMemoryRequest,
    DeleteMemoryResponse,
    ListMemoriesRequest,
    MemoryRecord,
    RetrieveMemoriesRequest,
    RetrieveMemoriesResponse,
    StoreMemoryRequest,
)
from learning_memory.shared.errors import ValidationError
from learning_memory.shared.log import get_logger

log = get_logger(__name__)
MAX_TAGS = 20
MAX_TAG_CHARS = 100
# Engines take offsets as machine integers; no store holds anywhere near this many.
MAX_OFFSET = 2**31 - 1
# Each client session's thread of memories and the next place in it: recall reads a memory beside
# the ones the same session stored next to it (worker.recall.threads). Dropped with the session.
_threads: weakref.WeakKeyDictionary[object, tuple[str, itertools.count[int]]] = weakref.WeakKeyDictionary()
_CATEGORY_HELP = f"One of: {', '.join(CATEGORIES)}."
OptionalCategory = Annotated[Category | None, Field(description=f"Only this category. {_CATEGORY_HELP}")]


def _truncate(name: str, text: str, tool: str) -> str:
    text = utf8_safe(text)
    if len(text) <= MAX_CONTENT_CHARS:
        return text
    log.warning("tool.argument_truncated", tool=tool, argument=name, length=len(text), kept=MAX_CONTENT_CHARS)
    return text[:MAX_CONTENT_CHARS]


def _next_place(session: object) -> tuple[str, int]:
    thread = _threads.get(session)
    if thread is None:
        thread = _threads[session] = (uuid.uuid4().hex, itertools.count())
    return thread[0], next(thread[1])


def _tags(tags: list[str] | None, tool: str) -> list[str]:
    """Trimmed, de-duplicated (first spelling wins), at most MAX_TAGS of MAX_TAG_CHARS."""
    cleaned: list[str] = []
    for tag in tags or []:
        tag = utf8_safe(tag).strip()[:MAX_TAG_CHARS]
        if tag and tag not in cleaned:
            cleaned.append(tag)
    if len(cleaned) > MAX_TAGS:
        log.warning("tool.argument_truncated", tool=tool, argument="tags", length=len(cleaned), kept=MAX_TAGS)
    return cleaned[:MAX_TAGS]


class FoundMemories(RetrieveMemoriesResponse):
    """retrieve_memories' answer: the memories, best match first, each with its score."""

    count: int


class MemoryPage(Results[MemoryRecord]):
    """list_memories' answer: one page, newest first, and how many match in all."""

    total: int


@tool(
    "store_memory",
    description=(
        "Store a memory (a fact, preference, event, workflow or context worth keeping across sessions) "
        "with a semantic embedding, so retrieve_memories finds it by meaning later."
    ),
)
async def store_memory(
    ctx: Context[AppServices, Any],
    content: Annotated[str, Field(description=f"The memory (up to {MAX_CONTENT_CHARS:,} characters).")],
    category: Annotated[Category, Field(description=_CATEGORY_HELP)],
    importance: Annotated[float, Field(description="0.0 to 1.0 (default 0.5).")] = 0.5,
    tags: Annotated[list[str] | None, Field(description="Tags for filtering list_memories.")] = None,
) -> MemoryRecord:
    content = _truncate("content", content, "store_memory")
    if not content.strip():
        raise ValidationError("content must not be empty")
    # The checkout this server serves (Claude Code starts it in the project's folder): the files
    # the memory names are anchored there.
    where = await asyncio.to_thread(app_services(ctx).capture.place, os.getcwd())
    memory = MemoryRecord(
        id=str(uuid.uuid4()),
        content=content,
        category=category,
        importance=clamp("importance", importance, 0.0, 1.0, "store_memory"),
        tags=_tags(tags, "store_memory"),
        created_at=datetime.now(UTC),
        project=where.project if where else None,
    )
    worktree = str(where.worktree) if where else None
    thread, seq = _next_place(ctx.session)
    request = StoreMemoryRequest(memory=memory, worktree=worktree, thread=thread, seq=seq)
    return await await_job(ctx, STORE_MEMORY, request)


@tool(
    "retrieve_memories",
    description="Find memories by meaning, best match first, with a similarity score from 0 to 1.",
)
async def retrieve_memories(
    ctx: Context[AppServices, Any],
    query: Annotated[str, Field(description="What to look for, in plain words.")],
    limit: Annotated[int, Field(description="Most results to return, 1 to 100 (default 10).")] = 10,
    category: OptionalCategory = None,
    min_importance: Annotated[float, Field(description="Only memories at least this important.")] = 0.0,
) -> FoundMemories:
    if not query.strip():
        return FoundMemories(results=[], count=0)
    request = RetrieveMemoriesRequest(
        query=_truncate("query", query, "retrieve_memories"),
        limit=int(clamp("limit", limit, 1, 100, "retrieve_memories")),
        category=category,
        min_importance=clamp("min_importance", min_importance, 0.0, 1.0, "retrieve_memories"),
    )
    found = await await_job(ctx, RETRIEVE_MEMORIES, request)
    return FoundMemories(results=found.results, count=len(found.results))


@tool(
    "list_memories",
    description="List memories newest first, by category and tags (any of them) if given, page by page.",
)
async def list_memories(
    ctx: Context[AppServices, Any],
    category: OptionalCategory = None,
    tags: Annotated[list[str] | None, Field(description="Only memories with any of these tags.")] = None,
    limit: Annotated[int, Field(description="Page size, 1 to 200 (default 50).")] = 50,
    offset: Annotated[int, Field(description="How many to skip (default 0).")] = 0,
) -> MemoryPage:
    request = ListMemoriesRequest(
        category=category,
        tags=_tags(tags, "list_memories"),
        limit=int(clamp("limit", limit, 1, 200, "list_memories")),
        offset=int(clamp("offset", offset, 0, MAX_OFFSET, "list_memories")),
    )
    page = await await_job(ctx, LIST_MEMORIES, request)
    return MemoryPage(results=page.results, count=len(page.results), total=page.total)


@tool("delete_memory", description="Delete a memory by id. Unknown ids give deleted: false.")
async def delete_memory(
    ctx: Context[AppServices, Any],
    id: Annotated[str, Field(description="The memory's id, as store_memory returned it.")],
) -> DeleteMemoryResponse:
    try:
        memory_id = str(uuid.UUID(id.strip()))
    except ValueError:
        return DeleteMemoryResponse(deleted=False)  # no memory ever had such an id
    return await await_job(ctx, DELETE_MEMORY, DeleteMemoryRequest(id=memory_id))

"""A populated store for the export and import tests: memories, experiences (archived in the journal
too), a value, all stored through the jobs as the tools store them, on an inline transport."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from learning_memory.composition import in_process_executor
from learning_memory.server.journal.journal import Journal
from learning_memory.server.transport import Transport, create_transport
from learning_memory.shared.contracts.experiences import (
    PERSIST_EXPERIENCE,
    SEARCH_EXPERIENCES,
    PersistExperienceRequest,
    SearchExperiencesRequest,
)
from learning_memory.shared.contracts.learning import (
    GET_CLUSTER_MEMBERS,
    LIST_VALUES,
    STORE_VALUE,
    GetClusterMembersRequest,
    ListValuesRequest,
    StoreValueRequest,
)
from learning_memory.shared.contracts.memory import (
    LIST_MEMORIES,
    RETRIEVE_MEMORIES,
    STORE_MEMORY,
    ListMemoriesRequest,
    MemoryRecord,
    RetrieveMemoriesRequest,
    StoreMemoryRequest,
)
from learning_memory.shared.settings import Settings
from learning_memory.worker.jobs.experiences import axis_texts
from tests.learning_data import ghap_entry
from tests.mcp_thread import inline_settings
from tests.unit.test_learning_jobs import SAMPLES

PROJECT = "repo-0123456789abcdef"
FACTS = [
    "The staging database is refreshed from production every Sunday night.",
    "Prefer small pull requests with one concern each.",
    "The API rate limit is 100 requests per minute per token.",
    "We moved the CI from Jenkins to GitHub Actions in March.",
    "To undo the last git commit but keep the changes, run git reset --soft HEAD~1.",
    "Gateway answers with code QX7741 when the card issuer times out; retry once.",
]
QUERIES = [
    "how often is staging refreshed?",
    "how can I revert my latest commit?",
    "what does QX7741 mean",
    "rate limits of the API",
]
EXPERIENCE_QUERIES = ["the test fails only in CI", "a timeout while importing partner files"]
BUDGET_S = 300.0


@dataclass
class Place:
    jobs: Transport
    journal: Journal
    settings: Settings


@asynccontextmanager
async def place(root: Path, embedding_model: str = "hashing:384") -> AsyncIterator[Place]:
    """Jobs run in this process on a store under ``root``, and the journal there."""
    settings = inline_settings(root, embedding_model)
    jobs = await create_transport(settings, in_process_executor)
    journal = Journal(settings.journal_dir, "test")
    try:
        yield Place(jobs, journal, settings)
    finally:
        journal.close()
        await jobs.close()


async def populate(where: Place, experiences: int) -> None:
    for number, text in enumerate(FACTS):
        memory = MemoryRecord(
            id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"memory-{number}")),
            content=text,
            category="fact" if number % 2 else "workflow",
            importance=0.3 + 0.1 * number,
            tags=[f"tag{number % 3}"],
            created_at=datetime(2025, 5, 1, number, tzinfo=UTC),
            project=PROJECT if number % 2 else "repo-other",
        )
        await where.jobs.run(STORE_MEMORY, StoreMemoryRequest(memory=memory), budget_s=BUDGET_S)
    entries = {}
    for number in range(experiences):
        entry = ghap_entry(SAMPLES[number % len(SAMPLES)], number).model_copy(update={"project": PROJECT})
        entries[entry.id] = entry
        await where.jobs.run(PERSIST_EXPERIENCE, PersistExperienceRequest(entry=entry), budget_s=BUDGET_S)
        where.journal.import_archived(entry, persist=False)
    # A value its cluster takes: the words of the member closest to the centroid.
    request = GetClusterMembersRequest(axis="full", label=0, limit=1)
    member = (await where.jobs.run(GET_CLUSTER_MEMBERS, request, budget_s=BUDGET_S)).members[0]
    entry = entries[member.ghap_id]
    assert entry.resolution is not None
    value = StoreValueRequest(
        id=str(uuid.uuid5(uuid.NAMESPACE_URL, "value-0")),
        text=axis_texts(entry, entry.resolution)["full"][:500],
        axis="full",
        label=0,
        created_at=datetime(2025, 5, 2, tzinfo=UTC),
    )
    await where.jobs.run(STORE_VALUE, value, budget_s=BUDGET_S)


def ranked(hits: Sequence[Any]) -> list[dict[str, Any]]:
    """Hits best first, those with the very same score by id: which of two equal hits the store
    hands first is up to its segments, not to what it holds."""
    return sorted((hit.model_dump() for hit in hits), key=lambda hit: (-round(hit["score"], 6), hit["id"]))


async def answers(where: Place) -> dict[str, Any]:
    """What the tools answer: memories by meaning and listed, experiences on each axis, values."""
    found: dict[str, Any] = {}
    for query in QUERIES:
        request = RetrieveMemoriesRequest(query=query, limit=4)
        done = await where.jobs.run(RETRIEVE_MEMORIES, request, budget_s=BUDGET_S)
        found[f"memories: {query}"] = ranked(done.results)
    listed = ListMemoriesRequest(limit=50, offset=0)
    found["list_memories"] = await where.jobs.run(LIST_MEMORIES, listed, budget_s=BUDGET_S)
    for query in EXPERIENCE_QUERIES:
        for axis in ("full", "strategy", "surprise"):
            search = SearchExperiencesRequest(query=query, axis=axis, limit=5)
            searched = await where.jobs.run(SEARCH_EXPERIENCES, search, budget_s=BUDGET_S)
            found[f"{axis}: {query}"] = ranked(searched.results)
    found["values"] = await where.jobs.run(LIST_VALUES, ListValuesRequest(), budget_s=BUDGET_S)
    return found


def assert_same_answers(before: dict[str, Any], after: dict[str, Any]) -> None:
    """The same hits in the same order, scores equal but for the model's float noise (a text
    embedded alone and in a batch differ in the eighth decimal)."""
    assert before.keys() == after.keys()
    for key, hits in before.items():
        if not isinstance(hits, list):
            assert after[key] == hits, key
            continue
        assert [{**h, "score": 0} for h in after[key]] == [{**h, "score": 0} for h in hits], key
        assert [h["score"] for h in after[key]] == pytest.approx([h["score"] for h in hits], abs=1e-6), key

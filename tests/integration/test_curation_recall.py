"""Curation with the real model and the real embedded vector store: what a person changed is what
the tools and the hooks then answer, and undo brings the answers back."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from learning_memory.cli.samples import demo_entries
from learning_memory.server.hooks.session_brief import _curated_out, _value_lines
from learning_memory.server.hooks.values_cache import write_values_cache
from learning_memory.shared.contracts.context import AssembleContextRequest, PremortemRequest
from learning_memory.shared.contracts.curation import (
    DeleteMemoryRecordedRequest,
    MarkExperienceRequest,
    MergeMemoriesRequest,
    SetValueStateRequest,
    UndoRequest,
    UpdateMemoryRequest,
)
from learning_memory.shared.contracts.experiences import (
    GhapEntry,
    PersistExperienceRequest,
    SearchExperiencesRequest,
)
from learning_memory.shared.contracts.learning import (
    GetClusterMembersRequest,
    ListValuesRequest,
    StoreValueRequest,
)
from learning_memory.shared.contracts.memory import (
    ListMemoriesRequest,
    MemoryRecord,
    RetrieveMemoriesRequest,
    ScoredMemory,
    StoreMemoryRequest,
)
from learning_memory.worker.jobs.context import assemble_context, premortem_warnings
from learning_memory.worker.jobs.curation import (
    delete_memory_recorded,
    mark_experience,
    set_value_state,
    undo_change,
    update_memory,
)
from learning_memory.worker.jobs.curation_merge import merge_memories
from learning_memory.worker.jobs.experiences import axis_texts, persist_experience, search_experiences
from learning_memory.worker.jobs.learning import clustering, get_cluster_members, list_values, store_value
from learning_memory.worker.jobs.memory import list_memories, retrieve_memories, store_memory
from learning_memory.worker.services import JobRun
from tests.helpers import job_run
from tests.learning_data import ghap_entry

pytestmark = pytest.mark.slow
MODEL = "all-MiniLM-L6-v2"
SAMPLES = demo_entries()
ENTRIES: dict[str, GhapEntry] = {ghap_entry(s, n).id: ghap_entry(s, n) for n, s in enumerate(SAMPLES)}


@pytest.fixture
async def run(tmp_path: Path) -> AsyncIterator[JobRun]:
    async with job_run(tmp_path, MODEL) as run:
        yield run


async def remember(run: JobRun, content: str, tags: list[str]) -> MemoryRecord:
    memory = MemoryRecord(
        id=str(uuid.uuid4()),
        content=content,
        category="fact",
        importance=0.5,
        tags=tags,
        created_at=datetime.now(UTC),
    )
    return await store_memory(run, StoreMemoryRequest(memory=memory))


async def best(run: JobRun, query: str) -> ScoredMemory:
    return (await retrieve_memories(run, RetrieveMemoriesRequest(query=query, limit=10))).results[0]


async def ids(run: JobRun, query: str) -> list[str]:
    return [
        hit.id
        for hit in (await retrieve_memories(run, RetrieveMemoriesRequest(query=query, limit=10))).results
    ]


async def test_memories_deleted_edited_and_merged_come_back_on_undo(run: JobRun) -> None:
    port = await remember(run, "The staging database listens on port 5433", ["db"])
    deploy = await remember(run, "Deploys go out through the Jenkins pipeline every Friday", ["ops"])
    await remember(run, "The office coffee machine is descaled on Mondays", ["office"])

    # Deleted, then undone: found again by its words, under the same id.
    deleted = await delete_memory_recorded(run, DeleteMemoryRecordedRequest(id=port.id))
    assert port.id not in await ids(run, "which port does the staging database use")
    await undo_change(run, UndoRequest(change_id=deleted.change.id))
    found = await best(run, "which port does the staging database use")
    assert found.id == port.id and found.created_at == port.created_at

    # Edited: found by its new words, no longer by its old; undone: the other way round.
    new = "Nightly backups are written to the S3 bucket lms-backups"
    edited = await update_memory(run, UpdateMemoryRequest(id=port.id, content=new))
    assert (await best(run, "where are the nightly backups stored")).id == port.id
    assert (await best(run, "which port does the staging database use")).id != port.id
    await undo_change(run, UndoRequest(change_id=edited.change.id))
    found = await best(run, "which port does the staging database use")
    assert (found.id, found.content) == (port.id, port.content)
    assert (await best(run, "where are the nightly backups stored")).content != new

    # Merged: one left, with both tags; undone: all back as they were.
    twin = await remember(run, "Staging's database runs on port 5433, not 5432", ["staging"])
    merged = await merge_memories(run, MergeMemoriesRequest(keep=port.id, merge=[twin.id]))
    listed = (await list_memories(run, ListMemoriesRequest(limit=10, offset=0))).results
    assert twin.id not in [m.id for m in listed] and len(listed) == 3
    found = await best(run, "staging database port")
    assert found.id == port.id and found.tags == ["db", "staging"]
    await undo_change(run, UndoRequest(change_id=merged.change.id))
    listed = (await list_memories(run, ListMemoriesRequest(limit=10, offset=0))).results
    assert {m.id for m in listed} >= {port.id, twin.id, deploy.id} and len(listed) == 4
    assert {m.id: m for m in listed}[port.id] == port


@pytest.fixture
async def learned(run: JobRun) -> JobRun:
    for number, sample in enumerate(SAMPLES):
        await persist_experience(run, PersistExperienceRequest(entry=ghap_entry(sample, number)))
    return run


async def context_ids(run: JobRun, query: str) -> list[str]:
    request = AssembleContextRequest(query=query, budget_tokens=4000, min_score=0.2, max_items=20)
    return [item.id for item in (await assemble_context(run, request)).items]


async def test_a_retired_value_leaves_listing_brief_and_context_until_restored(learned: JobRun) -> None:
    run = learned
    data_dir = run.services.settings.data_dir
    members = await get_cluster_members(run, GetClusterMembersRequest(axis="full", label=0, limit=1))
    entry = ENTRIES[members.members[0].ghap_id]
    assert entry.resolution is not None
    text = axis_texts(entry, entry.resolution)["full"][:500]
    request = StoreValueRequest(
        id=str(uuid.uuid4()), text=text, axis="full", label=0, created_at=datetime.now(UTC)
    )
    value = await store_value(run, request)
    item = f"val:{value.id}"

    async def shown() -> tuple[list[str], str, list[str]]:
        listed = [v.id for v in (await list_values(run, ListValuesRequest())).results]
        write_values_cache(
            data_dir, (await list_values(run, ListValuesRequest())).results
        )  # as the server does
        brief = "\n".join(_value_lines(data_dir, _curated_out(data_dir)))
        return listed, brief, await context_ids(run, entry.goal)

    listed, brief, context = await shown()
    assert value.id in listed and item in brief and item in context
    retired = await set_value_state(run, SetValueStateRequest(id=value.id, retired=True))
    listed, brief, context = await shown()
    assert value.id not in listed and item not in brief and item not in context
    every = (await list_values(run, ListValuesRequest(include_retired=True))).results
    assert [v.retired for v in every if v.id == value.id] == [True]
    await undo_change(run, UndoRequest(change_id=retired.change.id))
    listed, brief, context = await shown()
    assert value.id in listed and item in brief and item in context


async def test_a_wrong_experience_leaves_context_premortem_search_and_clusters(learned: JobRun) -> None:
    run = learned
    ghap_id, entry = next(
        (k, e) for k, e in ENTRIES.items() if e.resolution and e.resolution.status == "falsified"
    )
    item = f"exp:{ghap_id}"
    premortem = PremortemRequest(goal=entry.goal, hypothesis=entry.hypothesis, limit=10, min_score=0.2)
    search = SearchExperiencesRequest(query=entry.goal, limit=10)

    async def seen() -> tuple[bool, bool, bool, bool]:
        warned = [w.ghap_id for w in (await premortem_warnings(run, premortem)).warnings]
        searched = [hit.ghap_id for hit in (await search_experiences(run, search)).results]
        clustered = (await clustering(run, "full")).ghap_ids
        return (
            item in await context_ids(run, entry.goal),
            ghap_id in warned,
            ghap_id in searched,
            ghap_id in clustered,
        )

    assert await seen() == (True, True, True, True)
    marked = await mark_experience(run, MarkExperienceRequest(id=ghap_id, wrong=True))
    assert await seen() == (False, False, False, False)
    restored = await mark_experience(run, MarkExperienceRequest(id=ghap_id, wrong=False))
    assert await seen() == (True, True, True, True)
    # The restore undone: wrong again; then the mark undone: as at first.
    await undo_change(run, UndoRequest(change_id=restored.change.id))
    assert await seen() == (False, False, False, False)
    await undo_change(run, UndoRequest(change_id=marked.change.id))
    assert await seen() == (True, True, True, True)

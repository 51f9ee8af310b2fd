"""The curation jobs on the real embedded vector store and metadata store with a model-free embedder
(the keyword side of recall finds records by their words): each change recorded and undoable,
applied once per change id, bad input refused; flags heeded by listing, search, hints and the brief."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from learning_memory.cli.samples import generated_entries
from learning_memory.server.hooks.session_brief import _curated_out, _value_lines
from learning_memory.server.hooks.values_cache import write_values_cache
from learning_memory.shared.anchored_items import put_item
from learning_memory.shared.contracts.context import item_id
from learning_memory.shared.contracts.curation import (
    LIST_CHANGES,
    UPDATE_MEMORY,
    DeleteMemoryRecordedRequest,
    ListChangesRequest,
    MarkExperienceRequest,
    MergeExperiencesRequest,
    MergeMemoriesRequest,
    SetValueStateRequest,
    UndoRequest,
    UpdateMemoryRequest,
)
from learning_memory.shared.contracts.experiences import (
    Anchor,
    PersistExperienceRequest,
    SearchExperiencesRequest,
    collection_for,
    point_id,
)
from learning_memory.shared.contracts.learning import VALUES_COLLECTION, ListValuesRequest
from learning_memory.shared.contracts.memory import COLLECTION as MEMORIES
from learning_memory.shared.contracts.memory import (
    ListMemoriesRequest,
    MemoryRecord,
    RetrieveMemoriesRequest,
    StoreMemoryRequest,
)
from learning_memory.shared.errors import NotFoundError, StorageError, ValidationError
from learning_memory.shared.fix_index import FixIndex, fix_index_path
from learning_memory.shared.paths import CURATED_FILE, RECENT_FIXES_FILE, capture_dir
from learning_memory.worker.curation.snapshots import encode, restore, set_fields, snapshot
from learning_memory.worker.jobs import curation
from learning_memory.worker.jobs.curation import (
    delete_memory_recorded,
    list_changes,
    mark_experience,
    set_value_state,
    undo_change,
    update_memory,
)
from learning_memory.worker.jobs.curation_merge import merge_experiences, merge_memories
from learning_memory.worker.jobs.experiences import persist_experience, search_experiences
from learning_memory.worker.jobs.learning import clustering, list_values
from learning_memory.worker.jobs.memory import list_memories, retrieve_memories, store_memory
from learning_memory.worker.recall import keywords
from learning_memory.worker.registry import execute
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import CollectionSpec, PointData
from tests.helpers import job_run
from tests.learning_data import ghap_entry
from tests.unit.test_fix_index import PROJECT, episode, fix, record

SAMPLES = generated_entries(30, seed=7)


@pytest.fixture
async def run(tmp_path: Path) -> AsyncIterator[JobRun]:
    async with job_run(tmp_path, "hashing:384") as run:
        yield run


async def remember(
    run: JobRun, content: str, tags: list[str] | None = None, importance: float = 0.5
) -> MemoryRecord:
    memory = MemoryRecord(
        id=str(uuid.uuid4()),
        content=content,
        category="fact",
        importance=importance,
        tags=tags or [],
        created_at=datetime.now(UTC),
    )
    return await store_memory(run, StoreMemoryRequest(memory=memory))


async def found(run: JobRun, query: str) -> list[str]:
    """The memories a query's words find (the keyword side: the model-free embedder's dense side
    answers every memory), checked against what retrieve_memories answers."""
    hits = await retrieve_memories(run, RetrieveMemoriesRequest(query=query, limit=10))
    answered = {hit.id for hit in hits.results}
    lexical = await keywords.search(await run.services.metadata(), MEMORIES, keywords.terms(query), 10)
    ids = [point for point, _ in lexical.hits]
    assert set(ids) <= answered
    return ids


async def test_an_edit_is_found_by_its_new_words_and_undone_by_its_old(run: JobRun) -> None:
    memory = await remember(run, "The staging database lives on port 5433", ["db"])
    edited = await update_memory(
        run,
        UpdateMemoryRequest(
            id=f"mem:{memory.id}",
            content="Deploys go out through the blue pipeline",
            importance=0.9,
            tags=[" ops ", "ops", "deploy"],
        ),
    )
    change = edited.change
    assert change.kind == "update_memory" and change.state == "applied"
    assert change.targets == [f"mem:{memory.id}"]
    assert change.diff["importance"] == [0.5, 0.9] and change.diff["tags"] == [["db"], ["ops", "deploy"]]
    assert "content" in change.summary and "importance 0.5 → 0.9" in change.summary
    assert await found(run, "blue pipeline deploys") == [memory.id]
    assert memory.id not in await found(run, "staging database port 5433")
    [listed] = (await list_memories(run, ListMemoriesRequest(limit=10, offset=0))).results
    assert (listed.id, listed.created_at, listed.importance) == (memory.id, memory.created_at, 0.9)

    undone = await undo_change(run, UndoRequest(change_id=change.id))
    assert not undone.already_undone and undone.change.state == "undone" and undone.change.undone_at
    assert await found(run, "staging database port 5433") == [memory.id]
    assert memory.id not in await found(run, "blue pipeline deploys")
    [listed] = (await list_memories(run, ListMemoriesRequest(limit=10, offset=0))).results
    assert listed == memory
    # Twice: nothing more to do, and said so.
    again = await undo_change(run, UndoRequest(change_id=change.id))
    assert again.already_undone and again.change == undone.change


async def test_bad_input_is_a_clear_error(run: JobRun) -> None:
    memory = await remember(run, "Builds need Java 21")
    with pytest.raises(NotFoundError, match="No memory with id 'nope'"):
        await update_memory(run, UpdateMemoryRequest(id="nope", importance=0.1))
    with pytest.raises(NotFoundError, match="No memory with id"):
        await update_memory(run, UpdateMemoryRequest(id=str(uuid.uuid4()), importance=0.1))
    with pytest.raises(ValidationError, match="Nothing to change"):
        await update_memory(run, UpdateMemoryRequest(id=memory.id, importance=0.5, category="fact"))
    with pytest.raises(ValidationError, match="cannot be blank"):
        await update_memory(run, UpdateMemoryRequest(id=memory.id, content="   "))
    envelope = await execute(UPDATE_MEMORY, {"id": memory.id, "importance": 2}, run)
    assert envelope["error"]["type"] == "validation_error" and "importance" in envelope["error"]["message"]
    envelope = await execute(UPDATE_MEMORY, {"id": "x", "importance": 0.2}, run)
    assert envelope["error"]["type"] == "not_found"
    with pytest.raises(NotFoundError, match="No curation change"):
        await undo_change(run, UndoRequest(change_id="unknown"))
    with pytest.raises(NotFoundError, match="No value"):
        await set_value_state(run, SetValueStateRequest(id=str(uuid.uuid4()), retired=True))
    with pytest.raises(NotFoundError, match="No experience with id 'ghap_none'"):
        await mark_experience(run, MarkExperienceRequest(id="ghap_none", wrong=True))
    # A change id belongs to one change.
    done = await update_memory(run, UpdateMemoryRequest(id=memory.id, importance=0.7))
    with pytest.raises(ValidationError, match="already used by a update_memory change"):
        await delete_memory_recorded(run, DeleteMemoryRecordedRequest(change_id=done.change.id, id=memory.id))


async def test_a_change_id_is_applied_once_and_a_crash_is_finished_from_the_record(
    run: JobRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = await remember(run, "Releases are cut on Tuesdays", ["release"])
    request = UpdateMemoryRequest(id=memory.id, tags=["release", "calendar"])
    first = await update_memory(run, request)
    # The memory changed since; the retried job (same change id) changes nothing more.
    await update_memory(run, UpdateMemoryRequest(id=memory.id, tags=["other"]))
    again = await update_memory(run, request)
    assert again.change == first.change
    [listed] = (await list_memories(run, ListMemoriesRequest(limit=10, offset=0))).results
    assert listed.tags == ["other"]

    # A worker stopped after recording, before applying: the retry applies the recorded change.
    calls = 0
    real = curation.write_memory

    async def crash_once(*args: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("worker stopped")
        await real(*args)

    monkeypatch.setattr(curation, "write_memory", crash_once)
    request = UpdateMemoryRequest(id=memory.id, importance=1.0)
    with pytest.raises(RuntimeError):
        await update_memory(run, request)
    [pending] = (await list_changes(run, ListChangesRequest(limit=1))).changes
    assert pending.id == request.change_id and pending.state == "pending"
    assert (await update_memory(run, request)).change.state == "applied"
    [listed] = (await list_memories(run, ListMemoriesRequest(limit=10, offset=0))).results
    assert listed.importance == 1.0


async def test_a_deleted_memory_comes_back_and_history_is_listed(run: JobRun) -> None:
    memory = await remember(run, "The VPN needs the hardware token")
    other = await remember(run, "Lunch is at noon")
    deleted = await delete_memory_recorded(run, DeleteMemoryRecordedRequest(id=memory.id))
    assert deleted.change.kind == "delete_memory" and "hardware token" in deleted.change.summary
    assert await found(run, "VPN hardware token") == []
    with pytest.raises(NotFoundError):  # gone: a second delete has nothing to delete
        await delete_memory_recorded(run, DeleteMemoryRecordedRequest(id=memory.id))
    await undo_change(run, UndoRequest(change_id=deleted.change.id))
    assert await found(run, "VPN hardware token") == [memory.id]

    await update_memory(run, UpdateMemoryRequest(id=other.id, category="event"))
    history = await list_changes(run, ListChangesRequest())
    assert [c.kind for c in history.changes] == ["update_memory", "delete_memory"] and history.total == 2
    assert [c.state for c in history.changes] == ["applied", "undone"]
    mine = await list_changes(run, ListChangesRequest(target=memory.id))
    assert [c.id for c in mine.changes] == [deleted.change.id]
    assert (await list_changes(run, ListChangesRequest(target=f"mem:{other.id}"))).total == 1
    assert (await list_changes(run, ListChangesRequest(item_kind="value"))).total == 0
    envelope = await execute(LIST_CHANGES, {"limit": 500}, run)
    assert envelope["error"]["type"] == "validation_error"


async def test_an_older_change_waits_for_the_later_ones_on_its_records(run: JobRun) -> None:
    memory = await remember(run, "Cache keys carry the schema version")
    first = await update_memory(run, UpdateMemoryRequest(id=memory.id, importance=0.8))
    second = await update_memory(run, UpdateMemoryRequest(id=memory.id, importance=0.9))
    with pytest.raises(ValidationError, match=f"undo {second.change.id} first"):
        await undo_change(run, UndoRequest(change_id=first.change.id))
    await undo_change(run, UndoRequest(change_id=second.change.id))
    await undo_change(run, UndoRequest(change_id=first.change.id))
    [listed] = (await list_memories(run, ListMemoriesRequest(limit=10, offset=0))).results
    assert listed.importance == 0.5


async def test_merged_memories_are_one_until_undone(run: JobRun) -> None:
    kept = await remember(run, "Tests run with pytest -x", ["tests"])
    dup = await remember(run, "Run the tests with pytest -x please", ["pytest"], importance=0.8)
    third = await remember(run, "pytest -x stops at the first failure", ["tests", "cli"])
    with pytest.raises(ValidationError, match="both kept and merged"):
        await merge_memories(run, MergeMemoriesRequest(keep=kept.id, merge=[kept.id]))
    merged = await merge_memories(
        run, MergeMemoriesRequest(keep=kept.id, merge=[dup.id, f"mem:{third.id}", dup.id])
    )
    change = merged.change
    assert change.targets == [f"mem:{kept.id}", f"mem:{dup.id}", f"mem:{third.id}"]
    assert change.diff["merged"] == [[], [dup.id, third.id]]
    listed = (await list_memories(run, ListMemoriesRequest(limit=10, offset=0))).results
    assert [m.id for m in listed] == [kept.id] and listed[0].tags == ["tests", "pytest", "cli"]
    assert listed[0].importance == 0.8 and change.diff["importance"] == [0.5, 0.8]
    await undo_change(run, UndoRequest(change_id=change.id))
    listed = (await list_memories(run, ListMemoriesRequest(limit=10, offset=0))).results
    assert sorted(m.id for m in listed) == sorted([kept.id, dup.id, third.id])
    assert {m.id: m for m in listed}[kept.id] == kept

    # With a new content: re-embedded, found by its words.
    rewritten = await merge_memories(
        run, MergeMemoriesRequest(keep=kept.id, merge=[dup.id], content="Always run pytest with -x locally")
    )
    assert rewritten.change.diff["content"][1] == "Always run pytest with -x locally"
    assert await found(run, "locally always") == [kept.id]


async def put_value(run: JobRun, text: str, anchors: list[Anchor] | None = None) -> str:
    """A value point as store_value writes one (without a clustering to validate it against)."""
    value_id = str(uuid.uuid4())
    now = datetime.now(UTC)
    payload = {
        "text": text,
        "axis": "full",
        "cluster_id": "cluster_full_0",
        "cluster_size": 5,
        "similarity_to_centroid": 0.9,
        "created_at": now.isoformat(),
        "created_ts": now.timestamp(),
        "evidence_ts": now.timestamp(),
        "clustering_id": "full-v1-n20",
        "member_ghap_ids": "[]",
        "centroid_distance": 0.1,
        "threshold_distance": 0.3,
        "support": 5,
        "anchors": [a.model_dump(mode="json") for a in anchors or []],
        "anchor_files": sorted({a.file for a in anchors or []}),
        "project": PROJECT if anchors else None,
    }
    embedder = await run.services.embedder()
    store = await run.services.collection(CollectionSpec(VALUES_COLLECTION, embedder.dimension))
    vector = (await embedder.embed([text]))[0]
    await store.upsert(VALUES_COLLECTION, [PointData(value_id, vector, payload)])
    if anchors:  # as store_value anchors it (worker.jobs.learning)
        index = fix_index_path(run.services.settings.data_dir)
        put_item(index, PROJECT, item_id("value", value_id), anchors, text, now)
    return value_id


async def test_a_retired_value_leaves_the_listing_and_the_brief_until_restored(run: JobRun) -> None:
    data_dir = run.services.settings.data_dir
    keep = await put_value(run, "Read the error message before changing code")
    retire = await put_value(run, "Prefer small commits", [Anchor(file="src/app.py")])
    listed = await list_values(run, ListValuesRequest())
    write_values_cache(data_dir, listed.results)  # what the server keeps for the brief
    index = FixIndex(fix_index_path(data_dir))
    assert [i.item for i in index.anchored_to(PROJECT, "src/app.py")] == [f"val:{retire}"]

    change = (await set_value_state(run, SetValueStateRequest(id=f"val:{retire}", retired=True))).change
    assert change.kind == "retire_value" and change.diff == {"retired": [False, True]}
    assert [v.id for v in (await list_values(run, ListValuesRequest())).results] == [keep]
    every = (await list_values(run, ListValuesRequest(include_retired=True))).results
    assert {v.id: v.retired for v in every} == {keep: False, retire: True}
    assert "retired" not in every[0].model_dump() or every[0].retired  # told only when true
    assert json.loads((data_dir / CURATED_FILE).read_text())["retired_values"] == [retire]
    # The brief skips it even from a values cache written before the change.
    assert f"val:{retire}" not in "\n".join(_value_lines(data_dir, _curated_out(data_dir)))
    assert f"val:{keep}" in "\n".join(_value_lines(data_dir, _curated_out(data_dir)))
    assert index.anchored_to(PROJECT, "src/app.py") == []  # reading its file no longer brings it
    with pytest.raises(ValidationError, match="retired already"):
        await set_value_state(run, SetValueStateRequest(id=retire, retired=True))

    restored = await set_value_state(run, SetValueStateRequest(id=retire, retired=False))
    assert restored.change.kind == "restore_value"
    assert len((await list_values(run, ListValuesRequest())).results) == 2
    assert json.loads((data_dir / CURATED_FILE).read_text())["retired_values"] == []
    assert [i.item for i in index.anchored_to(PROJECT, "src/app.py")] == [f"val:{retire}"]
    index.close()
    # Undo the restore: retired again; then the retire: as it was at first.
    await undo_change(run, UndoRequest(change_id=restored.change.id))
    assert [v.id for v in (await list_values(run, ListValuesRequest())).results] == [keep]
    await undo_change(run, UndoRequest(change_id=change.id))
    [point] = await (await run.services.vectors()).get(VALUES_COLLECTION, [retire])
    assert "retired" not in point.payload


async def persist(run: JobRun, count: int) -> list[str]:
    ids = []
    for number in range(count):
        entry = ghap_entry(SAMPLES[number % len(SAMPLES)], number)
        await persist_experience(run, PersistExperienceRequest(entry=entry))
        ids.append(entry.id)
    return ids


async def test_a_wrong_experience_is_kept_but_not_searched_hinted_or_clustered(run: JobRun) -> None:
    ids = await persist(run, 22)
    wrong = ids[3]
    entry = ghap_entry(SAMPLES[3], 3)
    query = entry.goal
    hits = await search_experiences(run, SearchExperiencesRequest(query=query, limit=50))
    assert wrong in [hit.ghap_id for hit in hits.results]
    before = await clustering(run, "full")
    assert wrong in before.ghap_ids
    data_dir = run.services.settings.data_dir
    index = FixIndex(fix_index_path(data_dir))
    record(index, "s1", episode("ep1", wrong, fix()))
    assert len(index.fixes_for(PROJECT, [fix().failure])) == 1

    # By a point id on any axis, as a hit names it.
    marked = await mark_experience(run, MarkExperienceRequest(id=point_id(wrong, "strategy"), wrong=True))
    assert marked.change.targets == [f"exp:{wrong}"] and marked.change.kind == "mark_wrong"
    hits = await search_experiences(run, SearchExperiencesRequest(query=query, limit=50))
    assert wrong not in [hit.ghap_id for hit in hits.results]
    after = await clustering(run, "full")
    assert after.clustering_id != before.clustering_id and wrong not in after.ghap_ids
    assert index.fixes_for(PROJECT, [fix().failure]) == []
    index.mark_stale({wrong: None})  # the miner's next check does not bring it back
    assert index.fixes_for(PROJECT, [fix().failure]) == []
    assert json.loads((data_dir / CURATED_FILE).read_text())["wrong_experiences"] == [wrong]
    # Kept: readable by id, every axis flagged; stored again (met anew), still wrong.
    store = await run.services.vectors()
    [point] = await store.get(collection_for("full"), [point_id(wrong, "full")])
    assert point.payload["wrong"] is True
    await persist_experience(run, PersistExperienceRequest(entry=entry))
    [point] = await store.get(collection_for("full"), [point_id(wrong, "full")])
    assert point.payload["wrong"] is True
    with pytest.raises(ValidationError, match="marked wrong already"):
        await mark_experience(run, MarkExperienceRequest(id=wrong, wrong=True))

    await mark_experience(run, MarkExperienceRequest(id=f"exp:{wrong}", wrong=False))
    hits = await search_experiences(run, SearchExperiencesRequest(query=query, limit=50))
    assert wrong in [hit.ghap_id for hit in hits.results]
    assert wrong in (await clustering(run, "full")).ghap_ids
    assert len(index.fixes_for(PROJECT, [fix().failure])) == 1
    index.close()


async def test_merged_experiences_sum_their_occurrences_until_undone(run: JobRun) -> None:
    ids = await persist(run, 4)
    store = await run.services.vectors()
    with pytest.raises(ValidationError, match="is the kept experience"):
        await merge_experiences(run, MergeExperiencesRequest(keep=ids[0], merge=[point_id(ids[0], "full")]))
    with pytest.raises(NotFoundError):
        await merge_experiences(run, MergeExperiencesRequest(keep=ids[0], merge=["ghap_missing"]))
    merged = await merge_experiences(run, MergeExperiencesRequest(keep=ids[0], merge=[ids[1], ids[2]]))
    assert merged.change.diff["occurrences"] == [1, 3]
    assert merged.change.targets == [f"exp:{i}" for i in ids[:3]]
    assert await store.count(collection_for("full")) == 2
    [kept] = await store.get(collection_for("strategy"), [point_id(ids[0], "strategy")])
    assert kept.payload["occurrences"] == 3
    await undo_change(run, UndoRequest(change_id=merged.change.id))
    assert await store.count(collection_for("full")) == 4
    [kept] = await store.get(collection_for("full"), [point_id(ids[0], "full")])
    assert kept.payload["occurrences"] == 1


async def test_a_point_recorded_without_its_vector_is_embedded_again(run: JobRun) -> None:
    memory = await remember(run, "Feature flags live in flags.yaml")
    value_id = await put_value(run, "Check the flags before a release")
    store = await run.services.vectors()
    [point] = await store.get(MEMORIES, [memory.id], with_vectors=True)
    snaps = [
        {**snapshot(MEMORIES, point), "vector": None},
        {**snapshot(VALUES_COLLECTION, (await store.get(VALUES_COLLECTION, [value_id]))[0]), "vector": None},
    ]
    await store.delete(MEMORIES, [memory.id])
    await restore(run, snaps)
    [again] = await store.get(MEMORIES, [memory.id], with_vectors=True)
    assert again.payload == point.payload and again.vector == pytest.approx(point.vector, abs=1e-3)
    experience: dict[str, Any] = {
        "collection": collection_for("full"),
        "id": str(uuid.uuid4()),
        "payload": {},
        "vector": None,
    }
    with pytest.raises(StorageError, match="No vector recorded"):
        await restore(run, [experience])
    with pytest.raises(StorageError, match="no vector to write back"):
        await set_fields(store, [{**snaps[0], "vector": None}], {"x": 1})
    assert encode(None) is None


async def test_the_projects_recent_fixes_are_written_again_without_a_wrong_one(run: JobRun) -> None:
    entries = [ghap_entry(SAMPLES[n], n).model_copy(update={"project": PROJECT}) for n in range(2)]
    for entry in entries:
        await persist_experience(run, PersistExperienceRequest(entry=entry))
    data_dir = run.services.settings.data_dir
    index = FixIndex(fix_index_path(data_dir))
    record(index, "s1", episode("ep1", entries[0].id, fix()), episode("ep2", entries[1].id, fix(minutes=5)))
    index.close()
    folder = capture_dir(data_dir) / PROJECT
    # No session of the project mined here: no recent fixes to write again.
    marked = await mark_experience(run, MarkExperienceRequest(id=entries[1].id, wrong=True))
    assert not folder.exists()
    await undo_change(run, UndoRequest(change_id=marked.change.id))
    folder.mkdir(parents=True)
    await mark_experience(run, MarkExperienceRequest(id=entries[1].id, wrong=True))
    recent = json.loads((folder / RECENT_FIXES_FILE).read_text())
    assert [item["id"] for item in recent] == [f"exp:{entries[0].id}"]

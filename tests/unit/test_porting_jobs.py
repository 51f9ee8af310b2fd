"""The export, import and adopt_values jobs, called directly (inline services, hashing embedder, the
real embedded vector store): pages in id order, records restored with their ids, payloads, keyword
rows and fix index rows, importing twice changing nothing, vectors reused or made again, and
another project's values validated against this store's clusters before they count."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from learning_memory.shared.anchored_items import items_for_file
from learning_memory.shared.contracts.experiences import (
    AXES,
    Anchor,
    PersistExperienceRequest,
    collection_for,
)
from learning_memory.shared.contracts.learning import VALUES_COLLECTION, ListValuesRequest, StoreValueRequest
from learning_memory.shared.contracts.memory import COLLECTION as MEMORIES
from learning_memory.shared.contracts.memory import MemoryRecord, RetrieveMemoriesRequest, StoreMemoryRequest
from learning_memory.shared.contracts.porting import (
    IMPORT_ITEMS,
    AdoptValuesRequest,
    ExperienceLine,
    ExportItemsRequest,
    ImportItemsRequest,
    MemoryLine,
    StoredItem,
    ValueLine,
    ValueSuggestion,
    decode_vector,
    encode_vector,
    suggestion_id,
)
from learning_memory.shared.errors import ValidationError
from learning_memory.shared.fix_index import fix_index_path
from learning_memory.shared.fix_store import connect
from learning_memory.worker.jobs.experiences import persist_experience
from learning_memory.worker.jobs.learning import list_values, store_value
from learning_memory.worker.jobs.memory import retrieve_memories, store_memory
from learning_memory.worker.jobs.porting import export_items, import_items
from learning_memory.worker.jobs.value_suggestions import adopt_values
from learning_memory.worker.recall import keywords
from learning_memory.worker.registry import execute
from learning_memory.worker.services import JobRun
from tests.helpers import job_run
from tests.learning_data import ghap_entry
from tests.unit.test_learning_jobs import SAMPLES, _typical_text

EXPERIENCES = 40
PROJECT = "repo-0123456789abcdef"
FACTS = [
    "The staging database is refreshed from production every Sunday night.",
    "Prefer small pull requests with one concern each.",
    "The API rate limit is 100 requests per minute per token.",
    "We moved the CI from Jenkins to GitHub Actions in March.",
    "Partner files are read by load_partners in src/app/loader.py.",
]


def memory(number: int, text: str, project: str | None = None) -> MemoryRecord:
    anchors = [Anchor(file="src/app/loader.py", symbol="load_partners")] if project else []
    return MemoryRecord(
        id=str(uuid.UUID(int=number + 1)),
        content=text,
        category="fact",
        importance=0.5,
        tags=["t"],
        created_at=datetime(2025, 5, 1, tzinfo=UTC),
        anchors=anchors,
        project=project,
    )


@pytest.fixture
async def source(tmp_path: Path) -> AsyncIterator[JobRun]:
    """A store with memories (one of them anchored), experiences and a value."""
    async with job_run(tmp_path / "a") as run:
        for number, text in enumerate(FACTS):
            project = PROJECT if number == len(FACTS) - 1 else None
            await store_memory(run, StoreMemoryRequest(memory=memory(number, text, project)))
        for number in range(EXPERIENCES):
            entry = ghap_entry(SAMPLES[number], number)
            await persist_experience(run, PersistExperienceRequest(entry=entry))
        text = await _typical_text(run)
        request = StoreValueRequest(
            id=str(uuid.uuid4()), text=text, axis="full", label=0, created_at=datetime.now(UTC)
        )
        await store_value(run, request)
        yield run


@pytest.fixture
async def target(tmp_path: Path) -> AsyncIterator[JobRun]:
    async with job_run(tmp_path / "b") as run:
        yield run


async def everything(
    run: JobRun, kind: str, *, with_vectors: bool = False, limit: int = 3
) -> list[StoredItem]:
    items: list[StoredItem] = []
    offset: int | None = 0
    while offset is not None:
        request = ExportItemsRequest(kind=kind, offset=offset, limit=limit, with_vectors=with_vectors)
        page = await export_items(run, request)
        items += page.items
        offset = page.next_offset
    return items


async def test_pages_cover_each_kind_once_in_a_stable_order(source: JobRun) -> None:
    memories = await everything(source, "memory", limit=2)
    assert sorted(item.id for item in memories) == sorted(m.id for m in map(memory, range(5), FACTS))
    assert [item.id for item in memories] == [item.id for item in await everything(source, "memory", limit=4)]
    experiences = await everything(source, "experience", limit=7)
    assert len({item.id for item in experiences}) == EXPERIENCES
    values = await everything(source, "value")
    assert len(values) == 1 and isinstance(values[0], ValueLine) and values[0].payload["axis"] == "full"
    first = await export_items(source, ExportItemsRequest(kind="memory", limit=2))
    assert first.total == len(FACTS) and first.next_offset == 2 and first.dimension is None


async def test_an_experience_carries_its_point_on_every_axis_it_has(source: JobRun) -> None:
    experiences = await everything(source, "experience", with_vectors=True)
    with_surprise = [e for e in experiences if isinstance(e, ExperienceLine) and "surprise" in e.axes]
    assert with_surprise and all(isinstance(e, ExperienceLine) and "strategy" in e.axes for e in experiences)
    point = with_surprise[0].axes["surprise"]
    assert point.vector is not None and len(decode_vector(point.vector)) == 384
    page = await export_items(source, ExportItemsRequest(kind="value", with_vectors=True))
    assert page.dimension == 384


async def test_one_projects_items_and_an_empty_store(source: JobRun, target: JobRun) -> None:
    page = await export_items(source, ExportItemsRequest(kind="memory", project=PROJECT))
    assert [item.id for item in page.items] == [memory(4, FACTS[4]).id] and page.total == 1
    empty = await export_items(target, ExportItemsRequest(kind="experience"))
    assert empty.items == [] and empty.next_offset is None and empty.total == 0


async def _import_all(source: JobRun, target: JobRun, *, with_vectors: bool, model: str | None = None) -> int:
    """Import every kind of ``source`` into ``target``; the texts embedded again."""
    embedded = 0
    for kind in ("memory", "experience", "value"):
        items = await everything(source, kind, with_vectors=with_vectors, limit=50)
        request = ImportItemsRequest(
            items=items, embedding_model=model or "hashing:384", dimension=384 if with_vectors else None
        )
        done = await import_items(target, request)
        assert (done.imported, done.present) == (len(items), 0)
        embedded += done.re_embedded
    return embedded


async def _points(run: JobRun, collection: str) -> dict[str, tuple[dict[str, object], list[float] | None]]:
    store = await run.services.vectors()
    records = await store.scroll(collection, limit=1000, with_vectors=True)
    return {r.id: (r.payload, r.vector) for r in records}


async def test_an_import_restores_records_as_they_were_and_twice_changes_nothing(
    source: JobRun, target: JobRun
) -> None:
    # Without vectors: the texts are embedded again, and the points come out the same, even an
    # experience's (its axis texts are rebuilt from its payload as persisting built them).
    embedded = await _import_all(source, target, with_vectors=False)
    collections = [MEMORIES, VALUES_COLLECTION, *(collection_for(axis) for axis in AXES)]
    assert embedded == sum([len(await _points(source, c)) for c in collections])
    for collection in collections:
        mine, theirs = await _points(source, collection), await _points(target, collection)
        assert mine.keys() == theirs.keys() and mine
        for point, (payload, vector) in mine.items():
            assert theirs[point][0] == payload
            assert theirs[point][1] == pytest.approx(vector, abs=1e-6)
        # The keyword side too: hybrid recall finds them by their words.
        assert await keywords.count(await target.services.metadata(), collection) == len(mine)

    query = RetrieveMemoriesRequest(query="how often is staging refreshed", limit=3)
    assert await retrieve_memories(target, query) == await retrieve_memories(source, query)
    assert await list_values(target, ListValuesRequest()) == await list_values(source, ListValuesRequest())
    # The anchored memory is in the fix index: reading its file brings it.
    with connect(fix_index_path(target.services.settings.data_dir)) as conn:
        [anchored] = items_for_file(conn, PROJECT, "src/app/loader.py", 5)
    assert anchored.item.endswith(memory(4, FACTS[4]).id)

    version = await target.services.axis_versions.get("full")
    for kind in ("memory", "experience", "value"):
        items = await everything(source, kind, limit=50)
        again = await import_items(target, ImportItemsRequest(items=items))
        assert (again.imported, again.present, again.re_embedded) == (0, len(items), 0)
    assert await target.services.axis_versions.get("full") == version  # nothing written, no re-clustering


async def test_vectors_are_reused_only_from_the_same_model(source: JobRun, target: JobRun) -> None:
    assert await _import_all(source, target, with_vectors=True) == 0
    async with job_run(target.services.settings.data_dir.parent.parent / "c") as other:
        assert await _import_all(source, other, with_vectors=True, model="another-model") > 0


async def test_a_bad_batch_is_refused_whole(source: JobRun, target: JobRun) -> None:
    items = await everything(source, "memory", with_vectors=True)
    line = items[0]
    assert isinstance(line, MemoryLine) and line.vector is not None
    short = line.model_copy(update={"vector": encode_vector(decode_vector(line.vector)[:-1])})
    with pytest.raises(ValidationError, match="has a vector of 383 numbers; this model makes 384"):
        await import_items(
            target, ImportItemsRequest(items=[short], embedding_model="hashing:384", dimension=384)
        )
    payload = {"items": [{"kind": "memory", "id": line.id, "payload": {"content": "no category"}}]}
    envelope = await execute(IMPORT_ITEMS, payload, target)
    assert envelope["error"]["type"] == "validation_error" and "category" in envelope["error"]["message"]
    blank = {"kind": "memory", "id": line.id, "payload": {**line.payload, "content": "  "}}
    envelope = await execute(IMPORT_ITEMS, {"items": [blank]}, target)
    assert "has no content" in envelope["error"]["message"]
    experience = next(
        e
        for e in await everything(source, "experience")
        if isinstance(e, ExperienceLine) and "surprise" in e.axes
    )
    point = experience.axes["surprise"]
    unsurprised = point.model_copy(update={"payload": {**point.payload, "surprise": None}})
    broken = ExperienceLine(id=experience.id, axes={**experience.axes, "surprise": unsurprised})
    with pytest.raises(ValidationError, match="has nothing to embed on axis surprise"):
        await import_items(target, ImportItemsRequest(items=[broken]))
    store = await target.services.vectors()
    assert not await store.collection_exists(MEMORIES)
    assert not await store.collection_exists(collection_for("full"))


def suggestion(text: str, axis: str = "full") -> ValueSuggestion:
    return ValueSuggestion(
        id=suggestion_id(axis, text),
        text=text,
        axis=axis,
        created_at=datetime.now(UTC),
        origin="repo-other",
    )


async def test_suggested_values_count_only_once_a_cluster_here_takes_them(source: JobRun) -> None:
    stored_text = (await list_values(source, ListValuesRequest())).results[0].text
    typical = await _typical_text(source, label=1)
    offered = [
        suggestion(typical),
        suggestion(f"  {stored_text}  "),  # said already, spacing aside
        suggestion("Bake sourdough bread at 250 degrees"),
        suggestion("Never trust a surprise", axis="root_cause"),
    ]
    results = (await adopt_values(source, AdoptValuesRequest(suggestions=offered))).results
    assert [r.outcome for r in results] == ["stored", "present", "rejected", "rejected"]
    assert results[0].cluster_id == "cluster_full_1"
    assert results[0].centroid_distance is not None and results[0].threshold_distance is not None
    assert results[0].centroid_distance <= results[0].threshold_distance
    assert results[2].reason is not None and "No cluster here takes it" in results[2].reason
    assert results[3].reason is not None and "No clusters to validate it against" in results[3].reason
    listed = (await list_values(source, ListValuesRequest())).results
    assert typical in [v.text for v in listed] and len(listed) == 2
    # Offered again: the one stored is present now; nothing else changes.
    again = (await adopt_values(source, AdoptValuesRequest(suggestions=offered))).results
    assert [r.outcome for r in again] == ["present", "present", "rejected", "rejected"]
    assert (await adopt_values(source, AdoptValuesRequest(suggestions=[]))).results == []

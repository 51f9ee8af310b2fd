"""The keyword side of recall: rows mirrored from the vector store's writes, BM25 over them, and
catching up with a store written without them."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from learning_memory.shared.contracts.memory import COLLECTION
from learning_memory.worker.recall import keywords, postings
from learning_memory.worker.recall.mirror import KeywordMirror
from learning_memory.worker.recall.texts import keyword_text
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import CollectionSpec, Filter, PointData
from tests.helpers import job_run

NOTES = [
    "Deploys go through fly.io with `fly deploy`; never push to heroku",
    "Tests use Redis database 13 so parallel runs do not collide",
    "Commit subjects stay under 72 characters",
]


def _point(text: str, **extra: object) -> PointData:
    vector = np.random.default_rng(len(text)).standard_normal(8).astype(np.float32)
    return PointData(str(uuid.uuid4()), vector, {"content": text, "tags": ["ops"], **extra})


@pytest.fixture
async def run(tmp_path: Path) -> AsyncIterator[JobRun]:
    async with job_run(tmp_path) as run:
        store = await run.services.vectors()
        await store.ensure_collection(CollectionSpec(COLLECTION, 8))
        yield run


def test_terms_drop_stopwords_and_repeats() -> None:
    assert keywords.terms("How do we deploy, and where do we deploy to? fly.io!") == ["deploy", "fly", "io"]
    assert keywords.terms("") == []


def test_texts_cover_each_kind() -> None:
    assert keyword_text(COLLECTION, {"content": "a note", "tags": ["x-y"]}) == "a note\nx y"
    assert keyword_text("values", {"text": "Check fixtures first"}) == "Check fixtures first"
    payload = {"root_cause": {"category": "test-isolation", "description": "shared fixture"}, "goal": "g"}
    assert keyword_text("experiences_root_cause", payload) == "test isolation\nshared fixture"
    assert "g" in keyword_text("experiences_full", payload).split("\n")


async def test_writes_and_deletes_are_mirrored(run: JobRun) -> None:
    store = await run.services.vectors()
    metadata = await run.services.metadata()
    points = [_point(text) for text in NOTES]
    await store.upsert(COLLECTION, points)
    await store.upsert(COLLECTION, points[:1])  # a retried job writes the same row again
    assert await keywords.count(metadata, COLLECTION) == 3

    found = await keywords.search(metadata, COLLECTION, keywords.terms("heroku deploy"), 10)
    assert [point for point, _ in found.hits] == [points[0].id]
    assert 0 < found.strength(found.hits[0][1]) <= 1
    # The words are the index's own: FTS5's syntax in a query is only words.
    quoted = await keywords.search(metadata, COLLECTION, ['redis"', "OR", "NEAR"], 10)
    assert [point for point, _ in quoted.hits] == [points[1].id]

    await store.delete(COLLECTION, [points[0].id])
    assert await keywords.point_ids(metadata, COLLECTION) == {points[1].id, points[2].id}
    nothing = await keywords.search(metadata, COLLECTION, ["heroku"], 10)
    assert nothing.hits == [] and nothing.strength(1.0) == 0.0


async def test_a_store_written_without_rows_catches_up(run: JobRun) -> None:
    mirror = await run.services.vectors()
    assert isinstance(mirror, KeywordMirror)
    metadata = await run.services.metadata()
    points = [_point(text) for text in NOTES]
    await mirror.inner.upsert(COLLECTION, points)  # as before the keyword side existed
    await keywords.put(metadata, COLLECTION, [("gone-point", "a row whose point is gone")])
    assert await mirror.sync(COLLECTION) == 4  # three written, one dropped
    assert await keywords.point_ids(metadata, COLLECTION) == {p.id for p in points}
    assert await mirror.sync(COLLECTION) == 0  # counts agree: nothing to do
    await mirror.synced(COLLECTION)  # checked a moment ago: not again
    await mirror.delete_by_filter(COLLECTION, Filter())
    await mirror.synced(COLLECTION)  # after a delete by filter, at once
    assert await keywords.count(metadata, COLLECTION) == 0


async def test_unknown_collections_have_no_keywords(run: JobRun) -> None:
    metadata = await run.services.metadata()
    with pytest.raises(ValueError, match="No keyword index"):
        await keywords.put(metadata, "code_units", [("a", "b")])
    assert (await keywords.search(metadata, COLLECTION, [], 5)).hits == []


async def test_warming_reads_the_hooks_indexes_ahead(run: JobRun) -> None:
    store = await run.services.vectors()
    metadata = await run.services.metadata()
    await store.upsert(COLLECTION, [_point(text) for text in NOTES])
    await keywords.warm(metadata)
    for collection in keywords.HOOK_COLLECTIONS:
        assert postings.index_for(metadata, collection).seen >= 0
    assert postings.index_for(metadata, COLLECTION).living == 3
    assert postings.index_for(metadata, "experiences_strategy").seen == -1  # not the hooks'


async def test_warming_a_closed_store_leaves_it_to_the_first_search(tmp_path: Path) -> None:
    async with job_run(tmp_path) as run:
        metadata = await run.services.metadata()
    await keywords.warm(metadata)  # closed: logged, not raised
    assert postings.index_for(metadata, COLLECTION).seen == -1


async def test_a_starting_worker_warms_them(tmp_path: Path) -> None:
    async with job_run(tmp_path) as run:
        await run.services.start()
        metadata = await run.services.metadata()
        warming = run.services._warming
        assert warming is not None
        await warming
        assert postings.index_for(metadata, COLLECTION).seen >= 0

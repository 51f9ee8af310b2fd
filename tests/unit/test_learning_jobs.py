"""The learning jobs, called directly and through the registry (inline settings, hashing embedder,
the real embedded vector store and metadata store): clusters of the sample themes, the cache and
its invalidation, validation, values that keep their clustering."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sklearn.metrics import adjusted_rand_score

from learning_memory.cli.samples import demo_entries, generated_entries
from learning_memory.shared.contracts.experiences import PersistExperienceRequest, collection_for
from learning_memory.shared.contracts.learning import (
    GET_CLUSTER_MEMBERS,
    GET_CLUSTERS,
    LIST_VALUES,
    STORE_VALUE,
    VALIDATE_VALUE,
    VALUES_COLLECTION,
    GetClusterMembersRequest,
    GetClustersRequest,
    ListValuesRequest,
    StoreValueRequest,
    ValidateValueRequest,
)
from learning_memory.shared.errors import InsufficientDataError, NotFoundError, ValidationError
from learning_memory.worker.jobs.experiences import axis_texts, persist_experience
from learning_memory.worker.jobs.learning import (
    clustering,
    get_cluster_members,
    get_clusters,
    list_values,
    store_value,
    validate_value,
)
from learning_memory.worker.registry import execute
from learning_memory.worker.services import JobRun
from tests.helpers import job_run
from tests.learning_data import ghap_entry

SAMPLES = generated_entries(80, seed=5)
ENTRIES = {ghap_entry(sample, n).id: ghap_entry(sample, n) for n, sample in enumerate(SAMPLES)}


@pytest.fixture
async def run(tmp_path: Path) -> AsyncIterator[JobRun]:
    async with job_run(tmp_path, "hashing:384") as run:
        yield run


async def persist_samples(run: JobRun, count: int, start: int = 0) -> None:
    for number in range(start, start + count):
        entry = ghap_entry(SAMPLES[number % len(SAMPLES)], number)
        await persist_experience(run, PersistExperienceRequest(entry=entry))


@pytest.fixture
async def stored(run: JobRun) -> JobRun:
    await persist_samples(run, len(SAMPLES))
    return run


def store_request(text: str, label: int = 0, axis: str = "full") -> StoreValueRequest:
    return StoreValueRequest(
        id=str(uuid.uuid4()), text=text, axis=axis, label=label, created_at=datetime.now(UTC)
    )


async def test_no_experiences_is_not_found_and_too_few_is_insufficient_data(run: JobRun) -> None:
    with pytest.raises(NotFoundError, match="No experiences on axis full"):
        await get_clusters(run, GetClustersRequest(axis="full"))
    await persist_samples(run, 19)
    with pytest.raises(InsufficientDataError, match="19 experiences; clustering needs at least 20"):
        await get_clusters(run, GetClustersRequest(axis="full"))
    envelope = await execute(GET_CLUSTERS, {"axis": "strategy"}, run)
    assert envelope["error"]["type"] == "insufficient_data"
    await persist_samples(run, 1, start=19)
    assert (await get_clusters(run, GetClustersRequest(axis="full"))).experience_count == 20


async def test_clusters_recover_the_sample_themes(stored: JobRun) -> None:
    found = await get_clusters(stored, GetClustersRequest(axis="full"))
    assert found.count == len(found.clusters) >= 4
    assert found.noise_count + sum(c.size for c in found.clusters) == found.experience_count == 80
    sizes = [c.size for c in found.clusters]
    assert sizes == sorted(sizes, reverse=True)
    assert [c.label for c in found.clusters] == list(range(found.count))
    assert all(c.cluster_id == f"cluster_full_{c.label}" for c in found.clusters)
    assert all(0.2 <= c.avg_weight <= 1.0 for c in found.clusters)
    # Against the known themes, through the cached clustering.
    clustered = await clustering(stored, "full")
    themes = {ghap_entry(SAMPLES[n], n).id: SAMPLES[n].theme for n in range(len(SAMPLES))}
    labels = [-1] * clustered.size
    for cluster in clustered.clusters:
        for index in cluster.members:
            labels[index] = cluster.label
    truth = [themes[ghap] for ghap in clustered.ghap_ids]
    clustered_only = [(t, label) for t, label in zip(truth, labels, strict=True) if label >= 0]
    # The hashing embedder only shares words; the real model does better (integration test, bench).
    assert adjusted_rand_score(*zip(*clustered_only, strict=True)) > 0.7


async def test_clustering_is_cached_until_the_axis_changes(stored: JobRun) -> None:
    cache = stored.services.clusterings
    first = await get_clusters(stored, GetClustersRequest(axis="full"))
    surprise = await get_clusters(stored, GetClustersRequest(axis="strategy"))
    assert cache.computed == 2
    again = await get_clusters(stored, GetClustersRequest(axis="full"))
    assert cache.computed == 2 and again == first
    version = await stored.services.axis_versions.get("full")

    # A new experience on the axis: the next call clusters again, with the new point.
    await persist_samples(stored, 1, start=len(SAMPLES))
    assert await stored.services.axis_versions.get("full") == version + 1
    fresh = await get_clusters(stored, GetClustersRequest(axis="full"))
    assert cache.computed == 3
    assert fresh.clustering_id != first.clustering_id and fresh.experience_count == 81
    # The strategy axis changed too (every experience has a strategy); re-persisting the same
    # experience replaces it, and that counts as a change as well.
    assert (
        await get_clusters(stored, GetClustersRequest(axis="strategy"))
    ).clustering_id != surprise.clustering_id
    await persist_samples(stored, 1, start=len(SAMPLES))
    assert (await get_clusters(stored, GetClustersRequest(axis="full"))).clustering_id != fresh.clustering_id
    assert cache.computed == 5


async def test_an_axis_the_new_experience_is_not_on_keeps_its_clustering(stored: JobRun) -> None:
    found = await get_clusters(stored, GetClustersRequest(axis="surprise"))
    plain = next(n for n in range(len(SAMPLES)) if "surprise" not in SAMPLES[n].resolve)
    await persist_experience(stored, PersistExperienceRequest(entry=ghap_entry(SAMPLES[plain], 10_000)))
    computed = stored.services.clusterings.computed
    assert await get_clusters(stored, GetClustersRequest(axis="surprise")) == found
    assert stored.services.clusterings.computed == computed


async def test_members_are_closest_first_with_their_story(stored: JobRun) -> None:
    response = await get_cluster_members(stored, GetClusterMembersRequest(axis="full", label=0, limit=100))
    assert response.cluster_id == "cluster_full_0" and response.count == response.size == len(
        response.members
    )
    scores = [member.score for member in response.members]
    assert scores == sorted(scores, reverse=True)
    member = response.members[0]
    assert member.goal and member.hypothesis and member.outcome_status and member.confidence_tier
    limited = await get_cluster_members(stored, GetClusterMembersRequest(axis="full", label=0, limit=3))
    assert [m.id for m in limited.members] == [m.id for m in response.members[:3]]
    assert limited.size == response.size


async def test_unknown_label_is_not_found_naming_the_labels(stored: JobRun) -> None:
    with pytest.raises(NotFoundError, match=r"No cluster cluster_full_99 .* labels 0 to \d+"):
        await get_cluster_members(stored, GetClusterMembersRequest(axis="full", label=99))
    envelope = await execute(VALIDATE_VALUE, {"text": "x", "axis": "full", "label": 99}, stored)
    assert envelope["error"]["type"] == "not_found"


async def _typical_text(run: JobRun, label: int = 0) -> str:
    """The text the most typical member of a cluster was embedded from: the closest to the centroid."""
    members = await get_cluster_members(run, GetClusterMembersRequest(axis="full", label=label, limit=1))
    entry = ENTRIES[members.members[0].ghap_id]
    assert entry.resolution is not None
    return axis_texts(entry, entry.resolution)["full"][:500]


async def test_validate_value_carries_its_metrics(stored: JobRun) -> None:
    good = await validate_value(
        stored, ValidateValueRequest(text=await _typical_text(stored), axis="full", label=0)
    )
    assert good.valid and good.reason is None and good.similarity is not None
    assert 0 <= good.centroid_distance <= good.threshold_distance
    assert good.cluster_id == "cluster_full_0" and good.cluster_size > 0
    bad = await validate_value(
        stored, ValidateValueRequest(text="Bake sourdough bread at 250 degrees", axis="full", label=0)
    )
    assert not bad.valid and bad.similarity is None
    assert bad.centroid_distance > bad.threshold_distance
    assert (
        bad.reason is not None and "threshold" in bad.reason and f"{bad.centroid_distance:.4f}" in bad.reason
    )


async def test_invalid_value_is_refused_and_not_stored(stored: JobRun) -> None:
    with pytest.raises(
        ValidationError, match=r"Value not stored: .* distance \d\.\d+ is above the threshold"
    ):
        await store_value(stored, store_request("Bake sourdough bread at 250 degrees"))
    store = await stored.services.vectors()
    assert not await store.collection_exists(VALUES_COLLECTION)
    payload = store_request("Water the plants twice a week").model_dump(mode="json")
    assert (await execute(STORE_VALUE, payload, stored))["error"]["type"] == "validation_error"
    assert (await list_values(stored, ListValuesRequest())).count == 0


async def test_valid_value_is_stored_once_and_keeps_its_clustering(stored: JobRun) -> None:
    request = store_request(await _typical_text(stored))
    record = await store_value(stored, request)
    found = await clustering(stored, "full")
    assert record.clustering_id == found.clustering_id
    assert record.cluster_size == len(record.member_ghap_ids) == found.clusters[0].size
    assert record.similarity_to_centroid > 0
    # A retried job writes the same point.
    await execute(STORE_VALUE, request.model_dump(mode="json"), stored)
    assert await (await stored.services.vectors()).count(VALUES_COLLECTION) == 1

    # New experiences re-cluster the axis; the value still says what it was validated against.
    await persist_samples(stored, 10, start=len(SAMPLES))
    assert (await clustering(stored, "full")).clustering_id != record.clustering_id
    [listed] = (await list_values(stored, ListValuesRequest(axis="full"))).results
    assert listed == record.model_copy(update={"member_ghap_ids": []})  # listing leaves members out
    [point] = await (await stored.services.vectors()).get(VALUES_COLLECTION, [record.id])
    assert json.loads(point.payload["member_ghap_ids"]) == record.member_ghap_ids


async def test_list_values_by_cluster_size_then_newest(stored: JobRun) -> None:
    found = await clustering(stored, "full")
    texts = [await _typical_text(stored, label) for label in (0, 1)]
    small_old = await store_value(stored, store_request(texts[1], label=1))
    big_old = await store_value(stored, store_request(texts[0], label=0))
    big_new = await store_value(stored, store_request(texts[0][:-1], label=0))
    listed = (await list_values(stored, ListValuesRequest())).results
    assert found.clusters[0].size >= found.clusters[1].size
    assert [v.id for v in listed] == [big_new.id, big_old.id, small_old.id]
    assert [v.id for v in (await list_values(stored, ListValuesRequest(limit=1))).results] == [big_new.id]
    further = ListValuesRequest(limit=1, offset=1)
    assert [v.id for v in (await list_values(stored, further)).results] == [big_old.id]
    assert (await list_values(stored, ListValuesRequest(axis="strategy"))).count == 0
    envelope = await execute(LIST_VALUES, {"axis": "full", "limit": 2}, stored)
    assert [v["id"] for v in envelope["ok"]["results"]] == [big_new.id, big_old.id]

    # One value by id, whatever its rank; an id that names no value (or no point at all) is left out.
    by_id = ListValuesRequest(ids=[small_old.id, str(uuid.uuid4()), "not-a-uuid"], limit=1)
    assert [v.id for v in (await list_values(stored, by_id)).results] == [small_old.id]
    elsewhere = ListValuesRequest(ids=[small_old.id], axis="strategy")
    assert (await list_values(stored, elsewhere)).results == []


async def test_list_values_with_no_collection_is_empty(run: JobRun) -> None:
    assert (await list_values(run, ListValuesRequest(axis="surprise"))).results == []
    assert not await (await run.services.vectors()).collection_exists(VALUES_COLLECTION)


async def test_members_through_the_registry_and_bad_requests(stored: JobRun) -> None:
    envelope = await execute(GET_CLUSTER_MEMBERS, {"axis": "full", "label": 0, "limit": 2}, stored)
    assert envelope["ok"]["count"] == 2
    for bad in (
        {"axis": "colour", "label": 0},
        {"axis": "full", "label": -1},
        {"axis": "full", "label": 0, "limit": 0},
    ):
        assert (await execute(GET_CLUSTER_MEMBERS, bad, stored))["error"]["type"] == "validation_error"
    too_long = {"text": "x" * 501, "axis": "full", "label": 0}
    assert (await execute(VALIDATE_VALUE, too_long, stored))["error"]["type"] == "validation_error"


async def test_demo_set_has_enough_experiences_for_every_axis(run: JobRun) -> None:
    for number, sample in enumerate(demo_entries()):
        await persist_experience(run, PersistExperienceRequest(entry=ghap_entry(sample, number)))
    store = await run.services.vectors()
    assert await store.count(collection_for("full")) == 64
    assert (await get_clusters(run, GetClustersRequest(axis="full"))).count >= 2


def test_an_axis_is_read_into_one_array_that_grows_past_the_count() -> None:
    import numpy as np

    from learning_memory.worker.jobs.learning import _Points

    points = _Points(expected=3)
    pages = [np.arange(8, dtype=np.float32).reshape(2, 4), np.ones((3, 4), dtype=np.float32)]
    for page in pages:  # 5 points where 3 were counted: a write since the count
        points.add(page)
        points.ids += [str(len(points.ids) + n) for n in range(page.shape[0])]
    rows = points.take()
    assert rows.dtype == np.float64 and rows.shape == (5, 4)
    assert (rows == np.concatenate(pages)).all()
    assert points.take().size == 0  # handed over: the points keep none

"""cluster_map and audit, called directly and through the registry (inline settings, hashing
embedder, the real embedded vector store, the real clustering and layout child processes)."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from learning_memory.cli.samples import generated_entries
from learning_memory.shared.contracts.browse import (
    AUDIT,
    CLUSTER_MAP,
    AuditRequest,
    BrowseExperiencesRequest,
    ClusterMapRequest,
    OverviewRequest,
)
from learning_memory.shared.contracts.context import item_id
from learning_memory.shared.contracts.experiences import (
    GhapEntry,
    PersistExperienceRequest,
    collection_for,
    point_id,
)
from learning_memory.shared.contracts.learning import VALUES_COLLECTION, GetClustersRequest, StoreValueRequest
from learning_memory.shared.contracts.memory import COLLECTION as MEMORIES
from learning_memory.worker.browse.cluster_map import layouts
from learning_memory.worker.browse.duplicates import LOOKED_KEPT, Looked, groups, looked, similar_pairs
from learning_memory.worker.browse.value_clusters import member_ids
from learning_memory.worker.jobs.browse import audit, browse_experiences, cluster_map, overview
from learning_memory.worker.jobs.experiences import axis_texts, persist_experience
from learning_memory.worker.jobs.learning import clustering, get_clusters, store_value
from learning_memory.worker.registry import execute
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import Filter, PointData, ScoredRecord, Vector, VectorStore
from tests.browse_data import entry, persist, record_feedback, remember, write_log
from tests.helpers import job_run

SAMPLES = generated_entries(60, seed=5)


@pytest.fixture
async def run(tmp_path: Path) -> AsyncIterator[JobRun]:
    async with job_run(tmp_path, "hashing:384") as run:
        yield run


@pytest.fixture
async def stored(run: JobRun) -> list[GhapEntry]:
    return await persist(run, SAMPLES, range(len(SAMPLES)))


async def set_payload(run: JobRun, collection: str, point: str, **fields: object) -> None:
    store = await run.services.vectors()
    [record] = await store.get(collection, [point], with_vectors=True)
    assert record.vector is not None
    await store.upsert(collection, [PointData(point, record.vector, {**record.payload, **fields})])


async def typical_value(run: JobRun, stored: list[GhapEntry], label: int = 0) -> str:
    """Store a value made of the most typical member's own text: it validates against its cluster."""
    found = await clustering(run, "full")
    ghap = found.ghap_ids[found.clusters[label].members[0]]
    member = next(e for e in stored if e.id == ghap)
    assert member.resolution is not None
    text = axis_texts(member, member.resolution)["full"][:500]
    request = StoreValueRequest(
        id=str(uuid.uuid4()), text=text, axis="full", label=label, created_at=datetime.now(UTC)
    )
    return (await store_value(run, request)).id


def test_duplicate_pairs_join_into_groups_most_similar_first() -> None:
    found = groups({("a", "b"): 0.93, ("b", "c"): 0.95, ("x", "y"): 0.99, ("p", "q"): 0.93})
    assert found == [["x", "y"], ["a", "b", "c"], ["p", "q"]]
    assert groups({}) == []


def test_a_values_members_read_from_a_json_string_or_a_list() -> None:
    assert member_ids({"member_ghap_ids": json.dumps(["g1", "g2"])}) == ["g1", "g2"]
    assert member_ids({"member_ghap_ids": ["g3"]}) == ["g3"]
    assert member_ids({"member_ghap_ids": "not json"}) == member_ids({}) == []


async def test_the_map_has_get_clusters_labels_and_keeps_its_layout(
    run: JobRun, stored: list[GhapEntry]
) -> None:
    clusters = await get_clusters(run, GetClustersRequest(axis="full"))
    found = await cluster_map(run, ClusterMapRequest(axis="full"))
    assert found.clustering_id == clusters.clustering_id and not found.cached
    assert len(found.points) == found.experience_count == len(stored)
    assert all(-1.0 <= p.x <= 1.0 and -1.0 <= p.y <= 1.0 for p in found.points)
    assert [(c.cluster_id, c.label, c.size) for c in found.clusters] == [
        (c.cluster_id, c.label, c.size) for c in clusters.clusters
    ]
    assert found.noise_count == clusters.noise_count
    held = await clustering(run, "full")
    by_point = {p.id: p for p in found.points}
    for cluster, held_cluster in zip(found.clusters, held.clusters, strict=True):
        # Members most typical first, as get_cluster_members orders them; each point has the label.
        assert cluster.members == [held.point_ids[i] for i in held_cluster.members]
        assert {by_point[m].label for m in cluster.members} == {cluster.label}
        assert cluster.shown == cluster.size
    first = next(p for p in found.points if p.ghap_id == stored[3].id)
    assert first.goal == stored[3].goal and first.source == stored[3].source
    # Separate groups: each cluster's points lie closer to their own middle than to another's.
    middles = np.array([(c.x, c.y) for c in found.clusters])
    clustered = [p for p in found.points if p.label >= 0]
    places = np.array([(p.x, p.y) for p in clustered])
    nearest = np.argmin(np.linalg.norm(places[:, None] - middles[None], axis=2), axis=1)
    assert np.mean(nearest == np.array([p.label for p in clustered])) > 0.9

    # The same clustering: the layout is read, not computed; a project's map is a part of it.
    again = await cluster_map(run, ClusterMapRequest(axis="full"))
    assert again.cached and again.points == found.points and layouts(run.services).computed == 1
    assert again.points[0] is found.points[0]  # the points kept, not read again
    await remember(run, "A memory stored meanwhile changes the store: the points are read again")
    reread = await cluster_map(run, ClusterMapRequest(axis="full"))
    assert reread.points == found.points and reread.points[0] is not found.points[0]
    only_b = await cluster_map(run, ClusterMapRequest(axis="full", project="repo-b"))
    assert {p.id for p in only_b.points} == {
        p.id for p in found.points if p.ghap_id in _ids(stored, "repo-b")
    }
    assert all(by_point[p.id] == p for p in only_b.points)
    assert all(c.shown <= c.size and c.members for c in only_b.clusters)

    # A new experience on the axis: a new clustering, laid out anew.
    await persist(run, SAMPLES, range(len(stored), len(stored) + 1))
    fresh = await cluster_map(run, ClusterMapRequest(axis="full"))
    assert fresh.clustering_id != found.clustering_id and not fresh.cached
    assert len(fresh.points) == len(stored) + 1 and layouts(run.services).computed == 2


async def test_values_show_on_their_cluster_and_moved_ones_in_the_audit(
    run: JobRun, stored: list[GhapEntry]
) -> None:
    current = await typical_value(run, stored, label=0)
    refitted = await typical_value(run, stored, label=1)
    gone = await typical_value(run, stored, label=2)
    far = await typical_value(run, stored, label=0)
    # As if validated against an earlier clustering: one whose experiences are still together,
    # one whose experiences no cluster holds now, one whose members moved away from it.
    await set_payload(
        run, VALUES_COLLECTION, refitted, clustering_id="full-v0-n20", cluster_id="cluster_full_9"
    )
    strangers = json.dumps([f"ghap_gone_{n}" for n in range(5)])
    await set_payload(run, VALUES_COLLECTION, gone, clustering_id="full-v0-n20", member_ghap_ids=strangers)
    await set_payload(run, VALUES_COLLECTION, far, clustering_id="full-v0-n20")
    store = await run.services.vectors()
    [far_record] = await store.get(VALUES_COLLECTION, [far], with_vectors=True)
    assert far_record.vector is not None
    opposite = [-x for x in far_record.vector]
    await store.upsert(VALUES_COLLECTION, [PointData(far, opposite, far_record.payload)])

    found = await cluster_map(run, ClusterMapRequest(axis="full"))
    values = {v.id: (c.label, v.state) for c in found.clusters for v in c.values}
    assert values == {current: (0, "current"), refitted: (1, "fits")}

    report = await audit(run, AuditRequest())
    moved = {m.value.id: m for m in report.moved_values.values}
    assert set(moved) == {gone, far} and report.moved_values.checked == 4 and report.moved_values.total == 2
    assert moved[gone].state == "gone" and moved[gone].current_cluster_id is None
    assert moved[far].state == "no_longer_fits" and moved[far].current_cluster_id == "cluster_full_0"
    assert (
        moved[far].current_clustering_id == found.clustering_id and moved[far].clustering_id == "full-v0-n20"
    )
    assert "above the threshold" in moved[far].reason
    limited = await audit(run, AuditRequest(limit=1))
    assert len(limited.moved_values.values) == 1 and limited.moved_values.total == 2


async def test_values_of_an_axis_too_small_to_cluster_are_gone(run: JobRun, stored: list[GhapEntry]) -> None:
    value = await typical_value(run, stored)
    await set_payload(run, VALUES_COLLECTION, value, axis="root_cause")
    report = await audit(run, AuditRequest())
    [moved] = report.moved_values.values
    assert (moved.axis, moved.state, moved.current_clustering_id) == ("root_cause", "gone", None)


async def test_audit_finds_duplicates_stale_and_never_shown(run: JobRun, stored: list[GhapEntry]) -> None:
    memories = await remember(
        run,
        "The deploy script reads AWS_PROFILE from the environment",
        "the deploy script reads AWS_PROFILE from the environment.",
        "Tests need the fake clock fixture",
        "Use uv rather than pip in this repository",
    )
    await remember(run, "The deploy script reads AWS_PROFILE from the environment!", project="repo-b")
    # The same experience told twice under two ids.
    twin = entry(SAMPLES, 4).model_copy(update={"id": "ghap_twin"})
    await persist_experience(run, PersistExperienceRequest(entry=twin))
    await set_payload(run, MEMORIES, memories[2].id, stale="changed")
    await set_payload(run, collection_for("full"), point_id(stored[6].id, "full"), stale="gone")
    data_dir = run.services.settings.data_dir
    record_feedback(data_dir, "repo-a", "s1", {item_id("memory", memories[3].id): True})
    write_log(
        data_dir,
        "repo-a",
        "s2",
        [{"type": "injected", "items": [item_id("experience", stored[0].id)], "via": "brief"}],
    )

    report = await audit(run, AuditRequest(project="repo-a"))
    [memory_group] = report.duplicate_memories.groups
    assert [i.id for i in memory_group.items] == [memories[0].id, memories[1].id]
    assert memory_group.similarity >= 0.92 and memory_group.pairs[0].similarity == memory_group.similarity
    assert report.duplicate_memories.scanned == report.duplicate_memories.records == 4
    dup_experiences = [sorted(i.id for i in g.items) for g in report.duplicate_experiences.groups]
    assert sorted([stored[4].id, "ghap_twin"]) in dup_experiences
    assert all(i.project == "repo-a" for g in report.duplicate_experiences.groups for i in g.items)

    assert report.stale.total == 2
    assert {(i.kind, i.id, i.stale) for i in report.stale.items} == {
        ("memory", memories[2].id, "changed"),
        ("experience", stored[6].id, "gone"),
    }
    everything = 4 + len(_ids(stored, "repo-a")) + 1
    assert report.never_injected.total == everything - 2
    never = report.never_injected.items
    assert len(never) == 20 and [i.created_at for i in never] == sorted(
        i.created_at for i in never if i.created_at
    )
    assert item_id("experience", stored[0].id) not in {item_id(i.kind, i.id) for i in never}

    # Every project: the third copy (repo-b) joins the memories' group; a scan bound is told.
    wide = await audit(run, AuditRequest(limit=5))
    assert len(wide.duplicate_memories.groups[0].items) == 3
    assert len(wide.stale.items) == 2 and len(wide.never_injected.items) == 5
    # Only the newest are scanned (the two newest memories are no duplicates); the bound is told.
    bounded = await audit(run, AuditRequest(scan_limit=2))
    assert bounded.duplicate_memories.groups == []
    assert (bounded.duplicate_memories.scanned, bounded.duplicate_memories.records) == (2, 5)

    envelope = await execute(AUDIT, {"similarity": 0.2}, run)
    assert envelope["error"]["type"] == "validation_error"


async def test_an_empty_store_audits_clean_and_maps_nothing(run: JobRun) -> None:
    report = await audit(run, AuditRequest())
    assert report.duplicate_memories.total == report.stale.total == report.never_injected.total == 0
    assert report.moved_values.checked == 0
    envelope = await execute(CLUSTER_MAP, {"axis": "full"}, run)
    assert envelope["error"]["type"] == "not_found"


def _ids(stored: list[GhapEntry], project: str) -> set[str]:
    return {e.id for e in stored if e.project == project}


async def test_what_a_person_set_aside_is_left_out_of_the_audit_but_browsable(
    run: JobRun, stored: list[GhapEntry]
) -> None:
    twin = entry(SAMPLES, 4).model_copy(update={"id": "ghap_twin"})
    await persist_experience(run, PersistExperienceRequest(entry=twin))
    value = await typical_value(run, stored)
    await set_payload(run, VALUES_COLLECTION, value, retired=True, clustering_id="old", member_ghap_ids="[]")
    wrong = point_id("ghap_twin", "full")
    await set_payload(run, collection_for("full"), wrong, wrong=True, stale="changed")

    report = await audit(run, AuditRequest())
    assert "ghap_twin" not in {i.id for g in report.duplicate_experiences.groups for i in g.items}
    assert report.stale.total == 0 and report.moved_values.values == []
    never = report.never_injected
    assert never.total == len(stored) and value not in {i.id for i in never.items}
    counts = {c.project: c for c in (await overview(run, OverviewRequest())).projects}
    assert counts["repo-a"].set_aside == 1 and counts[None].set_aside == 1  # the value has no project
    # Browsing still finds it, with its flag.
    found = await browse_experiences(run, BrowseExperiencesRequest(query=twin.goal, limit=3))
    assert any(hit.ghap_id == "ghap_twin" and hit.wrong for hit in found.results)


class _Counting:
    """The store, counting the neighbour searches made of it."""

    def __init__(self, inner: VectorStore) -> None:
        self.inner = inner
        self.searches = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def search(self, collection: str, vector: Vector, **options: Any) -> list[ScoredRecord]:
        self.searches += 1
        found: list[ScoredRecord] = await self.inner.search(collection, vector, **options)
        return found


async def test_a_second_look_searches_only_the_records_that_changed(run: JobRun) -> None:
    first, twin, other = await remember(
        run,
        "The deploy script reads AWS_PROFILE from the environment",
        "the deploy script reads AWS_PROFILE from the environment.",
        "Tests need the fake clock fixture",
    )
    store = _Counting(await run.services.vectors())
    kept = Looked()
    found = await similar_pairs(store, MEMORIES, Filter(), 0.9, 100, kept)
    assert store.searches == 3
    assert set(found.similar) == {tuple(sorted((first.id, twin.id)))}

    store.searches = 0
    again = await similar_pairs(store, MEMORIES, Filter(), 0.9, 100, kept)
    assert store.searches == 0 and again.similar == found.similar

    # A new copy is searched, and so is a record whose vector changed (edited to say the same).
    [third] = await remember(run, "The deploy script reads AWS_PROFILE from the environment!")
    [point] = await store.get(MEMORIES, [first.id], with_vectors=True)
    [changed] = await store.get(MEMORIES, [other.id])
    await store.upsert(MEMORIES, [PointData(other.id, point.vector, changed.payload)])
    store.searches = 0
    later = await similar_pairs(store, MEMORIES, Filter(), 0.9, 100, kept)
    assert store.searches == 2
    assert {pair for pair in later.similar if other.id in pair} == {
        tuple(sorted((other.id, first.id))),
        tuple(sorted((other.id, twin.id))),
        tuple(sorted((other.id, third.id))),
    }


def test_the_kept_looks_are_per_place_and_bounded() -> None:
    one = looked("/data/a", MEMORIES, Filter())
    assert looked("/data/a", MEMORIES, Filter()) is one
    assert looked("/data/b", MEMORIES, Filter()) is not one
    for n in range(LOOKED_KEPT):
        looked(f"/data/many-{n}", MEMORIES, Filter())
    assert looked("/data/a", MEMORIES, Filter()) is not one  # the least recently used went

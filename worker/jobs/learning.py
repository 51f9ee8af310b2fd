"""Learning jobs: clusters of an axis, a cluster's members, and values validated against a cluster.

Every job works on the axis's current clustering (computed on first need, then cached until the
axis's experiences change, see ``worker.learning.cache``). A value is validated and stored in
one job, so an invalid value can never be stored, and it keeps the clustering it was validated
against.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from learning_memory.shared.anchored_items import put_item
from learning_memory.shared.contracts.context import item_id
from learning_memory.shared.contracts.experiences import TIER_WEIGHTS, collection_for
from learning_memory.shared.contracts.learning import (
    GET_CLUSTER_MEMBERS,
    GET_CLUSTERS,
    LIST_VALUES,
    MIN_EXPERIENCES,
    STORE_VALUE,
    VALIDATE_VALUE,
    VALUES_COLLECTION,
    ClusterInfo,
    ClusterMember,
    GetClusterMembersRequest,
    GetClusterMembersResponse,
    GetClustersRequest,
    GetClustersResponse,
    ListValuesRequest,
    ListValuesResponse,
    StoreValueRequest,
    ValidateValueRequest,
    ValueRecord,
    ValueValidation,
    cluster_id,
)
from learning_memory.shared.errors import InsufficientDataError, NotFoundError, ValidationError
from learning_memory.shared.fix_index import fix_index_path
from learning_memory.shared.log import get_logger
from learning_memory.worker.allocator import give_back
from learning_memory.worker.capture.feedback import with_outcomes
from learning_memory.worker.learning.apart import labels_apart
from learning_memory.worker.learning.cache import Clustering, fingerprint
from learning_memory.worker.learning.clusterer import (
    Cluster,
    Verdict,
    judge,
    normalise,
    summarise,
)
from learning_memory.worker.learning.decay import listed_value
from learning_memory.worker.learning.value_anchors import shared_anchors
from learning_memory.worker.recall.hybrid import matches
from learning_memory.worker.registry import job
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import (
    CollectionSpec,
    Filter,
    MatchValue,
    PayloadIndexType,
    PointData,
    VectorStore,
    is_point_id,
)

log = get_logger(__name__)

READ_PAGE = 1000  # points per read when clustering an axis
# What clustering reads of a payload ("wrong": marked so by a person, left out; worker.curation).
CLUSTER_FIELDS = ("ghap_id", "weight", "confidence_tier", "wrong")

VALUE_INDEXES: dict[str, PayloadIndexType] = {
    "axis": "keyword",
    "cluster_size": "integer",
    "created_ts": "float",
    # Which values a session's edits may have outdated (worker.jobs.item_staleness).
    "project": "keyword",
    "anchor_files": "keyword",
}


async def clustering(run: JobRun, axis: str) -> Clustering:
    """The axis's current clustering; NotFoundError with no experiences, InsufficientDataError
    with fewer than MIN_EXPERIENCES."""
    collection = collection_for(axis)
    store = await run.services.vectors()
    count = await store.count(collection) if await store.collection_exists(collection) else 0
    if count == 0:
        raise NotFoundError(f"No experiences on axis {axis} yet: resolve GHAP entries (resolve_ghap) first")
    if count < MIN_EXPERIENCES:
        raise InsufficientDataError(
            f"Axis {axis} has {count} experiences; clustering needs at least {MIN_EXPERIENCES}"
        )
    version = await run.services.axis_versions.get(axis)

    async def compute(key: str) -> Clustering:
        return await _compute(run, axis, key)

    return await run.services.clusterings.get(axis, fingerprint(axis, version, count), compute)


async def _compute(run: JobRun, axis: str, key: str) -> Clustering:
    started = time.perf_counter()
    store = await run.services.vectors()
    collection = collection_for(axis)
    points = await _read_points(store, collection)
    vectors = normalise(points.take(), in_place=True)
    settings = run.services.settings
    dimensions = settings.cluster_dimensions
    labels = await labels_apart(vectors, settings.min_cluster_size, settings.min_samples, dimensions)
    clusters = summarise(vectors, points.weights, labels)
    # The axis's vectors (the clusters keep their own centroids): freed and given back now.
    width = vectors.shape[1]
    del vectors
    give_back()
    seconds = time.perf_counter() - started
    result = Clustering(
        axis=axis,
        clustering_id=key,
        point_ids=points.ids,
        ghap_ids=points.ghap_ids,
        clusters=clusters,
        noise_count=int(np.sum(labels < 0)),
        dimensions=min(dimensions, width) if dimensions > 0 else width,
        computed_at=datetime.now(UTC),
        seconds=seconds,
    )
    log.info(
        "learning.clustered",
        axis=axis,
        clustering_id=key,
        experiences=len(points.ids),
        clusters=len(clusters),
        noise=result.noise_count,
        dimensions=result.dimensions,
        seconds=round(seconds, 3),
    )
    return result


@dataclass
class _Points:
    """An axis's points as read: ids in order, and their vectors in one float64 array filled
    page by page (no pages kept, no concatenation: the array is the only copy)."""

    expected: int = 0  # the axis's count when the read began; writes since grow the array
    ids: list[str] = field(default_factory=list)
    ghap_ids: list[str] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    rows: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)))
    seen: set[str] = field(default_factory=set)  # a write between pages may shift one in twice

    def add(self, page: npt.NDArray[np.float32]) -> None:
        filled = len(self.ids)
        need = filled + page.shape[0]
        if self.rows.shape[0] < need:
            grown = np.empty((max(need, self.expected, 2 * self.rows.shape[0]), page.shape[1]))
            if filled:
                grown[:filled] = self.rows[:filled]
            self.rows = grown
        self.rows[filled:need] = page  # float32 to float64: exact, as np.array(float32) was

    def take(self) -> npt.NDArray[np.float64]:
        """The vectors read, handed over: the points keep no reference to them."""
        rows, self.rows = self.rows[: len(self.ids)], np.zeros((0, 0))
        self.seen.clear()
        return rows


async def _read_points(store: VectorStore, collection: str) -> _Points:
    """Every point of ``collection`` in id order (the same points always come in the same order,
    so they get the same labels), read a page at a time with only the payload fields clustering
    uses: the store's records of a whole axis at once (Python floats and full payloads) weigh
    many times the array they end as. By cursor: paging by offset re-reads every earlier point
    for each page, which for a big axis holds far more memory than the axis itself."""
    points = _Points(expected=await store.count(collection))
    async for page in store.pages(
        collection, size=READ_PAGE, with_vectors=True, payload_fields=CLUSTER_FIELDS
    ):
        kept = [
            record
            for record in page
            if record.vector is not None and record.id not in points.seen and not record.payload.get("wrong")
        ]
        if kept:
            points.add(np.asarray([record.vector for record in kept], dtype=np.float32))
        for record in kept:
            points.seen.add(record.id)
            points.ids.append(record.id)
            points.ghap_ids.append(str(record.payload.get("ghap_id", "")))
            points.weights.append(_weight(record.payload))
    return points


def _weight(payload: dict[str, Any]) -> float:
    weight = payload.get("weight")
    if isinstance(weight, int | float):
        return float(weight)
    return TIER_WEIGHTS.get(str(payload.get("confidence_tier")), TIER_WEIGHTS["bronze"])


def _cluster(found: Clustering, label: int) -> Cluster:
    if label < len(found.clusters):
        return found.clusters[label]
    known = f"labels 0 to {len(found.clusters) - 1}" if found.clusters else "no clusters (all noise)"
    raise NotFoundError(
        f"No cluster {cluster_id(found.axis, label)} in the current clustering of axis {found.axis} "
        f"({found.clustering_id}: {known}); call get_clusters for the current ones"
    )


@job(GET_CLUSTERS)
async def get_clusters(run: JobRun, request: GetClustersRequest) -> GetClustersResponse:
    found = await clustering(run, request.axis)
    clusters = [
        ClusterInfo(
            cluster_id=cluster_id(request.axis, c.label),
            label=c.label,
            size=c.size,
            avg_weight=round(min(1.0, max(0.0, c.avg_weight)), 6),
        )
        for c in found.clusters  # labels are numbered by size, so this is largest first
    ]
    return GetClustersResponse(
        axis=request.axis,
        clusters=clusters,
        count=len(clusters),
        noise_count=found.noise_count,
        clustering_id=found.clustering_id,
        experience_count=found.size,
    )


def _member(point: str, payload: dict[str, Any], similarity: float) -> ClusterMember:
    fields = {key: value for key, value in payload.items() if key in ClusterMember.model_fields}
    return ClusterMember(**{**fields, "id": point, "score": min(1.0, max(0.0, similarity))})


@job(GET_CLUSTER_MEMBERS)
async def get_cluster_members(run: JobRun, request: GetClusterMembersRequest) -> GetClusterMembersResponse:
    found = await clustering(run, request.axis)
    cluster = _cluster(found, request.label)
    chosen = cluster.members[: request.limit]
    ids = [found.point_ids[i] for i in chosen]
    records = {r.id: r for r in await (await run.services.vectors()).get(collection_for(request.axis), ids)}
    members = [
        # For unit vectors, cosine similarity = 1 - distance² / 2.
        _member(point, records[point].payload, 1.0 - float(distance) ** 2 / 2)
        for point, distance in zip(ids, cluster.distances[: request.limit], strict=True)
        if point in records  # replaced since it was clustered: the next call re-clusters anyway
    ]
    members = await with_outcomes(run.services.settings.data_dir, members)
    return GetClusterMembersResponse(
        cluster_id=cluster_id(request.axis, cluster.label),
        axis=request.axis,
        members=members,
        count=len(members),
        size=cluster.size,
        clustering_id=found.clustering_id,
    )


async def _judge(run: JobRun, axis: str, label: int, text: str) -> tuple[Clustering, Cluster, Verdict]:
    found = await clustering(run, axis)
    cluster = _cluster(found, label)
    vector = (await (await run.services.embedder()).embed([text]))[0]
    return found, cluster, judge(cluster, vector, run.services.settings.value_threshold_k)


def _reason(verdict: Verdict, k: float) -> str | None:
    if verdict.valid:
        return None
    return (
        f"Too far from the cluster's centroid: distance {verdict.distance:.4f} is above the threshold "
        f"{verdict.threshold:.4f} (mean + {k:g}·std of the members' distances); similarity to the "
        f"centroid {verdict.similarity:.4f}. Say what the cluster's members have in common, in their words."
    )


@job(VALIDATE_VALUE)
async def validate_value(run: JobRun, request: ValidateValueRequest) -> ValueValidation:
    found, cluster, verdict = await _judge(run, request.axis, request.label, request.text)
    return ValueValidation(
        valid=verdict.valid,
        similarity=round(verdict.similarity, 6) if verdict.valid else None,
        centroid_distance=round(verdict.distance, 6),
        threshold_distance=round(verdict.threshold, 6),
        reason=_reason(verdict, run.services.settings.value_threshold_k),
        cluster_id=cluster_id(request.axis, cluster.label),
        cluster_size=cluster.size,
        clustering_id=found.clustering_id,
    )


@job(STORE_VALUE)
async def store_value(run: JobRun, request: StoreValueRequest) -> ValueRecord:
    found, cluster, verdict = await _judge(run, request.axis, request.label, request.text)
    if not verdict.valid:
        raise ValidationError(
            f"Value not stored: it does not fit {cluster_id(request.axis, cluster.label)}. "
            f"{_reason(verdict, run.services.settings.value_threshold_k)}"
        )
    members = [found.point_ids[i] for i in cluster.members]
    member_points = await (await run.services.vectors()).get(collection_for(request.axis), members)
    project, anchors = shared_anchors(point.payload for point in member_points)
    record = ValueRecord(
        id=request.id,
        text=request.text,
        axis=request.axis,
        cluster_id=cluster_id(request.axis, cluster.label),
        cluster_size=cluster.size,
        similarity_to_centroid=round(verdict.similarity, 6),
        created_at=request.created_at,
        clustering_id=found.clustering_id,
        member_ghap_ids=[found.ghap_ids[i] for i in cluster.members],
        centroid_distance=round(verdict.distance, 6),
        threshold_distance=round(verdict.threshold, 6),
        support=cluster.size,
        anchors=anchors,
        project=project,
    )
    if project is not None:
        index = fix_index_path(run.services.settings.data_dir)
        item = item_id("value", request.id)
        await asyncio.to_thread(put_item, index, project, item, anchors, request.text, request.created_at)
    embedder = await run.services.embedder()
    vector = (await embedder.embed([request.text]))[0]  # from the embedding cache by now
    store = await run.services.collection(
        CollectionSpec(VALUES_COLLECTION, embedder.dimension, VALUE_INDEXES)
    )
    payload = record.model_dump(mode="json", exclude={"id", "age_days", "weight"})
    payload["created_ts"] = request.created_at.timestamp()
    # Its cluster's experiences bear it out now; later ones close to it keep it fresh (decay).
    payload["evidence_ts"] = request.created_at.timestamp()
    payload["support"] = cluster.size
    payload["anchor_files"] = sorted({anchor.file for anchor in anchors})
    # One string, not a list: at 5,000 experiences a cluster has hundreds of members, and the
    # vector engine converts every list item on each read (list_values reads every value).
    payload["member_ghap_ids"] = json.dumps(record.member_ghap_ids)
    # The id came with the request: a retried job replaces the point it already wrote.
    await store.upsert(VALUES_COLLECTION, [PointData(request.id, vector, payload)])
    log.info(
        "learning.value_stored", id=request.id, cluster_id=record.cluster_id, clustering=found.clustering_id
    )
    return record


@job(LIST_VALUES)
async def list_values(run: JobRun, request: ListValuesRequest) -> ListValuesResponse:
    store = await run.services.vectors()
    if not await store.collection_exists(VALUES_COLLECTION):
        return ListValuesResponse(results=[], count=0)
    where = Filter((MatchValue("axis", request.axis),) if request.axis else ())
    if request.ids:
        # Point ids are UUIDs; any other id names no value (the store would refuse it).
        wanted = [value_id for value_id in request.ids if is_point_id(value_id)]
        records = [r for r in await store.get(VALUES_COLLECTION, wanted) if matches(where, r.payload)]
    else:
        # Values are few (one per lesson learned): sort them all, then cut.
        total = await store.count(VALUES_COLLECTION, where)
        records = await store.scroll(VALUES_COLLECTION, limit=total + 100, filter=where)
    half_life = run.services.settings.value_half_life_days
    values = [
        listed_value(r.id, r.payload, half_life, members=request.include_members)
        for r in records
        if request.include_retired or not r.payload.get("retired")
    ]
    # What many experiences bore out lately first: an old lesson nothing repeated sinks.
    values.sort(key=lambda v: (-v.support * v.weight, -v.created_at.timestamp(), v.id))
    chosen = values[request.offset : request.offset + request.limit]
    return ListValuesResponse(results=chosen, count=len(chosen))

"""The cluster map of an axis: its experiences laid out in the plane, with the labels of the
axis's current clustering (the very one get_clusters answers from) and the values that hold
for each cluster.

The layout (``worker.learning.layout``) is computed once per clustering and kept by its
``clustering_id``: a new clustering (an experience stored or replaced on the axis) is laid out
anew, and every other call only reads payloads.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from learning_memory.shared.context_lines import one_line
from learning_memory.shared.contracts.browse import (
    ClusterMapRequest,
    ClusterMapResponse,
    MapCluster,
    MapPoint,
    MapValue,
)
from learning_memory.shared.contracts.experiences import collection_for
from learning_memory.shared.contracts.learning import cluster_id
from learning_memory.shared.log import get_logger
from learning_memory.worker.allocator import give_back
from learning_memory.worker.browse.memo import store_state
from learning_memory.worker.browse.records import all_records, project_filter
from learning_memory.worker.browse.value_clusters import value_standings
from learning_memory.worker.jobs.learning import _read_points, clustering
from learning_memory.worker.learning.cache import Clustering
from learning_memory.worker.learning.clusterer import normalise
from learning_memory.worker.learning.layout import PCA_DIMENSIONS, layout_apart
from learning_memory.worker.lru import Recent
from learning_memory.worker.recall.search import set_aside
from learning_memory.worker.services import JobRun, WorkerServices
from learning_memory.worker.vectors.base import Record

log = get_logger(__name__)
MAP_FIELDS = ("ghap_id", "goal", "outcome_status", "source", "domain", "confidence_tier")
GOAL_CHARS = 120


@dataclass(frozen=True)
class Layout:
    clustering_id: str
    places: dict[str, tuple[float, float]]  # by point id
    seconds: float


@dataclass
class _Entry:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    layout: Layout | None = None


class LayoutCache:
    """One layout per axis, for one clustering; concurrent callers wait for one computation."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self.computed = 0

    async def get(self, run: JobRun, found: Clustering) -> tuple[Layout, bool]:
        """The layout of ``found``, and whether it was held already."""
        entry = self._entries.setdefault(found.axis, _Entry())
        if entry.layout is not None and entry.layout.clustering_id == found.clustering_id:
            return entry.layout, True
        async with entry.lock:
            if entry.layout is not None and entry.layout.clustering_id == found.clustering_id:
                return entry.layout, True
            entry.layout = None  # the old one's memory goes before the new one is made
            entry.layout = await _compute(run, found)
            self.computed += 1
            return entry.layout, False


# Per worker services (one per process in practice), gone with them.
_CACHES: weakref.WeakKeyDictionary[WorkerServices, LayoutCache] = weakref.WeakKeyDictionary()


def layouts(services: WorkerServices) -> LayoutCache:
    cache = _CACHES.get(services)
    if cache is None:
        cache = _CACHES[services] = LayoutCache()
    return cache


async def _compute(run: JobRun, found: Clustering) -> Layout:
    started = time.perf_counter()
    store = await run.services.vectors()
    points = await _read_points(store, collection_for(found.axis))
    # The clustering's points: one written since would make a new clustering on the next call.
    wanted = set(found.point_ids)
    keep = [i for i, point in enumerate(points.ids) if point in wanted]
    raw = points.take()
    vectors = normalise(raw[keep], in_place=True)  # the selection is a copy already
    del raw
    labels = np.full(len(found.point_ids), -1, dtype=np.intp)
    for cluster in found.clusters:
        labels[cluster.members] = cluster.label
    index = {point: i for i, point in enumerate(found.point_ids)}
    kept_labels = labels[[index[points.ids[i]] for i in keep]]
    # In the space hdbscan saw (its principal components), so that its clusters are what t-SNE keeps.
    coords = await layout_apart(vectors, kept_labels, min(found.dimensions, PCA_DIMENSIONS))
    del vectors
    give_back()
    places = {
        points.ids[i]: (round(float(x), 5), round(float(y), 5))
        for i, (x, y) in zip(keep, coords, strict=True)
    }
    seconds = time.perf_counter() - started
    log.info(
        "browse.laid_out",
        axis=found.axis,
        clustering_id=found.clustering_id,
        points=len(places),
        seconds=round(seconds, 3),
    )
    return Layout(found.clustering_id, places, round(seconds, 3))


def _point(record: Record, place: tuple[float, float], label: int) -> MapPoint:
    data = record.payload
    return MapPoint(
        id=record.id,
        ghap_id=str(data.get("ghap_id", "")),
        x=place[0],
        y=place[1],
        label=label,
        goal=one_line(str(data.get("goal") or ""), GOAL_CHARS),
        outcome=data.get("outcome_status"),
        source=data.get("source") or "agent",
        domain=data.get("domain"),
        confidence_tier=data.get("confidence_tier"),
    )


# A map's points, kept while its layout and the store are as they were (``memo.store_state``):
# reading every experience's goal again was most of a warm map's time. A few maps at a time.
POINTS_KEPT = 8
_POINTS: Recent[tuple[Any, ...], tuple[Layout, list[MapPoint]]] = Recent(POINTS_KEPT)


async def _points(
    run: JobRun, request: ClusterMapRequest, found: Clustering, laid_out: Layout
) -> list[MapPoint]:
    key = (request.axis, request.project, found.clustering_id, await store_state(run))
    kept = _POINTS.get(key)
    if kept is None or kept[0] is not laid_out:
        labels = {found.point_ids[i]: c.label for c in found.clusters for i in c.members}
        store = await run.services.vectors()
        where = project_filter(request.project)
        records = await all_records(store, collection_for(request.axis), where, MAP_FIELDS)
        points = [
            _point(record, laid_out.places[record.id], labels.get(record.id, -1))
            for record in records
            if record.id in laid_out.places
        ]
        kept = (laid_out, points)
        _POINTS.put(key, kept)
    return kept[1]


async def cluster_map(run: JobRun, request: ClusterMapRequest) -> ClusterMapResponse:
    found = await clustering(run, request.axis)
    laid_out, cached = await layouts(run.services).get(run, found)
    points = await _points(run, request, found, laid_out)
    shown = {point.id: point for point in points}
    values: dict[int, list[MapValue]] = {}
    for standing in await value_standings(run, request.axis):
        if standing.holds and standing.label is not None and not set_aside(standing.record.payload):
            state = "current" if standing.state == "current" else "fits"
            text = str(standing.record.payload.get("text", ""))
            values.setdefault(standing.label, []).append(
                MapValue(id=standing.record.id, text=text, state=state)
            )
    clusters = []
    for cluster in found.clusters:
        members = [found.point_ids[i] for i in cluster.members if found.point_ids[i] in shown]
        if not members:
            continue
        middle = np.mean([(shown[m].x, shown[m].y) for m in members], axis=0)
        clusters.append(
            MapCluster(
                cluster_id=cluster_id(request.axis, cluster.label),
                label=cluster.label,
                size=cluster.size,
                shown=len(members),
                x=round(float(middle[0]), 5),
                y=round(float(middle[1]), 5),
                members=members,
                values=values.get(cluster.label, []),
            )
        )
    return ClusterMapResponse(
        axis=request.axis,
        project=request.project,
        clustering_id=found.clustering_id,
        experience_count=found.size,
        points=points,
        clusters=clusters,
        noise_count=sum(1 for point in points if point.label < 0),
        layout_seconds=laid_out.seconds,
        cached=cached,
    )

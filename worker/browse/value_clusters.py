"""Where a stored value stands in its axis's current clustering.

A value keeps the clustering it was validated against and that cluster's experiences (ghap
ids). Once the axis is clustered again, its ``cluster_id`` may name another cluster, or none:
its cluster is the current one holding most of those experiences, and the value still holds if
validate_value's test (distance to the centroid within mean + k·std of the members') passes
against that cluster.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from learning_memory.shared.contracts.learning import VALUES_COLLECTION, cluster_id, parse_cluster_id
from learning_memory.shared.errors import InsufficientDataError, NotFoundError, ValidationError
from learning_memory.worker.jobs.learning import clustering
from learning_memory.worker.learning.cache import Clustering
from learning_memory.worker.learning.clusterer import judge
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import Condition, Filter, MatchValue, Record

# A current cluster is the value's own when it holds at least this share of the value's experiences.
MIN_SHARE = 0.5
ValueState = Literal["current", "fits", "gone", "no_longer_fits"]


@dataclass(frozen=True)
class ValueStanding:
    record: Record
    state: ValueState
    label: int | None  # its current cluster, when one holds most of its experiences
    reason: str
    clustering_id: str | None = None  # the axis's current clustering; None: none can be made now

    @property
    def holds(self) -> bool:
        return self.state in ("current", "fits")


def member_ids(payload: dict[str, Any]) -> list[str]:
    """The value's experiences: a JSON list in one string (a plain list in older points)."""
    raw = payload.get("member_ghap_ids")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return []
    return [str(item) for item in raw] if isinstance(raw, list) else []


async def axis_values(run: JobRun, axis: str, project: str | None = None) -> list[Record]:
    """The values stored on ``axis`` (of ``project`` when given), with their vectors."""
    store = await run.services.vectors()
    if not await store.collection_exists(VALUES_COLLECTION):
        return []
    conditions: list[Condition] = [MatchValue("axis", axis)]
    if project is not None:
        conditions.append(MatchValue("project", project))
    where = Filter(tuple(conditions))
    # Values are few (one per lesson learned): all of them in one read.
    total = await store.count(VALUES_COLLECTION, where)
    return await store.scroll(VALUES_COLLECTION, limit=total + 100, filter=where, with_vectors=True)


async def current_clustering(run: JobRun, axis: str) -> Clustering | None:
    """The axis's clustering, or None when it has too few experiences to cluster."""
    try:
        return await clustering(run, axis)
    except (NotFoundError, InsufficientDataError):
        return None


def labels_by_experience(found: Clustering) -> dict[str, int]:
    return {found.ghap_ids[index]: c.label for c in found.clusters for index in c.members}


def stand(record: Record, found: Clustering | None, labels: dict[str, int], k: float) -> ValueStanding:
    """Where the value ``record`` stands in ``found`` (``labels``: its experiences' labels)."""
    payload = record.payload
    if found is None:
        return ValueStanding(record, "gone", None, "its axis has too few experiences to cluster now")
    if payload.get("clustering_id") == found.clustering_id:
        try:
            _, label = parse_cluster_id(str(payload.get("cluster_id", "")))
        except ValidationError:
            label = -1
        if 0 <= label < len(found.clusters):
            return ValueStanding(
                record, "current", label, "validated against the current clustering", found.clustering_id
            )
    members = member_ids(payload)
    counts = Counter(labels[m] for m in members if m in labels)
    if not counts or counts.most_common(1)[0][1] < MIN_SHARE * len(members):
        return ValueStanding(
            record,
            "gone",
            None,
            "no current cluster holds most of the experiences it was validated on",
            found.clustering_id,
        )
    label = counts.most_common(1)[0][0]
    share = counts[label] / len(members)
    here = cluster_id(found.axis, label)
    if record.vector is None:  # cannot be judged: taken as still holding
        return ValueStanding(
            record, "fits", label, f"{here} holds {share:.0%} of its experiences", found.clustering_id
        )
    verdict = judge(found.clusters[label], record.vector, k)
    if verdict.valid:
        return ValueStanding(
            record,
            "fits",
            label,
            f"{here} holds {share:.0%} of its experiences and still validates it",
            found.clustering_id,
        )
    return ValueStanding(
        record,
        "no_longer_fits",
        label,
        f"{here} holds {share:.0%} of its experiences, but its members moved: distance "
        f"{verdict.distance:.4f} to the centroid is above the threshold {verdict.threshold:.4f}",
        found.clustering_id,
    )


async def value_standings(run: JobRun, axis: str, project: str | None = None) -> list[ValueStanding]:
    """Every value of ``axis`` (and ``project``) with where it stands now; clusters the axis
    only when it has values."""
    records = await axis_values(run, axis, project)
    if not records:
        return []
    found = await current_clustering(run, axis)
    labels = labels_by_experience(found) if found is not None else {}
    k = run.services.settings.value_threshold_k
    return [stand(record, found, labels, k) for record in records]

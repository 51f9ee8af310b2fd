"""What may need a person's eye: near-duplicates, records whose code moved on, records never shown
to the agent, and values whose cluster moved on. Every list is cut to the request's limit and
told with its total."""

from __future__ import annotations

import asyncio

from learning_memory.shared.contracts.browse import (
    AuditItem,
    AuditRequest,
    AuditResponse,
    DuplicateList,
    ItemList,
    MovedValue,
    MovedValues,
)
from learning_memory.shared.contracts.context import ContextKind, item_id
from learning_memory.shared.contracts.experiences import AXES
from learning_memory.shared.contracts.learning import cluster_id
from learning_memory.worker.browse.duplicates import duplicate_list, looked
from learning_memory.worker.browse.memo import kept
from learning_memory.worker.browse.records import (
    COLLECTIONS,
    all_records,
    audit_item,
    project_filter,
    record_key,
)
from learning_memory.worker.browse.shown import ever_shown
from learning_memory.worker.browse.value_clusters import value_standings
from learning_memory.worker.recall.search import set_aside
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import MatchAny, Record

STALE = MatchAny("stale", ("changed", "gone"))


# What the lists read of every record: enough to choose; the chosen are then read whole.
CHOOSE_FIELDS = ("ghap_id", "created_ts", "retired", "wrong")
Found = tuple[float, ContextKind, str]  # created_ts, kind, point id


async def _chosen(run: JobRun, found: list[Found], limit: int, newest_first: bool) -> ItemList:
    """The first ``limit`` of ``found`` by age, read whole, and how many there were."""
    found.sort(key=lambda entry: (-entry[0] if newest_first else entry[0], entry[2]))
    store = await run.services.vectors()
    items: dict[str, AuditItem] = {}
    for kind, collection in COLLECTIONS.items():
        ids = [point for _, k, point in found[:limit] if k == kind]
        for record in await store.get(collection, ids) if ids else []:
            items[record.id] = audit_item(kind, record)
    return ItemList(items=[items[point] for _, _, point in found[:limit] if point in items], total=len(found))


def _stamp(record: Record) -> float:
    stamp = record.payload.get("created_ts")
    return float(stamp) if isinstance(stamp, int | float) else 0.0


async def stale_items(run: JobRun, project: str | None, limit: int) -> ItemList:
    """Records whose anchored code changed or went since they were stored, newest first (those a
    person set aside left out: dealt with)."""
    store = await run.services.vectors()
    found: list[Found] = []
    for kind, collection in COLLECTIONS.items():
        records = await all_records(store, collection, project_filter(project, STALE), CHOOSE_FIELDS)
        found += [(_stamp(r), kind, r.id) for r in records if not set_aside(r.payload)]
    return await _chosen(run, found, limit, newest_first=True)


async def never_injected(run: JobRun, project: str | None, limit: int) -> ItemList:
    """Records never shown to the agent as far as the feedback and the kept session logs tell,
    oldest first (the longest unused); those set aside are never shown by design, left out."""
    shown = await asyncio.to_thread(ever_shown, run.services.settings.data_dir, project)
    store = await run.services.vectors()
    found: list[Found] = []
    for kind, collection in COLLECTIONS.items():
        for record in await all_records(store, collection, project_filter(project), CHOOSE_FIELDS):
            if item_id(kind, record_key(kind, record)) not in shown and not set_aside(record.payload):
                found.append((_stamp(record), kind, record.id))
    return await _chosen(run, found, limit, newest_first=False)


async def moved_values(run: JobRun, project: str | None, limit: int) -> MovedValues:
    """Values whose cluster is gone from the current clustering of their axis, or no longer
    validates them."""
    moved: list[MovedValue] = []
    checked = 0
    for axis in AXES:
        standings = await value_standings(run, axis, project)
        checked += len(standings)
        for standing in standings:
            if standing.holds or set_aside(standing.record.payload):
                continue
            data = standing.record.payload
            moved.append(
                MovedValue(
                    value=audit_item("value", standing.record),
                    axis=axis,
                    cluster_id=str(data.get("cluster_id", "")),
                    clustering_id=str(data.get("clustering_id", "")),
                    current_clustering_id=standing.clustering_id,
                    state="gone" if standing.state == "gone" else "no_longer_fits",
                    current_cluster_id=cluster_id(axis, standing.label)
                    if standing.label is not None
                    else None,
                    reason=standing.reason,
                )
            )
    moved.sort(key=lambda m: (-(m.value.created_at.timestamp() if m.value.created_at else 0.0), m.value.id))
    return MovedValues(values=moved[:limit], total=len(moved), checked=checked)


async def audit(run: JobRun, request: AuditRequest) -> AuditResponse:
    return await kept(run, "audit", request, lambda: _audit(run, request))


async def _audit(run: JobRun, request: AuditRequest) -> AuditResponse:
    store = await run.services.vectors()
    where = project_filter(request.project)

    async def duplicates(kind: ContextKind) -> DuplicateList:
        return await duplicate_list(
            store,
            COLLECTIONS[kind],
            where,
            request.similarity,
            request.scan_limit,
            request.limit,
            lambda record: audit_item(kind, record),
            looked(str(run.services.settings.data_dir), COLLECTIONS[kind], where),
        )

    return AuditResponse(
        project=request.project,
        duplicate_memories=await duplicates("memory"),
        duplicate_experiences=await duplicates("experience"),
        stale=await stale_items(run, request.project, request.limit),
        never_injected=await never_injected(run, request.project, request.limit),
        moved_values=await moved_values(run, request.project, request.limit),
    )

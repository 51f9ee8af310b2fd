"""What may need a person's eye: near-duplicates, records whose code moved on, records never shown
to the agent, and values whose cluster moved on. Every list is cut to the request's limit and
told with its total."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

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
from learning_memory.worker.browse.duplicates import duplicate_list
from learning_memory.worker.browse.records import (
    COLLECTIONS,
    ITEM_FIELDS,
    all_records,
    audit_item,
    project_filter,
    record_key,
)
from learning_memory.worker.browse.shown import ever_shown
from learning_memory.worker.browse.value_clusters import value_standings
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import MatchAny

STALE = MatchAny("stale", ("changed", "gone"))


async def stale_items(run: JobRun, project: str | None, limit: int) -> ItemList:
    """Records whose anchored code changed or went since they were stored, newest first."""
    store = await run.services.vectors()
    where = project_filter(project, STALE)
    found: list[AuditItem] = []
    total = 0
    for kind, collection in COLLECTIONS.items():
        if not await store.collection_exists(collection):
            continue
        total += await store.count(collection, where)
        page = await store.scroll(
            collection, limit=limit, filter=where, order_by="created_ts", payload_fields=ITEM_FIELDS
        )
        found += [audit_item(kind, record) for record in page]
    found.sort(key=_newest_first)
    return ItemList(items=found[:limit], total=total)


def _newest_first(item: AuditItem) -> tuple[bool, float, str]:
    return (item.created_at is None, -(item.created_at.timestamp() if item.created_at else 0.0), item.id)


async def never_injected(run: JobRun, project: str | None, limit: int) -> ItemList:
    """Records never shown to the agent as far as the feedback and the kept session logs tell,
    oldest first (the longest unused)."""
    shown = await asyncio.to_thread(ever_shown, run.services.settings.data_dir, project)
    store = await run.services.vectors()
    unseen: list[tuple[float, ContextKind, str]] = []
    for kind, collection in COLLECTIONS.items():
        for record in await all_records(
            store, collection, project_filter(project), ("ghap_id", "created_ts")
        ):
            if item_id(kind, record_key(kind, record)) not in shown:
                stamp = record.payload.get("created_ts")
                unseen.append((float(stamp) if isinstance(stamp, int | float) else 0.0, kind, record.id))
    unseen.sort()
    found: list[AuditItem] = []
    for kind, collection in COLLECTIONS.items():
        ids = [point for _, k, point in unseen[:limit] if k == kind]
        found += [audit_item(kind, record) for record in await store.get(collection, ids)] if ids else []
    found.sort(key=lambda i: (i.created_at or datetime.min.replace(tzinfo=UTC), i.id))
    return ItemList(items=found, total=len(unseen))


async def moved_values(run: JobRun, project: str | None, limit: int) -> MovedValues:
    """Values whose cluster is gone from the current clustering of their axis, or no longer
    validates them."""
    moved: list[MovedValue] = []
    checked = 0
    for axis in AXES:
        standings = await value_standings(run, axis, project)
        checked += len(standings)
        for standing in standings:
            if standing.holds:
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
    moved.sort(key=lambda m: _newest_first(m.value))
    return MovedValues(values=moved[:limit], total=len(moved), checked=checked)


async def audit(run: JobRun, request: AuditRequest) -> AuditResponse:
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
        )

    return AuditResponse(
        project=request.project,
        duplicate_memories=await duplicates("memory"),
        duplicate_experiences=await duplicates("experience"),
        stale=await stale_items(run, request.project, request.limit),
        never_injected=await never_injected(run, request.project, request.limit),
        moved_values=await moved_values(run, request.project, request.limit),
    )

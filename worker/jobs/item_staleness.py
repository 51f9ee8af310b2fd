"""Memories and values whose anchored code a session edited, checked again after it is mined (as
experiences are, ``worker.jobs.staleness``): what is found goes into the item's point (``stale``:
retrieval and ``list_values`` show it, the prompt hook leaves out what is gone) and into the fix
index (a file read no longer brings an item whose code is gone)."""

from __future__ import annotations

import asyncio

from learning_memory.shared.anchored_items import mark_items
from learning_memory.shared.contracts.context import ContextKind, item_id
from learning_memory.shared.contracts.experiences import Stale
from learning_memory.shared.contracts.learning import VALUES_COLLECTION
from learning_memory.shared.contracts.memory import COLLECTION as MEMORIES
from learning_memory.shared.fix_index import fix_index_path
from learning_memory.shared.log import get_logger
from learning_memory.worker.jobs.staleness import anchored_states
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import PointData

log = get_logger(__name__)
ITEMS: tuple[tuple[ContextKind, str], ...] = (("memory", MEMORIES), ("value", VALUES_COLLECTION))


async def recheck_item_anchors(
    run: JobRun, project: str, worktree: str, files: list[str]
) -> dict[str, Stale | None]:
    """Check the memories and values anchored to ``files`` again; the context ids of those whose
    state changed, and to what."""
    store = await run.services.vectors()
    index = fix_index_path(run.services.settings.data_dir)
    changed: dict[str, Stale | None] = {}
    for kind, collection in ITEMS:
        records, states, moved = await anchored_states(store, collection, project, worktree, files, "id")
        updated = [
            PointData(r.id, r.vector, {**r.payload, "stale": moved[r.id]})
            for r in records
            if r.id in moved and r.vector is not None
        ]
        if updated:
            await store.upsert(collection, updated)
        await asyncio.to_thread(
            mark_items, index, {item_id(kind, key): state for key, state in states.items()}
        )
        changed |= {item_id(kind, key): state for key, state in moved.items()}
    if changed:
        log.info("capture.item_anchors_rechecked", changed=changed)
    return changed

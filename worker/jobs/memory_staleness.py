"""Memories whose anchored code a session edited, checked again after it is mined (as
experiences are, ``worker.jobs.staleness``): what is found goes into the memory's point
(``stale``: retrieval shows it, the prompt hook leaves out what is gone) and into the fix index
(a file read no longer brings a memory whose code is gone)."""

from __future__ import annotations

import asyncio

from learning_memory.shared.anchored_items import mark_items
from learning_memory.shared.contracts.context import item_id
from learning_memory.shared.contracts.experiences import Stale
from learning_memory.shared.contracts.memory import COLLECTION
from learning_memory.shared.fix_index import fix_index_path
from learning_memory.shared.log import get_logger
from learning_memory.worker.jobs.staleness import anchored_states
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import PointData

log = get_logger(__name__)


async def recheck_memory_anchors(
    run: JobRun, project: str, worktree: str, files: list[str]
) -> dict[str, Stale | None]:
    """Check the memories anchored to ``files`` again; those whose state changed, and to what."""
    store = await run.services.vectors()
    records, states, changed = await anchored_states(store, COLLECTION, project, worktree, files, "id")
    updated = [
        PointData(r.id, r.vector, {**r.payload, "stale": changed[r.id]})
        for r in records
        if r.id in changed and r.vector is not None
    ]
    if updated:
        await store.upsert(COLLECTION, updated)
    index = fix_index_path(run.services.settings.data_dir)
    await asyncio.to_thread(
        mark_items, index, {item_id("memory", key): state for key, state in states.items()}
    )
    if changed:
        log.info("capture.memory_anchors_rechecked", checked=len(states), changed=changed)
    return changed

"""What must follow a curation change (or its undo) outside the vector store, read from the records
as they now are, so that running it twice does no harm:

- memories and values anchored to files: their rows in the fix index (a file read brings them),
  dropped for a value retired or a memory deleted, written again when they come back;
- experiences: their fixes' state in the fix index (no hint offers the fixes of one marked wrong or
  merged away), the project's ``recent.json`` for the brief, and each axis's version (a clustering
  cached for it is out of date);
- ``cache/curated.json``: the retired values and wrong experiences the SessionStart brief skips (it
  reads files only: the values cache and the journal's lessons may still name them).
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from learning_memory.shared.anchored_items import drop_items, mark_items, put_item
from learning_memory.shared.context_lines import one_line
from learning_memory.shared.contracts.context import item_id
from learning_memory.shared.contracts.experiences import Anchor, collection_for, point_id
from learning_memory.shared.contracts.learning import VALUES_COLLECTION
from learning_memory.shared.contracts.memory import COLLECTION as MEMORIES
from learning_memory.shared.fix_index import WRONG, FixIndex, fix_index_path
from learning_memory.shared.log import get_logger
from learning_memory.shared.paths import CURATED_FILE, capture_dir
from learning_memory.worker.capture.recent import write_recent
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import Filter, MatchValue, VectorStore

log = get_logger(__name__)
ANCHORED_TEXT_CHARS = 160  # as worker.jobs.memory writes a memory's row
MAX_LISTED = 10_000  # curated-out records the brief's file names, far above what a person marks


def _anchors(payload: dict[str, Any]) -> list[Anchor]:
    return [Anchor.model_validate(anchor) for anchor in payload.get("anchors") or []]


def _anchor_item(index: Path, item: str, payload: dict[str, Any] | None, text: str, shown: bool) -> None:
    """The item's rows in the fix index as its record now says (none when not ``shown``)."""
    project = payload.get("project") if payload else None
    anchors = _anchors(payload) if payload else []
    if payload is None or not shown or not isinstance(project, str) or not anchors:
        drop_items(index, [item])
        return
    created = datetime.fromisoformat(str(payload["created_at"]))
    put_item(index, project, item, anchors, text, created)
    mark_items(index, {item: payload.get("stale")})


async def _payload(store: VectorStore, collection: str, point: str) -> dict[str, Any] | None:
    if not await store.collection_exists(collection):
        return None
    found = await store.get(collection, [point])
    return found[0].payload if found else None


async def settle_memories(run: JobRun, ids: Iterable[str]) -> None:
    store = await run.services.vectors()
    index = fix_index_path(run.services.settings.data_dir)
    for memory in ids:
        payload = await _payload(store, MEMORIES, memory)
        text = one_line(str(payload.get("content", "")), ANCHORED_TEXT_CHARS) if payload else ""
        await asyncio.to_thread(_anchor_item, index, item_id("memory", memory), payload, text, True)


async def settle_values(run: JobRun, ids: Iterable[str]) -> None:
    store = await run.services.vectors()
    index = fix_index_path(run.services.settings.data_dir)
    for value in ids:
        payload = await _payload(store, VALUES_COLLECTION, value)
        shown = payload is not None and not payload.get("retired")
        text = str(payload.get("text", "")) if payload else ""
        await asyncio.to_thread(_anchor_item, index, item_id("value", value), payload, text, shown)
    await write_curated(run)


async def settle_experiences(run: JobRun, ghap_ids: Iterable[str], axes: Iterable[str]) -> None:
    """After the points of ``ghap_ids`` changed on ``axes``."""
    await run.services.axis_versions.bump(sorted(set(axes)))
    store = await run.services.vectors()
    data_dir = run.services.settings.data_dir
    states: dict[str, str | None] = {}
    projects: set[str] = set()
    for ghap_id in ghap_ids:
        payload = await _payload(store, collection_for("full"), point_id(ghap_id, "full"))
        if payload is None or payload.get("wrong"):
            states[ghap_id] = WRONG
        else:
            stale = payload.get("stale")
            states[ghap_id] = stale if isinstance(stale, str) else None
        if payload is not None and isinstance(payload.get("project"), str):
            projects.add(str(payload["project"]))
    index = FixIndex(fix_index_path(data_dir))
    try:
        await asyncio.to_thread(index.set_curated, states)
        for project in sorted(projects):
            folder = capture_dir(data_dir) / project
            if folder.is_dir():  # where the miner left the project's recent fixes, if it has
                await asyncio.to_thread(write_recent, index, project, folder)
    finally:
        index.close()
    await write_curated(run)


async def _flagged(store: VectorStore, collection: str, flag: str, key: str | None = None) -> list[str]:
    if not await store.collection_exists(collection):
        return []
    records = await store.scroll(
        collection,
        limit=MAX_LISTED,
        filter=Filter((MatchValue(flag, True),)),
        payload_fields=[key] if key else None,
    )
    return sorted({str(r.payload.get(key)) if key else r.id for r in records})


async def write_curated(run: JobRun) -> None:
    """``cache/curated.json`` as the store now says: retired value ids, wrong experiences' GHAP ids."""
    store = await run.services.vectors()
    data = {
        "retired_values": await _flagged(store, VALUES_COLLECTION, "retired"),
        "wrong_experiences": await _flagged(store, collection_for("full"), "wrong", "ghap_id"),
    }
    path = run.services.settings.data_dir / CURATED_FILE
    await asyncio.to_thread(_write, path, json.dumps(data).encode())


def _write(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)  # the brief reads the old list or the new
    except OSError as exc:  # only the brief is poorer for it
        log.warning("curation.curated_file_failed", path=str(path), error=str(exc))

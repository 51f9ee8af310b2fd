"""Experiences whose anchored code a session edited, checked again after it is mined; and the
agent's own experiences given the anchors the log shows for them.

Only experiences of the project anchored to a file the session edited or committed are read, and each file is
parsed once: the check costs a few parses per session, no model. What it finds is written into
the experience's points on every axis (``stale``: the context lines and hits show it, injection
skips what is gone) and into the fix index (the hooks' fix hints heed it). The session's worktree
is the one checked: it holds the code as the latest session left it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from learning_memory.shared.contracts.capture import SessionEvent
from learning_memory.shared.contracts.experiences import AXES, Anchor, Stale, collection_for, point_id
from learning_memory.shared.fix_index import FixIndex
from learning_memory.shared.log import get_logger
from learning_memory.worker.capture.episodes import CommitInfo
from learning_memory.worker.capture.staleness import StalenessChecker
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import Filter, MatchAny, MatchValue, PointData, Record, VectorStore

log = get_logger(__name__)
EXPERIENCES = collection_for("full")
MAX_CHECKED = 500  # experiences per session: a bound on the work, far above what one session touches


def edited_files(events: Iterable[SessionEvent], committed: Iterable[CommitInfo] = ()) -> list[str]:
    """The files the session changed: edited with the agent's tools, or in its commits (which
    also name files deleted or rewritten by a command)."""
    edited = [event.file for event in events if event.type == "edit" and event.file]
    return list(dict.fromkeys([*edited, *(file for commit in committed for file in commit.files)]))


def experience_states(
    worktree: Path, payloads: list[dict[str, Any]], key: str = "ghap_id"
) -> dict[str, Stale | None]:
    """By record (its payload's ``key``), what became of its code (None: as it was); those
    nothing could be told of are left out."""
    checker = StalenessChecker(worktree)
    states: dict[str, Stale | None] = {}
    for data in payloads:
        anchors = [Anchor.model_validate(anchor) for anchor in data.get("anchors") or []]
        state = checker.experience(anchors) if anchors else "unknown"
        if state != "unknown":  # nothing could be told: what was known stands
            states[str(data[key])] = None if state == "fresh" else state
    return states


async def _update(store: VectorStore, ghap_id: str, fields: dict[str, Any]) -> None:
    """Set payload fields of the experience's points on every axis (vectors unchanged)."""
    for axis in AXES:
        name = collection_for(axis)
        if not await store.collection_exists(name):
            continue
        for record in await store.get(name, [point_id(ghap_id, axis)], with_vectors=True):
            if record.vector is not None:
                payload = {**record.payload, **fields}
                await store.upsert(name, [PointData(record.id, record.vector, payload)])


async def attach_agent_anchors(run: JobRun, project: str, anchors: dict[str, list[Anchor]]) -> list[str]:
    """Give the agent's stored experiences the anchors its edits show, once: an experience that
    has anchors keeps them (mined again later, the code may have moved on, which is what the
    anchors are to tell). Entries not stored yet (still active) get theirs at a later mining.
    The ids of the experiences anchored."""
    store = await run.services.vectors()
    if not anchors or not await store.collection_exists(EXPERIENCES):
        return []
    ids = [point_id(ghap_id, "full") for ghap_id in anchors]
    attached: list[str] = []
    for record in await store.get(EXPERIENCES, ids):
        ghap_id = str(record.payload.get("ghap_id"))
        found = anchors.get(ghap_id)
        if found and record.payload.get("source", "agent") == "agent" and not record.payload.get("anchors"):
            fields = {
                "anchors": [anchor.model_dump(mode="json") for anchor in found],
                "anchor_files": sorted({anchor.file for anchor in found}),
                "project": record.payload.get("project") or project,
            }
            await _update(store, ghap_id, fields)
            attached.append(ghap_id)
    if attached:
        log.info("capture.agent_anchors", experiences=attached)
    return attached


async def anchored_states(
    store: VectorStore, collection: str, project: str, worktree: str, files: list[str], key: str
) -> tuple[list[Record], dict[str, Stale | None], dict[str, Stale | None]]:
    """The points of ``collection`` (with their vectors) anchored to ``files`` in ``project``;
    what became of their code, by the payload field ``key`` ("id": the point's id); and those of
    them whose state is not the one stored."""
    if not files or not await store.collection_exists(collection):
        return [], {}, {}
    where = Filter((MatchValue("project", project), MatchAny("anchor_files", tuple(files))))
    records = await store.scroll(collection, limit=MAX_CHECKED, filter=where, with_vectors=True)
    payloads = [{**record.payload, "id": record.id} for record in records]
    states = await asyncio.to_thread(experience_states, Path(worktree), payloads, key)
    before = {str(data[key]): data.get("stale") for data in payloads}
    changed = {name: state for name, state in states.items() if before.get(name) != state}
    return records, states, changed


async def recheck_anchors(
    run: JobRun, index: FixIndex, project: str, worktree: str, files: list[str]
) -> dict[str, Stale | None]:
    """Check the experiences anchored to ``files`` again; those whose state changed, and to what."""
    store = await run.services.vectors()
    _, states, changed = await anchored_states(store, EXPERIENCES, project, worktree, files, "ghap_id")
    for ghap_id, state in changed.items():
        await _update(store, ghap_id, {"stale": state})
    await asyncio.to_thread(index.mark_stale, dict(states))
    if changed:
        log.info("capture.anchors_rechecked", checked=len(states), changed=changed)
    return changed

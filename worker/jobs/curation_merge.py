"""Merging duplicates: one record kept, the others folded into it and deleted, all recorded so that
undo brings every one of them back as it was.

Memories: the kept one takes the union of the tags (its own first), the highest importance and,
if given, a new content (embedded again). Experiences: the kept one takes the summed occurrences,
the latest sighting and the union of the anchors, on every axis it is stored on.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from learning_memory.shared.contracts.context import item_id
from learning_memory.shared.contracts.curation import (
    MERGE_EXPERIENCES,
    MERGE_MEMORIES,
    ChangeResponse,
    MergeExperiencesRequest,
    MergeMemoriesRequest,
)
from learning_memory.shared.contracts.memory import COLLECTION as MEMORIES
from learning_memory.shared.errors import ValidationError
from learning_memory.worker.curation.changes import run_change, settle
from learning_memory.worker.curation.ids import bare, experience
from learning_memory.worker.curation.log import Change, NewChange
from learning_memory.worker.curation.snapshots import Snapshot, set_fields
from learning_memory.worker.jobs.curation import clean_tags, describe, one_point, write_memory
from learning_memory.worker.registry import job
from learning_memory.worker.services import JobRun

MERGED = "merged"  # the diff's entry naming the records folded in


def _distinct(keep: str, merge: list[str]) -> list[str]:
    others = list(dict.fromkeys(bare(one) for one in merge))
    if bare(keep) in others:
        raise ValidationError(f"{keep!r} is both kept and merged: merge the others into it")
    return others


async def _delete(run: JobRun, snaps: list[Snapshot]) -> None:
    store = await run.services.vectors()
    for snap in snaps:
        await store.delete(str(snap["collection"]), [str(snap["id"])])


@job(MERGE_MEMORIES)
async def merge_memories(run: JobRun, request: MergeMemoriesRequest) -> ChangeResponse:
    async def prepare() -> NewChange:
        kept = await one_point(run, MEMORIES, request.keep, "memory")
        others = [
            await one_point(run, MEMORIES, one, "memory") for one in _distinct(request.keep, request.merge)
        ]
        if any(snap["id"] == kept["id"] for snap in others):
            raise ValidationError(f"{request.keep!r} is both kept and merged: merge the others into it")
        every = [kept["payload"], *(snap["payload"] for snap in others)]
        after: dict[str, Any] = {
            "tags": clean_tags([tag for payload in every for tag in payload.get("tags") or []]),
            "importance": max(float(payload.get("importance") or 0.0) for payload in every),
        }
        if request.content is not None and request.content.strip():
            after["content"] = request.content.strip()
        mine = kept["payload"]
        diff = {name: [mine.get(name), value] for name, value in after.items() if value != mine.get(name)}
        diff[MERGED] = [[], [str(snap["id"]) for snap in others]]
        changed = describe({k: v for k, v in diff.items() if k != MERGED})
        return NewChange(
            id=request.change_id,
            kind="merge_memories",
            item_kind="memory",
            targets=[item_id("memory", str(snap["id"])) for snap in (kept, *others)],
            summary=f"Merged {len(others)} memories into one" + (f" ({changed})" if changed else ""),
            diff=diff,
            request=request.model_dump(mode="json"),
            before=[kept, *others],
        )

    async def apply(change: Change) -> None:
        kept, *others = change.before
        await write_memory(run, kept, change.record.diff)
        await _delete(run, others)
        await settle(run, change)

    return await run_change(run, request.change_id, ("merge_memories",), prepare, apply)


def _seen(payload: dict[str, Any]) -> str | None:
    for key in ("last_seen", "resolved_at", "created_at"):
        if isinstance(payload.get(key), str):
            return str(payload[key])
    return None


def _latest(stamps: list[str | None]) -> str | None:
    known = [stamp for stamp in stamps if stamp]
    return max(known, key=datetime.fromisoformat) if known else None


def _anchors(payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for payload in payloads:
        for anchor in payload.get("anchors") or []:
            seen.setdefault(json.dumps(anchor, sort_keys=True), anchor)
    return list(seen.values())


@job(MERGE_EXPERIENCES)
async def merge_experiences(run: JobRun, request: MergeExperiencesRequest) -> ChangeResponse:
    async def prepare() -> NewChange:
        store = await run.services.vectors()
        kept_id, kept = await experience(store, request.keep)
        others: list[tuple[str, list[Snapshot]]] = []
        for one in _distinct(kept_id, [*request.merge]):
            found = await experience(store, one)
            if found[0] == kept_id:
                raise ValidationError(f"{one!r} is the kept experience: merge the others into it")
            if found[0] not in {ghap for ghap, _ in others}:
                others.append(found)
        mine = kept[0]["payload"]
        every = [mine, *(snaps[0]["payload"] for _, snaps in others)]
        anchors = _anchors(every)
        after: dict[str, Any] = {
            "occurrences": sum(int(payload.get("occurrences") or 1) for payload in every),
            "last_seen": _latest([_seen(payload) for payload in every]),
            "anchors": anchors,
            "anchor_files": sorted({str(anchor.get("file")) for anchor in anchors}),
        }
        diff = {name: [mine.get(name), value] for name, value in after.items() if value != mine.get(name)}
        diff[MERGED] = [[], [ghap for ghap, _ in others]]
        return NewChange(
            id=request.change_id,
            kind="merge_experiences",
            item_kind="experience",
            targets=[item_id("experience", ghap) for ghap in (kept_id, *(g for g, _ in others))],
            summary=f"Merged {len(others)} experiences into one ({after['occurrences']} occurrences)",
            diff=diff,
            request=request.model_dump(mode="json"),
            before=[*kept, *(snap for _, snaps in others for snap in snaps)],
        )

    async def apply(change: Change) -> None:
        kept_id = bare(change.record.targets[0])
        kept = [snap for snap in change.before if snap["payload"].get("ghap_id") == kept_id]
        others = [snap for snap in change.before if snap["payload"].get("ghap_id") != kept_id]
        fields = {name: after for name, (_, after) in change.record.diff.items() if name != MERGED}
        await set_fields(await run.services.vectors(), kept, fields)
        await _delete(run, others)
        await settle(run, change)

    return await run_change(run, request.change_id, ("merge_experiences",), prepare, apply)

"""Curation jobs: edit or delete a memory, retire or restore a value, mark an experience wrong or
restore it, undo a change, list the history. Each change is recorded before it is applied
(``worker.curation.changes``); merges are in ``curation_merge``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from learning_memory.shared.context_lines import one_line
from learning_memory.shared.contracts.context import ContextKind, item_id
from learning_memory.shared.contracts.curation import (
    DELETE_MEMORY_RECORDED,
    LIST_CHANGES,
    MARK_EXPERIENCE,
    SET_VALUE_STATE,
    UNDO_CHANGE,
    UPDATE_MEMORY,
    ChangeKind,
    ChangeResponse,
    DeleteMemoryRecordedRequest,
    ListChangesRequest,
    ListChangesResponse,
    MarkExperienceRequest,
    SetValueStateRequest,
    UndoRequest,
    UndoResponse,
    UpdateMemoryRequest,
)
from learning_memory.shared.contracts.learning import VALUES_COLLECTION
from learning_memory.shared.contracts.memory import COLLECTION as MEMORIES
from learning_memory.shared.contracts.memory import DeleteMemoryRequest
from learning_memory.shared.errors import NotFoundError, ValidationError
from learning_memory.worker.curation.changes import curation_log, run_change, settle, undo
from learning_memory.worker.curation.ids import experience, listed_targets, point_uuid
from learning_memory.worker.curation.log import Change, NewChange
from learning_memory.worker.curation.snapshots import Snapshot, decode, points, set_fields, snapshot
from learning_memory.worker.jobs.memory import delete_memory
from learning_memory.worker.registry import job
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import PointData

SHOWN_CHARS = 60  # of a record's text, in a change's summary
MEMORY_FIELDS = ("content", "category", "importance", "tags")


async def one_point(run: JobRun, collection: str, identifier: str, what: str) -> Snapshot:
    store = await run.services.vectors()
    found = await points(store, collection, [point_uuid(identifier, what)])
    if not found:
        raise NotFoundError(f"No {what} with id {identifier!r}")
    return snapshot(collection, found[0])


def clean_tags(tags: list[str]) -> list[str]:
    return list(dict.fromkeys(tag.strip() for tag in tags if tag.strip()))


def describe(diff: dict[str, list[Any]]) -> str:
    """What changed, for a person: a short field's values, a long one's name."""
    parts = []
    for name, (before, after) in diff.items():
        parts.append(f"{name} {before} → {after}" if name in ("category", "importance") else name)
    return ", ".join(parts)


async def write_memory(run: JobRun, snap: Snapshot, diff: dict[str, list[Any]]) -> None:
    """The memory of ``snap`` with ``diff``'s new values; its content embedded again if it changed,
    its id and creation time kept."""
    payload = dict(snap["payload"])
    for name, (_, after) in diff.items():
        if name in MEMORY_FIELDS:
            payload[name] = after
    if "content" in diff:
        vector = list((await (await run.services.embedder()).embed([str(payload["content"])]))[0])
    else:
        vector = decode(str(snap["vector"]))
    store = await run.services.vectors()
    # Through the keyword mirror: the memory's words on the keyword side change with it.
    await store.upsert(MEMORIES, [PointData(str(snap["id"]), vector, payload)])


@job(UPDATE_MEMORY)
async def update_memory(run: JobRun, request: UpdateMemoryRequest) -> ChangeResponse:
    async def prepare() -> NewChange:
        snap = await one_point(run, MEMORIES, request.id, "memory")
        content = request.content.strip() if request.content is not None else None
        if content == "":
            raise ValidationError("A memory's content cannot be blank")
        after: dict[str, Any] = {
            "content": content,
            "category": request.category,
            "importance": request.importance,
            "tags": clean_tags(request.tags) if request.tags is not None else None,
        }
        before = snap["payload"]
        diff = {k: [before.get(k), v] for k, v in after.items() if v is not None and v != before.get(k)}
        if not diff:
            raise ValidationError(
                f"Nothing to change in memory {snap['id']}: give a content, category, importance or "
                "tags that differ from its own"
            )
        text = one_line(str(content or before.get("content", "")), SHOWN_CHARS)
        return NewChange(
            id=request.change_id,
            kind="update_memory",
            item_kind="memory",
            targets=[item_id("memory", str(snap["id"]))],
            summary=f"Edited memory ({describe(diff)}): {text}",
            diff=diff,
            request=request.model_dump(mode="json"),
            before=[snap],
        )

    async def apply(change: Change) -> None:
        await write_memory(run, change.before[0], change.record.diff)
        await settle(run, change)

    return await run_change(run, request.change_id, ("update_memory",), prepare, apply)


@job(DELETE_MEMORY_RECORDED)
async def delete_memory_recorded(run: JobRun, request: DeleteMemoryRecordedRequest) -> ChangeResponse:
    async def prepare() -> NewChange:
        snap = await one_point(run, MEMORIES, request.id, "memory")
        text = one_line(str(snap["payload"].get("content", "")), SHOWN_CHARS)
        return NewChange(
            id=request.change_id,
            kind="delete_memory",
            item_kind="memory",
            targets=[item_id("memory", str(snap["id"]))],
            summary=f"Deleted memory: {text}",
            diff={},
            request=request.model_dump(mode="json"),
            before=[snap],
        )

    async def apply(change: Change) -> None:
        # The tool's own delete: the point, its keyword row and its rows in the fix index.
        await delete_memory(run, DeleteMemoryRequest(id=str(change.before[0]["id"])))

    return await run_change(run, request.change_id, ("delete_memory",), prepare, apply)


@dataclass(frozen=True)
class _Flag:
    """A change that sets or clears one payload flag on a record's points."""

    name: str  # the payload field
    kind: ChangeKind
    item_kind: ContextKind
    said: tuple[str, str]  # the record's state with the flag, without it
    verb: str  # what the summary says was done


# A flagged record as it is now: its id, its points, the text a summary quotes.
Flagged = tuple[str, list[Snapshot], str]


async def _set_flag(
    run: JobRun,
    request: SetValueStateRequest | MarkExperienceRequest,
    flag: _Flag,
    value: bool,
    load: Callable[[], Awaitable[Flagged]],
) -> ChangeResponse:
    async def prepare() -> NewChange:
        record_id, snaps, text = await load()
        now = bool(snaps[0]["payload"].get(flag.name))
        if now == value:
            raise ValidationError(
                f"{flag.item_kind.capitalize()} {record_id} is {flag.said[not now]} already"
            )
        return NewChange(
            id=request.change_id,
            kind=flag.kind,
            item_kind=flag.item_kind,
            targets=[item_id(flag.item_kind, record_id)],
            summary=f"{flag.verb} {flag.item_kind}: {one_line(text, SHOWN_CHARS)}",
            diff={flag.name: [now, value]},
            request=request.model_dump(mode="json"),
            before=snaps,
        )

    async def apply(change: Change) -> None:
        on = bool(change.record.diff[flag.name][1])
        await set_fields(await run.services.vectors(), change.before, {flag.name: True if on else None})
        await settle(run, change)

    return await run_change(run, request.change_id, (flag.kind,), prepare, apply)


RETIRE = _Flag("retired", "retire_value", "value", ("retired", "not retired"), "Retired")
RESTORE_VALUE = replace(RETIRE, kind="restore_value", verb="Restored")
MARK_WRONG = _Flag("wrong", "mark_wrong", "experience", ("marked wrong", "not marked wrong"), "Marked wrong")
UNMARK_WRONG = replace(MARK_WRONG, kind="unmark_wrong", verb="Restored")


@job(SET_VALUE_STATE)
async def set_value_state(run: JobRun, request: SetValueStateRequest) -> ChangeResponse:
    async def load() -> Flagged:
        snap = await one_point(run, VALUES_COLLECTION, request.id, "value")
        return str(snap["id"]), [snap], str(snap["payload"].get("text", ""))

    return await _set_flag(run, request, RETIRE if request.retired else RESTORE_VALUE, request.retired, load)


@job(MARK_EXPERIENCE)
async def mark_experience(run: JobRun, request: MarkExperienceRequest) -> ChangeResponse:
    async def load() -> Flagged:
        ghap_id, snaps = await experience(await run.services.vectors(), request.id)
        return ghap_id, snaps, str(snaps[0]["payload"].get("goal", ""))

    return await _set_flag(run, request, MARK_WRONG if request.wrong else UNMARK_WRONG, request.wrong, load)


@job(UNDO_CHANGE)
async def undo_change(run: JobRun, request: UndoRequest) -> UndoResponse:
    return await undo(run, request.change_id.strip())


@job(LIST_CHANGES)
async def list_changes(run: JobRun, request: ListChangesRequest) -> ListChangesResponse:
    found, total = await curation_log(run).listing(
        limit=request.limit,
        offset=request.offset,
        item_kind=request.item_kind,
        targets=listed_targets(request),
    )
    return ListChangesResponse(changes=found, total=total)

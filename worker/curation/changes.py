"""How every curation job runs: recorded first, applied from the record, once per change id; and
how a recorded change is undone.

A job hands :func:`run_change` two steps: ``prepare`` reads the records as they are, checks the
request and returns the change to record (its before-state, what it changes); ``apply`` makes the
change from that record alone, so that a retry after a crash, which finds the change pending,
applies the very same change again. A change id already applied answers its record at once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from learning_memory.shared.contracts.curation import (
    ChangeKind,
    ChangeResponse,
    UndoResponse,
)
from learning_memory.shared.errors import NotFoundError, ValidationError
from learning_memory.shared.log import get_logger
from learning_memory.worker.curation.ids import bare
from learning_memory.worker.curation.log import Change, CurationLog, NewChange, log_path
from learning_memory.worker.curation.settle import settle_experiences, settle_memories, settle_values
from learning_memory.worker.curation.snapshots import restore
from learning_memory.worker.services import JobRun

log = get_logger(__name__)
# Changes that only set a flag: undo puts the flag back on the record as it is now.
FLAG_FIELDS: dict[str, tuple[str, ...]] = {
    "retire_value": ("retired",),
    "restore_value": ("retired",),
    "mark_wrong": ("wrong",),
    "unmark_wrong": ("wrong",),
}


def curation_log(run: JobRun) -> CurationLog:
    return CurationLog(log_path(run.services.settings.data_dir))


async def run_change(
    run: JobRun,
    change_id: str,
    kinds: tuple[ChangeKind, ...],
    prepare: Callable[[], Awaitable[NewChange]],
    apply: Callable[[Change], Awaitable[None]],
) -> ChangeResponse:
    history = curation_log(run)
    found = await history.get(change_id)
    if found is not None and found.record.kind not in kinds:
        raise ValidationError(
            f"Change id {change_id} is already used by a {found.record.kind} change: use a new id"
        )
    if found is None:
        found = await history.add(await prepare())
    if found.record.state != "pending":  # applied before (a retried job), or undone since
        return ChangeResponse(change=found.record)
    await apply(found)
    done = await history.set_state(change_id, "applied")
    log.info("curation.applied", change=change_id, kind=done.record.kind, targets=done.record.targets)
    return ChangeResponse(change=done.record)


def _ids(change: Change) -> list[str]:
    return [bare(target) for target in change.record.targets]


async def settle(run: JobRun, change: Change) -> None:
    """What follows the change's records outside the vector store, as they now are."""
    kind = change.record.item_kind
    if kind == "memory":
        await settle_memories(run, _ids(change))
    elif kind == "value":
        await settle_values(run, _ids(change))
    else:
        axes = {str(snap["collection"]).removeprefix("experiences_") for snap in change.before}
        await settle_experiences(run, _ids(change), axes)


async def undo(run: JobRun, change_id: str) -> UndoResponse:
    history = curation_log(run)
    change = await history.get(change_id)
    if change is None:
        raise NotFoundError(f"No curation change with id {change_id!r}")
    if change.record.state == "undone":
        return UndoResponse(change=change.record, already_undone=True)
    later = await history.later_in_force(change)
    if later:
        raise ValidationError(
            f"Change {change_id} cannot be undone while later changes to the same records stand: "
            f"undo {', '.join(later)} first (newest first)"
        )
    await history.set_state(change_id, "undoing")
    await restore(run, change.before, FLAG_FIELDS.get(change.record.kind, ()))
    await settle(run, change)
    done = await history.set_state(change_id, "undone")
    log.info("curation.undone", change=change_id, kind=done.record.kind, targets=done.record.targets)
    return UndoResponse(change=done.record, already_undone=False)

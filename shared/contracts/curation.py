"""Curation: what a person changes of what the server learned, each change recorded and undoable.

Every change job takes a ``change_id`` (made when the request is built, so a retried job carries
the same one: a change is applied once however often its job runs) and answers the
:class:`ChangeRecord` the curation log keeps. The log holds each change's before-state, so
:data:`UNDO` puts back exactly what was there (records, payloads and vectors).

Ids: a memory's and a value's id as the tools give them; an experience by its GHAP id or by any
of its point ids; each may carry its context prefix (``mem:``, ``val:``, ``exp:``). A change's
``targets`` name what it touched by context id (``mem:<id>``, ``val:<id>``, ``exp:<ghap_id>``),
the kept record first.

What the flags do: a *retired* value (payload ``retired: true``) stays stored but leaves
list_values' default answer, the SessionStart brief and every injection; an experience marked
*wrong* (payload ``wrong: true`` on each axis) stays stored and readable (expand_context, browsing)
but leaves context, premortem, search, fix hints and clustering.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from learning_memory.shared.contracts.context import ContextKind
from learning_memory.shared.contracts.memory import MAX_CONTENT_CHARS, Category
from learning_memory.shared.jobs import Contract, JobSpec
from learning_memory.shared.keys import Queue

ChangeKind = Literal[
    "update_memory",
    "delete_memory",
    "retire_value",
    "restore_value",
    "mark_wrong",
    "unmark_wrong",
    "merge_memories",
    "merge_experiences",
]
# pending: recorded, being applied (a crash left it so: the job's retry finishes it); applied;
# undoing: being put back; undone.
ChangeState = Literal["pending", "applied", "undoing", "undone"]
MAX_MERGED = 20
MAX_TAGS = 50


def new_change_id() -> str:
    return str(uuid.uuid4())


class ChangeRecord(Contract):
    id: str
    kind: ChangeKind
    item_kind: ContextKind
    targets: list[str]  # context ids, the kept or changed record first
    summary: str  # one line for a person
    # Per field changed: [before, after] (for a merge, the kept record's fields; "merged": the
    # records folded into it).
    diff: dict[str, list[Any]]
    state: ChangeState
    created_at: datetime
    undone_at: datetime | None = None


class ChangeResponse(Contract):
    change: ChangeRecord


class UpdateMemoryRequest(Contract):
    change_id: str = Field(default_factory=new_change_id, min_length=1, max_length=100)
    id: str
    # None: left as it is. At least one must be given.
    content: str | None = Field(default=None, min_length=1, max_length=MAX_CONTENT_CHARS)
    category: Category | None = None
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    tags: list[str] | None = Field(default=None, max_length=MAX_TAGS)


class DeleteMemoryRecordedRequest(Contract):
    change_id: str = Field(default_factory=new_change_id, min_length=1, max_length=100)
    id: str


class SetValueStateRequest(Contract):
    change_id: str = Field(default_factory=new_change_id, min_length=1, max_length=100)
    id: str
    retired: bool  # true: retire; false: restore


class MarkExperienceRequest(Contract):
    change_id: str = Field(default_factory=new_change_id, min_length=1, max_length=100)
    id: str  # GHAP id or point id
    wrong: bool  # true: mark wrong; false: restore


class MergeMemoriesRequest(Contract):
    change_id: str = Field(default_factory=new_change_id, min_length=1, max_length=100)
    keep: str
    merge: list[str] = Field(min_length=1, max_length=MAX_MERGED)  # deleted, folded into ``keep``
    # The kept memory's new content (re-embedded); None keeps its own.
    content: str | None = Field(default=None, min_length=1, max_length=MAX_CONTENT_CHARS)


class MergeExperiencesRequest(Contract):
    change_id: str = Field(default_factory=new_change_id, min_length=1, max_length=100)
    keep: str
    merge: list[str] = Field(min_length=1, max_length=MAX_MERGED)


class UndoRequest(Contract):
    change_id: str  # the change to undo


class UndoResponse(Contract):
    change: ChangeRecord  # state "undone"
    already_undone: bool  # it was undone before this call: nothing was done


class ListChangesRequest(Contract):
    limit: int = Field(default=50, ge=1, le=200)
    offset: int = Field(default=0, ge=0)
    item_kind: ContextKind | None = None
    target: str | None = None  # a context id or a bare record id: the changes that touched it


class ListChangesResponse(Contract):
    changes: list[ChangeRecord]  # newest first
    total: int  # of those matching, before limit and offset


def _spec(name: str, request: type[Any], response: type[Any] = ChangeResponse) -> JobSpec[Any, Any]:
    # Interactive: a person waits on each. The first may wait for the model to load (re-embedding).
    return JobSpec(name, request, response, Queue.INTERACTIVE, timeout_s=120)


UPDATE_MEMORY: JobSpec[UpdateMemoryRequest, ChangeResponse] = _spec("update_memory", UpdateMemoryRequest)
DELETE_MEMORY_RECORDED: JobSpec[DeleteMemoryRecordedRequest, ChangeResponse] = _spec(
    "delete_memory_recorded", DeleteMemoryRecordedRequest
)
SET_VALUE_STATE: JobSpec[SetValueStateRequest, ChangeResponse] = _spec(
    "set_value_state", SetValueStateRequest
)
MARK_EXPERIENCE: JobSpec[MarkExperienceRequest, ChangeResponse] = _spec(
    "mark_experience", MarkExperienceRequest
)
MERGE_MEMORIES: JobSpec[MergeMemoriesRequest, ChangeResponse] = _spec("merge_memories", MergeMemoriesRequest)
MERGE_EXPERIENCES: JobSpec[MergeExperiencesRequest, ChangeResponse] = _spec(
    "merge_experiences", MergeExperiencesRequest
)
UNDO_CHANGE: JobSpec[UndoRequest, UndoResponse] = _spec("undo_change", UndoRequest, UndoResponse)
LIST_CHANGES: JobSpec[ListChangesRequest, ListChangesResponse] = _spec(
    "list_changes", ListChangesRequest, ListChangesResponse
)

"""The curation forms (POST only): each change runs through the curation jobs (the same stores and
embeddings as the tools), is recorded in the curation log, and can be undone from the page it left.

A form carries a change id made when its page was drawn, so a form posted twice (a reload, a
double click) changes once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from pydantic import BaseModel
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from learning_memory.server.hooks.values_cache import refresh_values_file
from learning_memory.server.ui import params
from learning_memory.server.ui.access import same_secret
from learning_memory.server.ui.app_state import jobs, run_job, ui_state
from learning_memory.shared.contracts.curation import (
    DELETE_MEMORY_RECORDED,
    MARK_EXPERIENCE,
    MAX_MERGED,
    MAX_TAGS,
    MERGE_EXPERIENCES,
    MERGE_MEMORIES,
    SET_VALUE_STATE,
    UNDO_CHANGE,
    UPDATE_MEMORY,
    ChangeResponse,
    DeleteMemoryRecordedRequest,
    MarkExperienceRequest,
    MergeExperiencesRequest,
    MergeMemoriesRequest,
    SetValueStateRequest,
    UndoRequest,
    UpdateMemoryRequest,
    new_change_id,
)
from learning_memory.shared.contracts.memory import MAX_CONTENT_CHARS, Category
from learning_memory.shared.errors import ValidationError
from learning_memory.shared.jobs import JobSpec

MAX_FORM_BYTES = 64 * 1024


async def read_form(request: Request) -> FormData:
    """The posted fields, once the form token proves the form came from one of our pages."""
    if int(request.headers.get("content-length") or 0) > MAX_FORM_BYTES:
        raise ValidationError(f"the form is larger than {MAX_FORM_BYTES // 1024} KiB")
    form = await request.form()
    if not same_secret(params.text(form, "form_token", 200), ui_state(request).form_token):
        raise ValidationError(
            "the form is out of date (the view restarted since it was loaded): reload the page"
        )
    return form


def back(form: Mapping[str, Any], default: str, **shown: str) -> Response:
    """Back to the page the form was on (a path of this view only), saying what was done."""
    target = params.text(form, "back", 500) or default
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        parts = urlsplit(default)
    # What an earlier change said is not said again.
    kept = [(key, value) for key, value in parse_qsl(parts.query) if key not in ("notice", "undo")]
    return RedirectResponse(f"{parts.path}?{urlencode([*kept, *shown.items()])}", status_code=303)


def _change_id(form: Mapping[str, Any]) -> str:
    return params.text(form, "change_id", 100) or new_change_id()


async def _apply(
    request: Request, form: FormData, spec: JobSpec[Any, ChangeResponse], job: BaseModel, default: str
) -> Response:
    done = await run_job(request, spec, job)
    return back(form, default, notice=done.change.summary, undo=done.change.id)


def _tags(raw: str | None) -> list[str]:
    tags = [tag.strip().lstrip("#") for tag in (raw or "").split(",") if tag.strip().lstrip("#")]
    if len(tags) > MAX_TAGS:
        raise ValidationError(f"at most {MAX_TAGS} tags")
    return list(dict.fromkeys(tags))


async def edit_memory(request: Request) -> Response:
    form = await read_form(request)
    job = UpdateMemoryRequest(
        change_id=_change_id(form),
        id=request.path_params["memory_id"],
        content=params.required(form, "content", MAX_CONTENT_CHARS),
        category=params.choice(form, "category", Category),
        importance=params.fraction(form, "importance"),
        tags=_tags(params.text(form, "tags", 2000)),
    )
    return await _apply(request, form, UPDATE_MEMORY, job, "/memories")


async def memory_importance(request: Request) -> Response:
    form = await read_form(request)
    job = UpdateMemoryRequest(
        change_id=_change_id(form),
        id=request.path_params["memory_id"],
        importance=params.fraction(form, "importance"),
    )
    return await _apply(request, form, UPDATE_MEMORY, job, "/memories")


async def delete_memory(request: Request) -> Response:
    form = await read_form(request)
    job = DeleteMemoryRecordedRequest(change_id=_change_id(form), id=request.path_params["memory_id"])
    return await _apply(request, form, DELETE_MEMORY_RECORDED, job, "/memories")


async def value_state(request: Request) -> Response:
    form = await read_form(request)
    action = request.path_params["action"]
    if action not in ("retire", "restore"):
        raise ValidationError(f"a value can be retired or restored, not {action!r}")
    job = SetValueStateRequest(
        change_id=_change_id(form), id=request.path_params["value_id"], retired=action == "retire"
    )
    answer = await _apply(request, form, SET_VALUE_STATE, job, "/values")
    await _refresh_brief_values(request)
    return answer


async def _refresh_brief_values(request: Request) -> None:
    """The SessionStart brief reads the strongest values from a file the server keeps: a retired
    value leaves it now, a restored one comes back."""
    await refresh_values_file(jobs(request), ui_state(request).settings)


async def experience_mark(request: Request) -> Response:
    form = await read_form(request)
    action = request.path_params["action"]
    if action not in ("wrong", "right"):
        raise ValidationError(f"an experience can be marked wrong or right, not {action!r}")
    job = MarkExperienceRequest(
        change_id=_change_id(form), id=request.path_params["experience_id"], wrong=action == "wrong"
    )
    return await _apply(request, form, MARK_EXPERIENCE, job, "/experiences")


def _merged(form: FormData) -> tuple[str, list[str]]:
    ids = list(dict.fromkeys(str(value).strip() for value in form.getlist("ids") if str(value).strip()))
    if len(ids) < 2:
        raise ValidationError("a merge needs at least two records")
    if len(ids) > MAX_MERGED + 1:
        raise ValidationError(f"at most {MAX_MERGED + 1} records merge at once")
    keep = params.text(form, "keep", 200) or ids[0]
    if keep not in ids:
        raise ValidationError("the record kept must be one of those merged")
    return keep, [record for record in ids if record != keep]


async def merge_memories(request: Request) -> Response:
    form = await read_form(request)
    keep, merge = _merged(form)
    job = MergeMemoriesRequest(change_id=_change_id(form), keep=keep, merge=merge)
    return await _apply(request, form, MERGE_MEMORIES, job, "/audit")


async def merge_experiences(request: Request) -> Response:
    form = await read_form(request)
    keep, merge = _merged(form)
    job = MergeExperiencesRequest(change_id=_change_id(form), keep=keep, merge=merge)
    return await _apply(request, form, MERGE_EXPERIENCES, job, "/audit")


async def undo(request: Request) -> Response:
    form = await read_form(request)
    done = await run_job(request, UNDO_CHANGE, UndoRequest(change_id=request.path_params["change_id"]))
    if done.change.item_kind == "value":
        await _refresh_brief_values(request)
    said = "It was already undone." if done.already_undone else f"Undone: {done.change.summary}"
    return back(form, "/changes", notice=said)


ROUTES = [
    Route("/memories/{memory_id}/edit", edit_memory, methods=["POST"]),
    Route("/memories/{memory_id}/importance", memory_importance, methods=["POST"]),
    Route("/memories/{memory_id}/delete", delete_memory, methods=["POST"]),
    Route("/memories/merge", merge_memories, methods=["POST"]),
    Route("/values/{value_id}/{action}", value_state, methods=["POST"]),
    Route("/experiences/merge", merge_experiences, methods=["POST"]),
    Route("/experiences/{experience_id}/{action}", experience_mark, methods=["POST"]),
    Route("/changes/{change_id}/undo", undo, methods=["POST"]),
]

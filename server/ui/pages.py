"""The pages: every GET only reads (jobs that search or list, the journal read without its lock)."""

from __future__ import annotations

import asyncio
from typing import Any, get_args

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from learning_memory.server.ui import params
from learning_memory.server.ui.app_state import run_job, ui_state
from learning_memory.server.ui.render import error_page, page
from learning_memory.server.value_suggestions import load_suggestions, suggestions_path
from learning_memory.shared.contracts.browse import (
    AUDIT,
    BROWSE_EXPERIENCES,
    OVERVIEW,
    AuditRequest,
    BrowseExperiencesRequest,
    OverviewRequest,
)
from learning_memory.shared.contracts.code import LIST_PROJECTS, ListProjectsRequest
from learning_memory.shared.contracts.context import EXPAND_CONTEXT, MAX_EXPAND_IDS, ExpandContextRequest
from learning_memory.shared.contracts.curation import LIST_CHANGES, ListChangesRequest
from learning_memory.shared.contracts.experiences import (
    AXES,
    Axis,
    Domain,
    OutcomeStatus,
    Source,
)
from learning_memory.shared.contracts.learning import (
    GET_CLUSTERS,
    LIST_VALUES,
    GetClustersRequest,
    ListValuesRequest,
)
from learning_memory.shared.contracts.memory import (
    CATEGORIES,
    LIST_MEMORIES,
    RETRIEVE_MEMORIES,
    Category,
    ListMemoriesRequest,
    RetrieveMemoriesRequest,
)
from learning_memory.shared.errors import LmsError, NotFoundError, ValidationError

PAGE_SIZE = 50
MAX_EVIDENCE = 60  # a value's members shown with it


async def overview(request: Request) -> Response:
    project = params.text(request.query_params, "project", 300)
    found = await run_job(request, OVERVIEW, OverviewRequest(project=project, sessions=10, injections=20))
    entries = ui_state(request).journal.entries()
    return page(
        request,
        "overview.html",
        found=found,
        project=project or "",
        ghap_total=len(entries),
        ghap_latest=entries[:5],
        journal_root=ui_state(request).journal.root,
    )


async def ghap(request: Request) -> Response:
    offset = params.number(request.query_params, "offset", 0, 0, 10**6)
    entries = ui_state(request).journal.entries()
    captured = await run_job(request, BROWSE_EXPERIENCES, BrowseExperiencesRequest(source="auto", limit=10))
    return page(
        request,
        "ghap.html",
        captured=captured,
        entries=entries[offset : offset + PAGE_SIZE],
        total=len(entries),
        offset=offset,
        page_size=PAGE_SIZE,
        journal_root=ui_state(request).journal.root,
    )


async def ghap_entry(request: Request) -> Response:
    ghap_id = request.path_params["ghap_id"]
    entry = ui_state(request).journal.entry(ghap_id)
    if entry is None:
        raise NotFoundError(f"No GHAP entry {ghap_id!r} in the journal {ui_state(request).journal.root}")
    return page(request, "ghap_entry.html", entry=entry)


async def experiences(request: Request) -> Response:
    query = request.query_params
    search = params.text(query, "q", 1000)
    browse = BrowseExperiencesRequest(
        query=search,
        axis=params.choice(query, "axis", Axis) or "full",
        outcome=params.choice(query, "outcome", OutcomeStatus),
        domain=params.choice(query, "domain", Domain),
        source=params.choice(query, "source", Source),
        project=params.text(query, "project", 300),
        created_from=params.day(query, "from"),
        created_to=params.day(query, "to"),
        offset=params.number(query, "offset", 0, 0, 100_000),
        limit=PAGE_SIZE,
    )
    found = await run_job(request, BROWSE_EXPERIENCES, browse)
    return page(
        request,
        "experiences.html",
        found=found,
        request_=browse,
        filters={k: v for k, v in query.items() if k != "offset" and k != "notice"},
        q=search or "",
        axes=AXES,
        outcomes=get_args(OutcomeStatus),
        domains=get_args(Domain),
        sources=get_args(Source),
        page_size=PAGE_SIZE,
    )


async def clusters(request: Request) -> Response:
    axis: Axis = params.choice(request.query_params, "axis", Axis) or "full"
    try:
        found = await run_job(request, GET_CLUSTERS, GetClustersRequest(axis=axis))
        shortage = None
    except LmsError as exc:
        if exc.type != "insufficient_data":
            raise
        found, shortage = None, exc.message
    return page(request, "clusters.html", axis=axis, axes=AXES, found=found, shortage=shortage)


async def values(request: Request) -> Response:
    axis: Axis | None = params.choice(request.query_params, "axis", Axis)
    retired = params.text(request.query_params, "retired", 10) is not None
    offset = params.number(request.query_params, "offset", 0, 0, 10**6)
    # One more than a page: whether there is a next one.
    found = await run_job(
        request,
        LIST_VALUES,
        ListValuesRequest(axis=axis, limit=PAGE_SIZE + 1, offset=offset, include_retired=retired),
    )
    # Values imported from another project that did not validate here: shown, never counted.
    suggested = await asyncio.to_thread(load_suggestions, suggestions_path(ui_state(request).settings))
    return page(
        request,
        "values.html",
        values=found.results[:PAGE_SIZE],
        more=len(found.results) > PAGE_SIZE,
        offset=offset,
        page_size=PAGE_SIZE,
        axis=axis or "",
        axes=AXES,
        retired=retired,
        suggested=[kept for kept in suggested if axis is None or kept.suggestion.axis == axis],
    )


async def value_detail(request: Request) -> Response:
    """A value and the experiences it was validated against: the evidence for it."""
    value_id = request.path_params["value_id"]
    found = await run_job(
        request,
        LIST_VALUES,
        ListValuesRequest(ids=[value_id], include_retired=True, include_members=True),
    )
    value = next(iter(found.results), None)
    if value is None:
        raise NotFoundError(f"No value {value_id!r}: the Values page lists them")
    shown = value.member_ghap_ids[:MAX_EVIDENCE]
    members: list[dict[str, Any]] = []
    for start in range(0, len(shown), MAX_EXPAND_IDS):
        ids = [f"exp:{ghap_id}" for ghap_id in shown[start : start + MAX_EXPAND_IDS]]
        expanded = await run_job(request, EXPAND_CONTEXT, ExpandContextRequest(ids=ids))
        members += [{"id": item.id.removeprefix("exp:"), **item.record} for item in expanded.items]
    return page(
        request, "value.html", value=value, members=members, more=len(value.member_ghap_ids) - len(shown)
    )


async def changes(request: Request) -> Response:
    offset = params.number(request.query_params, "offset", 0, 0, 10**6)
    found = await run_job(request, LIST_CHANGES, ListChangesRequest(limit=PAGE_SIZE, offset=offset))
    return page(request, "changes.html", found=found, offset=offset, page_size=PAGE_SIZE)


async def memories(request: Request) -> Response:
    query = request.query_params
    search = params.text(query, "q", 1000)
    category: Category | None = params.choice(query, "category", Category)
    tag = params.text(query, "tag", 100)
    offset = params.number(query, "offset", 0, 0, 10**6)
    total: int | None = None
    if search:
        found = await run_job(
            request, RETRIEVE_MEMORIES, RetrieveMemoriesRequest(query=search, limit=50, category=category)
        )
        rows: list[Any] = [(hit, hit.score) for hit in found.results]
    else:
        listed = await run_job(
            request,
            LIST_MEMORIES,
            ListMemoriesRequest(category=category, tags=[tag] if tag else [], limit=PAGE_SIZE, offset=offset),
        )
        rows, total = [(memory, None) for memory in listed.results], listed.total
    return page(
        request,
        "memories.html",
        rows=rows,
        total=total,
        q=search or "",
        category=category or "",
        categories=CATEGORIES,
        tag=tag or "",
        offset=offset,
        page_size=PAGE_SIZE,
    )


async def audit(request: Request) -> Response:
    query = request.query_params
    found = await run_job(
        request,
        AUDIT,
        AuditRequest(
            project=params.text(query, "project", 300), limit=params.number(query, "limit", 20, 1, 200)
        ),
    )
    return page(request, "audit.html", found=found)


async def code(request: Request) -> Response:
    found = await run_job(request, LIST_PROJECTS, ListProjectsRequest())
    return page(request, "code.html", projects=found.projects)


async def not_found(request: Request) -> Response:
    raise NotFoundError(f"No page at {request.url.path}")


async def not_found_handler(request: Request, exc: Exception) -> Response:
    return error_page(request, NotFoundError(f"No page at {request.url.path}"))


async def not_allowed_handler(request: Request, exc: Exception) -> Response:
    return error_page(
        request,
        ValidationError(
            f"{request.method} is not how {request.url.path} is used: "
            "the pages read with GET, the forms change with POST"
        ),
    )


ROUTES = [
    Route("/", overview),
    Route("/ghap", ghap),
    Route("/ghap/{ghap_id}", ghap_entry),
    Route("/experiences", experiences),
    Route("/clusters", clusters),
    Route("/values", values),
    Route("/values/{value_id}", value_detail),
    Route("/memories", memories),
    Route("/audit", audit),
    Route("/changes", changes),
    Route("/code", code),
]

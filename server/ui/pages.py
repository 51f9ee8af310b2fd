"""The pages: every GET only reads (jobs that search or list, the journal read without its lock)."""

from __future__ import annotations

import asyncio
from typing import Any, get_args

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from learning_memory.server.ui import params
from learning_memory.server.ui.app_state import run_job, ui_state
from learning_memory.server.ui.render import page
from learning_memory.shared.contracts.code import LIST_PROJECTS, ListProjectsRequest
from learning_memory.shared.contracts.experiences import (
    AXES,
    SEARCH_EXPERIENCES,
    Axis,
    Domain,
    OutcomeStatus,
    SearchExperiencesRequest,
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
from learning_memory.shared.errors import LmsError, NotFoundError

PAGE_SIZE = 50


async def overview(request: Request) -> Response:
    memories, values, projects = await asyncio.gather(
        run_job(request, LIST_MEMORIES, ListMemoriesRequest(limit=5, offset=0)),
        run_job(request, LIST_VALUES, ListValuesRequest(limit=5)),
        run_job(request, LIST_PROJECTS, ListProjectsRequest()),
    )
    entries = ui_state(request).journal.entries()
    return page(
        request,
        "overview.html",
        memories=memories,
        values=values,
        projects=projects.projects,
        ghap_total=len(entries),
        ghap_latest=entries[:5],
        journal_root=ui_state(request).journal.root,
    )


async def ghap(request: Request) -> Response:
    offset = params.number(request.query_params, "offset", 0, 0, 10**6)
    entries = ui_state(request).journal.entries()
    return page(
        request,
        "ghap.html",
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
    axis: Axis = params.choice(query, "axis", Axis) or "full"
    outcome: OutcomeStatus | None = params.choice(query, "outcome", OutcomeStatus)
    domain: Domain | None = params.choice(query, "domain", Domain)
    hits: list[Any] = []
    if search:
        found = await run_job(
            request,
            SEARCH_EXPERIENCES,
            SearchExperiencesRequest(query=search, axis=axis, outcome=outcome, domain=domain, limit=50),
        )
        hits = found.results
    return page(
        request,
        "experiences.html",
        hits=hits,
        q=search or "",
        axis=axis,
        axes=AXES,
        outcome=outcome or "",
        domain=domain or "",
        outcomes=get_args(OutcomeStatus),
        domains=get_args(Domain),
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
    found = await run_job(request, LIST_VALUES, ListValuesRequest(axis=axis, limit=100))
    return page(request, "values.html", values=found.results, axis=axis or "", axes=AXES)


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


async def code(request: Request) -> Response:
    found = await run_job(request, LIST_PROJECTS, ListProjectsRequest())
    return page(request, "code.html", projects=found.projects)


async def not_found(request: Request) -> Response:
    raise NotFoundError(f"No page at {request.url.path}")


async def not_found_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return await not_found(request)


ROUTES = [
    Route("/", overview),
    Route("/ghap", ghap),
    Route("/ghap/{ghap_id}", ghap_entry),
    Route("/experiences", experiences),
    Route("/clusters", clusters),
    Route("/values", values),
    Route("/memories", memories),
    Route("/code", code),
]

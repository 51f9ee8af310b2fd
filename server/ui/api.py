"""JSON for what the pages draw or refresh in the browser: a cluster's members (the map's side
panel) and the code page's live progress."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from learning_memory.server.ui import params
from learning_memory.server.ui.app_state import run_job
from learning_memory.shared.contracts.code import LIST_PROJECTS, ListProjectsRequest
from learning_memory.shared.contracts.learning import (
    GET_CLUSTER_MEMBERS,
    GetClusterMembersRequest,
    parse_cluster_id,
)


async def cluster_members(request: Request) -> Response:
    axis, label = parse_cluster_id(request.path_params["cluster_id"])
    limit = params.number(request.query_params, "limit", 50, 1, 100)
    found = await run_job(
        request, GET_CLUSTER_MEMBERS, GetClusterMembersRequest(axis=axis, label=label, limit=limit)
    )
    return JSONResponse(found.model_dump(mode="json"))


async def code_projects(request: Request) -> Response:
    found = await run_job(request, LIST_PROJECTS, ListProjectsRequest())
    return JSONResponse(found.model_dump(mode="json"))


ROUTES = [
    Route("/api/clusters/{cluster_id}/members", cluster_members),
    Route("/api/code", code_projects),
]

"""JSON for what the pages draw or refresh in the browser: a cluster's members (the map's side
panel) and the code page's live progress."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from learning_memory.server.ui import params
from learning_memory.server.ui.app_state import run_job
from learning_memory.shared.contracts.browse import CLUSTER_MAP, ClusterMapRequest
from learning_memory.shared.contracts.code import LIST_PROJECTS, ListProjectsRequest
from learning_memory.shared.contracts.experiences import Axis
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


async def cluster_map(request: Request) -> Response:
    """The worker's layout, in columns: a few thousand points cost the browser one parse."""
    axis = params.choice({"axis": request.path_params["axis"]}, "axis", Axis)
    project = params.text(request.query_params, "project", 300)
    found = await run_job(request, CLUSTER_MAP, ClusterMapRequest(axis=axis, project=project))
    cluster_of = {cluster.label: cluster.cluster_id for cluster in found.clusters}
    points = found.points
    return JSONResponse(
        {
            "axis": found.axis,
            "clustering_id": found.clustering_id,
            "points": {
                "x": [round(p.x, 4) for p in points],
                "y": [round(p.y, 4) for p in points],
                "label": [p.label for p in points],
                "cluster_id": [cluster_of.get(p.label) for p in points],
                "goal": [p.goal for p in points],
                "outcome": [p.outcome for p in points],
                "source": [p.source for p in points],
                "ghap_id": [p.ghap_id for p in points],
            },
            "clusters": [
                {
                    "cluster_id": c.cluster_id,
                    "label": c.label,
                    "size": c.size,
                    "value": c.values[0].model_dump(mode="json") if c.values else None,
                }
                for c in found.clusters
            ],
            "noise_count": found.noise_count,
            "layout_seconds": found.layout_seconds,
            "cached": found.cached,
        }
    )


async def code_projects(request: Request) -> Response:
    found = await run_job(request, LIST_PROJECTS, ListProjectsRequest())
    return JSONResponse(found.model_dump(mode="json"))


ROUTES = [
    Route("/api/clusters/{axis}/map", cluster_map),
    Route("/api/clusters/{cluster_id}/members", cluster_members),
    Route("/api/code", code_projects),
]
